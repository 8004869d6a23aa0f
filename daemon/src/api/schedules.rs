//! `/schedules` (ours, `docs/reference/http.md`, "Schedules"): add, list, show,
//! pause, resume, remove and trigger a schedule. Adding, changing and triggering
//! start tokens, so they need the `operate` class, as a start does.

use stateous_shared::refusal::{Code, Refusal};

use super::parse::schedule::new_schedule;
use super::routes::ScheduleRoute;
use super::{body, json, no_content, Answer, Api};

impl Api {
    /// A request of `/schedules`.
    pub(super) async fn schedule(
        &self,
        route: ScheduleRoute,
        raw: &[u8],
    ) -> Result<Answer, Refusal> {
        let control = &self.control;
        let named = |name| super::named(name, "schedule", Code::ScheduleNotFound);
        match route {
            ScheduleRoute::Add => {
                let body = new_schedule(&body::json_object(raw)?)?;
                let (view, created) = control.add_schedule(body).await?;
                Ok(json(if created { 201 } else { 200 }, &view))
            }
            ScheduleRoute::List => Ok(json(200, &control.schedules().await?)),
            ScheduleRoute::Show(name) => Ok(json(200, &control.schedule(named(name)?).await?)),
            ScheduleRoute::Pause(name) => {
                Ok(json(200, &control.pause_schedule(named(name)?).await?))
            }
            ScheduleRoute::Resume(name) => {
                Ok(json(200, &control.resume_schedule(named(name)?).await?))
            }
            ScheduleRoute::Remove(name) => {
                control.remove_schedule(named(name)?).await?;
                Ok(no_content())
            }
            ScheduleRoute::Trigger(name) => {
                Ok(json(200, &control.trigger_schedule(named(name)?).await?))
            }
        }
    }
}
