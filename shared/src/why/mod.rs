//! "Why is this token here?" (`docs/reference/http.md`): the answer of `GET /tokens/{id}/why`, and
//! [`explain`], which turns its facts into the sentences an operator reads first.
//! The daemon gathers the facts (`daemon/src/engine/why.rs`), the CLI prints them
//! (`stateous token why ID`), and the TUI's token pane shows them.

use serde::{Deserialize, Serialize};

use crate::durations::span;
use crate::history::named;
use crate::pyrepr::repr_str;
use crate::watch::HeldEvent;
use crate::wire::{HistoryEntry, TokenView};

/// Everything that says why a token is where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Why {
    /// The token.
    pub token: TokenView,
    /// Whole seconds since it entered its state.
    pub moved: i64,
    /// The reasons, most telling first ([`explain`] of the facts below).
    pub reasons: Vec<String>,
    /// The state's timeout setting (`10m`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Each transition out of the state.
    #[serde(default)]
    pub transitions: Vec<WhyTransition>,
    /// The pending timers: the state's timeout and the routines' timers.
    #[serde(default)]
    pub timers: Vec<WhyTimer>,
    /// The task of the state, if one is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<WhyTask>,
    /// The supervisors heard from that serve the task's state.
    #[serde(default)]
    pub supervisors: Vec<WhySupervisor>,
    /// The supervisors that served the task's state and said they stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<WhyStopped>,
    /// The events held while it is paused, in order of arrival.
    #[serde(default)]
    pub held: Vec<HeldEvent>,
    /// The last event refused since it entered its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<HistoryEntry>,
    /// For a failed token: the entry that failed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<HistoryEntry>,
    /// In a parallel state: its children of this visit.
    #[serde(default)]
    pub children: Vec<WhyChild>,
    /// In a parallel state: the join's progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<WhyJoin>,
    /// Ours: what it used and its budget, when it reported usage or has a budget
    /// (`docs/concepts/budgets.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::usage::TokenBudget>,
    /// Ours: what its queued task waits for among the limits on claims and its
    /// retry policy's pause, one sentence each (`waiting for a slot of coding for
    /// ctx['repo'] = 'acme': 1 of 1 held by box-2, task 17`; `docs/limits.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

/// One transition out of the token's state, and its guard on the current context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyTransition {
    /// The event.
    pub event: String,
    /// Where it leads (`__end__` for END).
    pub to: String,
    /// The guard, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// True for `otherwise`: taken when no guard of the event holds.
    #[serde(default)]
    pub otherwise: bool,
    /// The guard's value on the current context; none when it has no guard, or
    /// when its guard reads the event's payload (then only the event decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<bool>,
    /// Whether the guard reads the event's payload (or a join's branches).
    #[serde(default)]
    pub reads_payload: bool,
}

/// One pending timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyTimer {
    /// The event it fires.
    pub event: String,
    /// `timeout` (the state's) or `timer` (a routine's).
    pub kind: String,
    /// When it is due, ISO 8601 in UTC; for a paused token, when it would be due if
    /// the token were resumed now (its timers stand still while it is paused).
    pub due_at: String,
    /// Seconds left (0 once due); while the token is paused, the time that will be
    /// left when it is resumed.
    pub left: f64,
    /// True while the token is paused: the timer stands still.
    #[serde(default)]
    pub frozen: bool,
}

/// The open task of the token's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyTask {
    /// The task's id.
    pub task: i64,
    /// The state as supervisors claim it (`<workflow>/<state>` for a child's).
    pub state: String,
    /// `queued`, `claimed` or `waiting`.
    pub status: String,
    /// How many times it was claimed.
    pub attempt: i64,
    /// How many more attempts it gets after the current (or next) one.
    pub retries_left: i64,
    /// The supervisor that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Seconds of lease left, while claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_left: Option<f64>,
    /// Seconds since the holder's last claim or heartbeat reached this control
    /// plane; none when it has not been heard from since it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_heard: Option<f64>,
    /// Seconds since this attempt's lease was last set, by its claim or a
    /// heartbeat naming its task, while claimed (ours). Older than
    /// `holder_heard`: the holder's name was heard but this attempt was not
    /// renewed (a supervisor of that name restarted after a crash does not hold
    /// it, and its lease runs out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_renewed: Option<f64>,
}

/// A supervisor that serves the task's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhySupervisor {
    /// Its name.
    pub name: String,
    /// Seconds since its last claim or heartbeat.
    pub heard: f64,
    /// Whether that is within one lease: a supervisor quiet for longer holds no
    /// task and asks for none.
    pub recent: bool,
}

