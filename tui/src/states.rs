//! The live state graph: `w` shows the workflow's states (the
//! main workflow's, then each child workflow's) with their tokens by status,
//! kept current from `GET /states` whenever the live stream says a token moved.
//! A state whose counts changed is highlighted for a moment ([`HIGHLIGHT`]).
//! Arrows pick a state and Enter shows only its tokens in the table (the first
//! row, "every state", clears that). No I/O here: these are parts of `update`.

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::graph::Graph;
use stateous_shared::watch::StateCount;
use stateous_shared::wire::Health;

use crate::message::Command;
use crate::model::{Fetch, Mode, Model, Problem, StateKey};

/// How long a state whose counts changed stays highlighted, in seconds.
pub const HIGHLIGHT: i64 = 3;

/// The statuses the graph counts, in its columns' order.
pub const COUNTED: [&str; 3] = ["active", "paused", "failed"];

/// The graph view's rows that can be picked, in order: `None` is "every state",
/// then each state of the main workflow and of each child workflow, as the graph
/// file lists them.
pub fn choices(graph: &Graph) -> Vec<Option<StateKey>> {
    let document = &graph.document;
    let mut rows = vec![None];
    let states_of = |body: &serde_json::Value| -> Vec<String> {
        body["states"]
            .as_object()
            .map(|states| states.keys().cloned().collect())
            .unwrap_or_default()
    };
    rows.extend(
        states_of(document)
            .into_iter()
            .map(|state| Some((None, state))),
    );
    if let Some(children) = document["workflows"].as_object() {
        for (name, body) in children {
            rows.extend(
                states_of(body)
                    .into_iter()
                    .map(|state| Some((Some(name.clone()), state))),
            );
        }
    }
    rows
}

/// The tokens of `key` with each counted status ([`COUNTED`]); zeros until read.
pub fn counts(model: &Model, key: &StateKey) -> [i64; 3] {
    let found = model
        .states
        .iter()
        .flatten()
        .find(|s| s.workflow == key.0 && s.state == key.1);
    COUNTED.map(|status| {
        found
            .and_then(|s| s.tokens.get(status).copied())
            .unwrap_or(0)
    })
}

/// Whether the counts of `key` changed in the last [`HIGHLIGHT`] seconds.
pub fn highlighted(model: &Model, key: &StateKey) -> bool {
    model
        .states_changed
        .get(key)
        .is_some_and(|at| (model.now - *at).num_seconds() < HIGHLIGHT)
}

/// Whether the screen needs the counts: the graph view is open, or the table
/// shows one state (its title counts the state's tokens).
pub fn wanted(model: &Model) -> bool {
    model.mode == Mode::Graph || model.state_filter.is_some()
}

/// `w`: open the graph view on the state the table shows (or "every state"),
/// and read the counts.
pub fn open(model: &mut Model) -> Vec<Command> {
    model.mode = Mode::Graph;
    model.graph_at = model
        .graph
        .as_ref()
        .and_then(|graph| {
            choices(graph)
                .iter()
                .position(|choice| *choice == model.state_filter)
        })
        .unwrap_or(0);
    let mut commands = vec![Command::Graphs];
    if model.in_flight.insert(Fetch::States) {
        commands.push(Command::States);
    }
    commands
}

/// The graph view's line of the kept graphs other than the served one that have
/// live tokens (`token migrate` moves them); `None` when there are none.
pub fn older_graphs(model: &Model) -> Option<String> {
    let older: Vec<String> = model
        .graphs
        .iter()
        .filter(|graph| !graph.served)
        .filter_map(|graph| {
            let live: i64 = ["active", "paused"]
                .iter()
                .filter_map(|status| graph.tokens.get(*status))
                .sum();
            let short = stateous_shared::watch::short_checksum(&graph.checksum);
            (live > 0).then(|| format!("{short} ({live} live)"))
        })
        .collect();
    (!older.is_empty()).then(|| format!("older graphs with live tokens: {}", older.join(", ")))
}

