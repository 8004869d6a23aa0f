//! `GET /tokens/{id}/why`, an addition of ours (routed by [`super::routes::TABLE`]):
//! the database's facts from `Control::why`, with the supervisors heard from that
//! serve the task's state, and the sentences of `stateous_shared::why::explain`.

use stateous_shared::refusal::Refusal;
use stateous_shared::time::{parse_iso, to_micros};
use stateous_shared::why::{explain, WhyStopped, WhySupervisor};

use super::{json, Answer, Api};

impl Api {
    /// `GET /tokens/{id}/why`: the database's facts, the supervisors heard from
    /// that serve the task's state (recent: within one lease), those of them that
    /// said they stopped, and the sentences.
    pub(super) async fn why(&self, token: String) -> Result<Answer, Refusal> {
        let mut why = self.control.why(token).await?;
        let listed = self.seen.listed(&self.control).await?;
        let now = self.control.options().clock.now();
        let lease = self.control.options().lease.as_secs_f64();
        let heard = |last_seen: &str| {
            parse_iso(last_seen).map(|at| ((now - to_micros(at)).max(0)) as f64 / 1e6)
        };
        if let Some(task) = &mut why.task {
            why.supervisors = listed
                .supervisors
                .iter()
                .filter(|s| s.states.contains(&task.state))
                .filter_map(|s| {
                    heard(&s.last_seen).map(|ago| WhySupervisor {
                        name: s.name.clone(),
                        heard: ago,
                        recent: ago <= lease,
                    })
                })
                .collect();
            why.stopped = listed
                .stopped
                .iter()
                .filter(|s| s.states.contains(&task.state))
                .filter_map(|s| {
                    heard(&s.stopped_at).map(|ago| WhyStopped {
                        name: s.name.clone(),
                        stopped_at: s.stopped_at.clone(),
                        ago,
                    })
                })
                .collect();
            // A holder that said it stopped was last heard from then.
            task.holder_heard = task.holder.as_ref().and_then(|holder| {
                match listed.supervisors.iter().find(|s| &s.name == holder) {
                    Some(found) => heard(&found.last_seen),
                    None => {
                        let found = listed.stopped.iter().find(|s| &s.name == holder)?;
                        heard(&found.stopped_at)
                    }
                }
            });
        }
        why.reasons = explain(&why);
        Ok(json(200, &why))
    }
}
