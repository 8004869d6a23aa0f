//! The handlers of operating many tokens, additions of ours that the reference's
//! clients never call: `POST /tokens/bulk`, `POST /tokens/{id}/retry` and
//! `GET /tokens/{id}/why` (routed by [`super::routes::TABLE`]).

use stateous_shared::operate::why::{explain, WhyStopped, WhySupervisor};
use stateous_shared::refusal::Refusal;
use stateous_shared::time::{parse_iso, to_micros};

use super::access::{self, Caller};
use super::{body, inputs, json, Answer, Api};

impl Api {
    /// `POST /tokens/bulk`.
    /// A prune's `archive` needs a caller that may write files
    /// ([`access::may_write_files`]).
    pub(super) async fn bulk(&self, raw: &[u8], caller: &Caller) -> Result<Answer, Refusal> {
        let input = inputs::operate::bulk(&body::json_object(raw)?)?;
        if input.archive.is_some() {
            access::may_write_files(caller)?;
        }
        Ok(json(200, &self.control.bulk(input).await?))
    }

    /// `POST /tokens/{id}/retry`.
    pub(super) async fn retry(&self, token: String, raw: &[u8]) -> Result<Answer, Refusal> {
        let input = inputs::operate::retry(token, &body::json_object(raw)?)?;
        Ok(json(200, &self.control.retry(input).await?))
    }

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
