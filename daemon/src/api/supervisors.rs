//! The supervisors heard from, kept in the API itself (an addition of ours,
//! `docs/reference/http.md`): each claim or heartbeat accepted, and each
//! `POST /supervisors/{name}/stop`, for `GET /supervisors`, `GET /tokens/{id}/why`,
//! the watch stream and the outbox gauge of `GET /metrics`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stateous_shared::refusal::Refusal;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::{StoppedSupervisor, SupervisorList, SupervisorView};
use tokio::sync::watch as signal;

use super::Api;

/// One supervisor as its claims and heartbeats showed it.
#[derive(Debug, Clone)]
struct Seen {
    states: Vec<String>,
    outbox: Option<u64>,
    /// Microseconds.
    last_seen: i64,
    /// When it said it stopped (microseconds), if it has not been heard from since.
    stopped: Option<i64>,
}

/// How many supervisors that said they stopped are kept (the most recent), so
/// that names that come and go do not grow the list without end.
const STOPPED_KEPT: usize = 32;

/// The supervisors this control plane heard from since it started, by name, and
/// when those that said they stopped did. Kept in memory: after a restart a
/// supervisor shows again at its next heartbeat.
#[derive(Debug, Clone)]
pub struct SupervisorsSeen {
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    /// Counts the changes a watcher is told of: a new supervisor, new states, a
    /// new outbox depth (not each heartbeat's time). A channel, so that a watch
    /// stream waiting for news wakes at a change.
    changes: Arc<signal::Sender<u64>>,
}

impl Default for SupervisorsSeen {
    fn default() -> SupervisorsSeen {
        SupervisorsSeen {
            seen: Arc::default(),
            changes: Arc::new(signal::Sender::new(0)),
        }
    }
}

impl SupervisorsSeen {
    /// The running supervisors' outbox depths (of those that sent one) and how
    /// many supervisors run, for the gauges of `GET /metrics`.
    pub fn outboxes(&self) -> (Vec<(String, u64)>, usize) {
        let seen = self.seen.lock().map(|s| s.clone()).unwrap_or_default();
        let running: Vec<(&String, &Seen)> =
            seen.iter().filter(|(_, s)| s.stopped.is_none()).collect();
        let outbox = running
            .iter()
            .filter_map(|(name, s)| Some(((*name).clone(), s.outbox?)))
            .collect();
        (outbox, running.len())
    }

    /// A claim or heartbeat from `name` at `now` (microseconds): the states of a
    /// claim (a heartbeat gives `None` and keeps them), the outbox depth it sent.
    pub fn heard(&self, name: &str, states: Option<&[String]>, outbox: Option<u64>, now: i64) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let mut changed = !seen.contains_key(name);
        let entry = seen.entry(name.to_string()).or_insert_with(|| Seen {
            states: Vec::new(),
            outbox: None,
            last_seen: now,
            stopped: None,
        });
        changed |= entry.stopped.take().is_some();
        if let Some(states) = states {
            changed |= entry.states != states;
            entry.states = states.to_vec();
        }
        if outbox.is_some() {
            changed |= entry.outbox != outbox;
            entry.outbox = outbox;
        }
        entry.last_seen = now;
        drop(seen);
        if changed {
            self.changes.send_modify(|count| *count += 1);
        }
    }

    /// `name` said it stopped at `now` (microseconds): it leaves the list of
    /// those running at once, is kept as stopped (the [`STOPPED_KEPT`] most
    /// recent are), and a watcher is told. A later claim or heartbeat of that
    /// name lists it as running again. A name never heard from, or one already
    /// stopped, changes nothing.
    pub fn gone(&self, name: &str, now: i64) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let Some(entry) = seen.get_mut(name).filter(|s| s.stopped.is_none()) else {
            return;
        };
        entry.stopped = Some(now);
        let mut stopped: Vec<(i64, String)> = seen
            .iter()
            .filter_map(|(name, s)| Some((s.stopped?, name.clone())))
            .collect();
        if stopped.len() > STOPPED_KEPT {
            stopped.sort();
            for (_, name) in &stopped[..stopped.len() - STOPPED_KEPT] {
                seen.remove(name);
            }
        }
        drop(seen);
        self.changes.send_modify(|count| *count += 1);
    }

    /// How many changes there were so far.
    pub fn changes(&self) -> u64 {
        *self.changes.borrow()
    }

    /// A receiver that wakes at each change.
    pub fn subscribe(&self) -> signal::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The supervisors as `GET /supervisors` lists them, with the tasks each
    /// holds as `control` counts them.
    pub async fn listed(
        &self,
        control: &crate::control::Control,
    ) -> Result<SupervisorList, Refusal> {
        let running = control.running_by_supervisor().await?;
        Ok(SupervisorList {
            supervisors: self.list(&running),
            stopped: self.stopped(),
        })
    }

    fn stopped(&self) -> Vec<StoppedSupervisor> {
        let Ok(seen) = self.seen.lock() else {
            return Vec::new();
        };
        seen.iter()
            .filter_map(|(name, s)| {
                Some(StoppedSupervisor {
                    name: name.clone(),
                    states: s.states.clone(),
                    stopped_at: iso(from_micros(s.stopped?)),
                })
            })
            .collect()
    }

    fn list(&self, running: &BTreeMap<String, i64>) -> Vec<SupervisorView> {
        let Ok(seen) = self.seen.lock() else {
            return Vec::new();
        };
        seen.iter()
            .filter(|(_, s)| s.stopped.is_none())
            .map(|(name, s)| SupervisorView {
                name: name.clone(),
                states: s.states.clone(),
                running: running.get(name).copied().unwrap_or(0),
                outbox: s.outbox,
                last_seen: iso(from_micros(s.last_seen)),
            })
            .collect()
    }
}