/// A supervisor that served the task's state and said it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyStopped {
    /// Its name.
    pub name: String,
    /// When it said it stopped, ISO 8601 in UTC.
    pub stopped_at: String,
    /// Seconds since then.
    pub ago: f64,
}

/// A child of a parallel state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyChild {
    /// The child's id.
    pub token: String,
    /// Its workflow.
    pub workflow: String,
    /// Its state.
    pub state: String,
    /// Its status.
    pub status: String,
}

/// The progress of a parallel state's join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhyJoin {
    /// `all` or `any`.
    pub join: String,
    /// How many children ended (completed or failed).
    pub ended: i64,
    /// How many children the state started.
    pub children: i64,
}

/// The sentences that say why the token is where it is, most telling first.
pub fn explain(why: &Why) -> Vec<String> {
    let token = &why.token;
    let state = repr_str(named(&token.state));
    let mut reasons = Vec::new();
    match token.status.as_str() {
        "completed" => reasons.push("it completed; nothing moves it any more".to_string()),
        "cancelled" => reasons.push("it was cancelled; nothing moves it any more".to_string()),
        "failed" => {
            let what = why
                .failure
                .as_ref()
                .and_then(|entry| entry.data.get("reason"))
                .and_then(|reason| reason.as_str())
                .unwrap_or("no reason was recorded");
            reasons.push(format!(
                "it failed in {state}: {what}; a retry enters {state} again \
                 (stateous token retry {})",
                token.token
            ));
        }
        "paused" => reasons.push(match why.held.len() {
            0 => "it is paused: nothing moves it until it is resumed".to_string(),
            1 => "it is paused: 1 event is held until it is resumed".to_string(),
            n => format!("it is paused: {n} events are held until it is resumed"),
        }),
        _ => {}
    }
    if matches!(token.status.as_str(), "completed" | "cancelled" | "failed") {
        return reasons;
    }
    if let Some(sentence) = budget_sentence(why) {
        reasons.push(sentence);
    }
    if let Some(join) = &why.join {
        reasons.push(join_sentence(join));
    }
    if let Some(task) = &why.task {
        let held_back = !why.limits.is_empty();
        reasons.push(task_sentence(
            task,
            &why.supervisors,
            &why.stopped,
            held_back,
        ));
    }
    reasons.extend(why.limits.iter().cloned());
    reasons.extend(guard_sentences(why));
    for timer in &why.timers {
        let when = if timer.frozen {
            format!("stands still while paused, {} left", span(timer.left))
        } else if timer.left <= 0.0 {
            "is due: the clock fires it at its next tick".to_string()
        } else {
            format!("fires in {}", span(timer.left))
        };
        let what = if timer.kind == "timeout" {
            format!("its timeout in {state}")
        } else {
            format!("a routine's timer for {}", repr_str(&timer.event))
        };
        reasons.push(format!("{what} {when}"));
    }
    if reasons.is_empty() {
        reasons.push(format!(
            "it waits in {state} for an event: no task, timer or child is open"
        ));
    }
    reasons
}

/// Ours: `it is over its budget: cost_usd 5.12 of 5; ...` for a token whose usage
/// is over its budget; a paused one is not resumed until the budget is raised.
fn budget_sentence(why: &Why) -> Option<String> {
    let budget = why.budget.as_ref().filter(|b| !b.over.is_empty())?;
    let over: Vec<String> = budget
        .over
        .iter()
        .map(|name| {
            let amount = |object: &crate::wire::Object| {
                object
                    .get(name)
                    .and_then(serde_json::Value::as_f64)
                    .map_or_else(|| "?".to_string(), crate::usage::shown)
            };
            format!(
                "{name} {} of {}",
                amount(&budget.usage),
                amount(&budget.budget)
            )
        })
        .collect();
    let first = &budget.over[0];
    let then = if why.token.status == "paused" {
        "it stays paused until its budget is raised"
    } else {
        "its next usage report pauses it"
    };
    Some(format!(
        "it is over budget: {}; {then} (stateous token budget {} {first}=N, then resume it)",
        over.join(", "),
        why.token.token
    ))
}

fn join_sentence(join: &WhyJoin) -> String {
    let ended = join.ended;
    if join.join == "any" {
        return format!(
            "it waits for its children: the join 'any' moves it when the first of {} ends, \
             and {ended} ended",
            join.children
        );
    }
    format!(
        "it waits for its children: the join 'all' moves it when all {} have ended, \
         and {ended} ended",
        join.children
    )
}

/// `1 retry left`, `2 retries left`.
pub fn retries_left(count: i64) -> String {
    match count {
        1 => "1 retry left".to_string(),
        n => format!("{n} retries left"),
    }
}