/// A key in the graph view: arrows (or `j` `k`) move, Enter picks the state
/// whose tokens the table shows, Esc `q` `w` close it.
pub fn key(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    let last = model
        .graph
        .as_ref()
        .map_or(0, |graph| choices(graph).len().saturating_sub(1));
    match key.code {
        KeyCode::Down | KeyCode::Char('j') => model.graph_at = (model.graph_at + 1).min(last),
        KeyCode::Up | KeyCode::Char('k') => model.graph_at = model.graph_at.saturating_sub(1),
        KeyCode::Home | KeyCode::Char('g') => model.graph_at = 0,
        KeyCode::End | KeyCode::Char('G') => model.graph_at = last,
        KeyCode::Enter => {
            let picked = model
                .graph
                .as_ref()
                .and_then(|graph| choices(graph).into_iter().nth(model.graph_at))
                .flatten();
            let line = match &picked {
                Some((Some(workflow), state)) => format!("the table shows {workflow}/{state}"),
                Some((None, state)) => format!("the table shows the tokens in {state}"),
                None => "the table shows every state".to_string(),
            };
            model.say(line, false);
            model.state_filter = picked;
            return crate::keys::reset_table(model);
        }
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('w') => return Vec::new(),
        _ => {}
    }
    model.mode = Mode::Graph;
    Vec::new()
}

/// `GET /states` answered: the states whose counts changed since the last
/// answer are remembered at `now`, for the highlight.
pub fn answered(model: &mut Model, answer: Result<Option<Vec<StateCount>>, Problem>) {
    model.in_flight.remove(&Fetch::States);
    let Some(list) = crate::update::answered(model, answer) else {
        return;
    };
    let Some(list) = list else {
        model.states = None;
        return;
    };
    if let Some(before) = model.states.take() {
        let counted = |s: &StateCount| COUNTED.map(|c| s.tokens.get(c).copied().unwrap_or(0));
        let keys: std::collections::BTreeSet<StateKey> = before
            .iter()
            .chain(&list)
            .map(|s| (s.workflow.clone(), s.state.clone()))
            .collect();
        for key in keys {
            let find = |all: &[StateCount]| {
                all.iter()
                    .find(|s| s.workflow == key.0 && s.state == key.1)
                    .map(counted)
                    .unwrap_or_default()
            };
            if find(&before) != find(&list) {
                model.states_changed.insert(key, model.now);
            }
        }
    }
    let now = model.now;
    model
        .states_changed
        .retain(|_, at| (now - *at).num_seconds() < HIGHLIGHT);
    model.states = Some(list);
}

/// `GET /health` answered: the dev clock for the header.
pub fn health(model: &mut Model, answer: Result<Health, Problem>) {
    model.in_flight.remove(&Fetch::Health);
    if let Some(health) = crate::update::answered(model, answer) {
        model.dev_clock = health.dev_clock;
    }
}

/// The daemon's time when the wall clock says `wall`: with a dev clock, ages and
/// countdowns count from its time (frozen: where it stands), not the wall's.
pub fn daemon_now(model: &Model, wall: DateTime<Utc>) -> DateTime<Utc> {
    let Some(clock) = &model.dev_clock else {
        return wall;
    };
    if clock.frozen {
        if let Ok(at) = DateTime::parse_from_rfc3339(&clock.now) {
            return at.with_timezone(&Utc);
        }
    }
    wall + chrono::Duration::milliseconds((clock.ahead * 1000.0) as i64)
}

/// Whether a ledger entry of `kind` can change a state's counts: the entries
/// about tasks, memory, notes and held or refused events cannot.
pub fn moves_counts(kind: &str) -> bool {
    !(kind.starts_with("task_")
        || kind.starts_with("memory_")
        || kind.starts_with("timer_set")
        || kind == "note"
        || matches!(
            kind,
            "event_rejected" | "event_deferred" | "event_dropped" | "event_accepted"
        ))
}