/// The `outbox` depth a claim or heartbeat body carries, if it is a whole number
/// (read from the body's object as the route parsed it, not parsed again).
pub fn outbox_of(body: &impl super::fields::Fields) -> Option<u64> {
    body.field("outbox")?.as_u64()
}

impl Api {
    /// `POST /supervisors/{name}/stop`: the supervisor stopped, so it is no longer
    /// listed as running, counted or named as serving a state, but as stopped
    /// now. 204 whether or not it was listed, so that a supervisor may say it
    /// twice; a name no supervisor can have is refused as a claim's would be.
    pub(super) fn supervisor_stopped(&self, name: String) -> Result<super::Answer, Refusal> {
        let name = crate::validated::Supervisor::new(name)?;
        let now = self.control.options().clock.now();
        self.seen.gone(name.as_str(), now);
        Ok(super::no_content())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supervisor_that_says_it_stopped_leaves_the_list_and_wakes_a_watcher() {
        let seen = SupervisorsSeen::default();
        seen.heard("box", Some(&["coding".to_string()]), Some(2), 0);
        seen.heard("vm", Some(&["coding".to_string()]), None, 0);
        let before = seen.changes();
        seen.gone("vm", 3_000_000);
        assert_eq!(seen.changes(), before + 1);
        let names: Vec<String> = seen
            .list(&BTreeMap::new())
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["box"]);
        // It is kept as stopped, with its states and when it stopped.
        let stopped = seen.stopped();
        assert_eq!(stopped.len(), 1);
        assert_eq!(
            (stopped[0].name.as_str(), stopped[0].states.as_slice()),
            ("vm", &["coding".to_string()][..])
        );
        assert_eq!(stopped[0].stopped_at, iso(from_micros(3_000_000)));
        // Said again, or by a name never heard from: nothing changes.
        seen.gone("vm", 4_000_000);
        seen.gone("nobody", 4_000_000);
        assert_eq!(seen.changes(), before + 1);
        assert_eq!(seen.stopped()[0].stopped_at, iso(from_micros(3_000_000)));
        // A later heartbeat lists it as running again.
        seen.heard("vm", None, None, 5);
        assert_eq!(seen.list(&BTreeMap::new()).len(), 2);
        assert!(seen.stopped().is_empty());
        assert_eq!(seen.changes(), before + 2);
    }

    #[test]
    fn only_the_most_recent_stopped_supervisors_are_kept() {
        let seen = SupervisorsSeen::default();
        let count = STOPPED_KEPT as i64 + 3;
        for n in 0..count {
            let name = format!("box-{n:02}");
            seen.heard(&name, None, None, 0);
            seen.gone(&name, n + 1);
        }
        let stopped = seen.stopped();
        assert_eq!(stopped.len(), STOPPED_KEPT);
        assert!(!stopped.iter().any(|s| s.name == "box-00"), "{stopped:?}");
        assert!(stopped
            .iter()
            .any(|s| s.name == format!("box-{}", count - 1)));
    }
}