/// The sentence of a token's task; `held_back`: a limit or a retry policy's
/// pause keeps the queued task from being claimed (its sentences follow).
fn task_sentence(
    task: &WhyTask,
    supervisors: &[WhySupervisor],
    stopped: &[WhyStopped],
    held_back: bool,
) -> String {
    let id = task.task;
    let state = repr_str(&task.state);
    let retries = retries_left(task.retries_left);
    match task.status.as_str() {
        "claimed" => {
            let holder = task.holder.as_deref().unwrap_or("a supervisor");
            // A renewal older than the holder's last word by a second or more
            // is said: the name may be another process's now.
            let renewed = match (task.lease_renewed, task.holder_heard) {
                (Some(renewed), Some(heard)) if renewed >= heard + 1.0 => {
                    format!(" and was last renewed {} ago", span(renewed))
                }
                _ => String::new(),
            };
            let lease = match task.lease_left {
                Some(left) if left > 0.0 => format!("its lease ends in {}{renewed}", span(left)),
                _ => "its lease is over: the clock ends the attempt at its next tick".to_string(),
            };
            let heard = match task.holder_heard {
                Some(ago) => format!("{holder} was last heard from {} ago", span(ago)),
                None => {
                    format!("{holder} has not been heard from since this control plane started")
                }
            };
            format!(
                "its task {id} is being worked on by {holder} (attempt {}, {retries}); \
                 {lease}; {heard}",
                task.attempt
            )
        }
        "waiting" => format!(
            "its task {id} waits: the routine said the work goes on outside, and an event \
             moves the token on"
        ),
        _ => {
            let recent: Vec<&WhySupervisor> = supervisors.iter().filter(|s| s.recent).collect();
            let quiet_last = supervisors
                .iter()
                .min_by(|a, b| a.heard.total_cmp(&b.heard));
            // A supervisor that said it stopped more recently than any other was
            // heard from is the truest thing to say.
            let stopped_last = stopped.iter().min_by(|a, b| a.ago.total_cmp(&b.ago));
            if let Some(first) = recent.first() {
                let then = if held_back {
                    "but the task is held back, as said below"
                } else {
                    "so the task waits its turn"
                };
                format!(
                    "its task {id} is queued ({retries}); {} serves {state} (heard from {} ago), \
                     {then}",
                    first.name,
                    span(first.heard)
                )
            } else if let Some(last) =
                stopped_last.filter(|last| quiet_last.is_none_or(|quiet| last.ago < quiet.heard))
            {
                format!(
                    "its task {id} is queued, and no supervisor serves {state} now: {} \
                     stopped at {} ({} ago)",
                    last.name,
                    last.stopped_at,
                    span(last.ago)
                )
            } else if let Some(last) = quiet_last {
                format!(
                    "its task {id} is queued, and no supervisor has asked for {state} tasks \
                     in {} ({} was last heard from then)",
                    span(last.heard),
                    last.name
                )
            } else {
                format!(
                    "its task {id} is queued, and no supervisor that serves {state} has \
                     been heard from since this control plane started"
                )
            }
        }
    }
}

/// For each event out of the state that its guards refuse on the current
/// context: which guard and why; and the last event refused in this visit.
fn guard_sentences(why: &Why) -> Vec<String> {
    let mut sentences = Vec::new();
    if let Some(entry) = &why.rejected {
        let get = |key: &str| entry.data.get(key).and_then(|v| v.as_str()).unwrap_or("?");
        sentences.push(format!(
            "the last event, {}, was refused at {}: {}",
            repr_str(get("event")),
            entry.at,
            get("reason")
        ));
    }
    let mut events: Vec<&str> = Vec::new();
    for transition in &why.transitions {
        if !events.contains(&transition.event.as_str()) {
            events.push(&transition.event);
        }
    }
    for event in events {
        let of_event: Vec<&WhyTransition> = why
            .transitions
            .iter()
            .filter(|t| t.event == event)
            .collect();
        let blocked = of_event
            .iter()
            .all(|t| t.holds == Some(false) && !t.otherwise);
        if !blocked {
            continue;
        }
        let guards: Vec<String> = of_event
            .iter()
            .filter_map(|t| t.guard.as_deref())
            .map(|g| g.to_string())
            .collect();
        let guards = match guards.as_slice() {
            [one] => format!("the guard {one} is false"),
            many => format!("the guards {} are false", many.join(" and ")),
        };
        sentences.push(format!(
            "{} cannot move it now: on its context {guards}",
            repr_str(event)
        ));
    }
    sentences
}

#[cfg(test)]
mod tests;
