//! `/notify` and `/notifications/failed` (ours, `docs/reference/http.md`,
//! "Notifications"; `docs/notifications.md`): add, list, show, pause, resume,
//! rotate, test and remove a subscription; list the dead notifications and send
//! them again. Every route needs the `admin` class (or the socket): a URL makes
//! the daemon send requests.

use stateous_shared::refusal::{Code, Refusal};

use super::parse::subscription::{new_subscription, redeliver_id};
use super::routes::NotifyRoute;
use super::{body, json, no_content, Answer, Api};

impl Api {
    /// A request of `/notify`.
    pub(super) async fn notify(&self, route: NotifyRoute, raw: &[u8]) -> Result<Answer, Refusal> {
        let control = &self.control;
        let named = |name| super::named(name, "subscription", Code::SubscriptionNotFound);
        match route {
            NotifyRoute::Add => {
                let body = new_subscription(&body::json_object(raw)?)?;
                Ok(json(201, &control.add_subscription(body).await?))
            }
            NotifyRoute::List => Ok(json(200, &control.subscriptions().await?)),
            NotifyRoute::Show(name) => Ok(json(200, &control.subscription(named(name)?).await?)),
            NotifyRoute::Pause(name) => Ok(json(
                200,
                &control.pause_subscription(named(name)?, true).await?,
            )),
            NotifyRoute::Resume(name) => Ok(json(
                200,
                &control.pause_subscription(named(name)?, false).await?,
            )),
            NotifyRoute::Rotate(name) => {
                Ok(json(200, &control.rotate_subscription(named(name)?).await?))
            }
            NotifyRoute::Test(name) => {
                Ok(json(200, &control.test_subscription(named(name)?).await?))
            }
            NotifyRoute::Redeliver(name) => {
                let id = redeliver_id(&body::json_object(raw)?)?;
                Ok(json(200, &control.redeliver(named(name)?, id).await?))
            }
            NotifyRoute::Remove(name) => {
                control.remove_subscription(named(name)?).await?;
                Ok(no_content())
            }
            NotifyRoute::Failed => Ok(json(200, &control.failed_notifications().await?)),
        }
    }
}
