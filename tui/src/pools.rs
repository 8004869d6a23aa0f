//! The pools view: `L` shows each limit on claims (`docs/limits.md`) with its
//! slots used, its max, the queued tasks waiting in its states, its key
//! expression and rate, and the keys holding slots; read from `GET /limits` each
//! tick while the view is open. It changes nothing. No I/O here: these are parts
//! of `update`.

use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::claim_limits::LimitView;

use crate::message::Command;
use crate::model::{Fetch, Mode, Model, Problem};

/// `L`: open the view and read the limits.
pub fn open(model: &mut Model) -> Vec<Command> {
    crate::update::open_view(model, Mode::Pools)
}

/// A key in the pools view: Esc `q` `L` close it.
pub fn key(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('L') => Vec::new(),
        _ => {
            model.mode = Mode::Pools;
            Vec::new()
        }
    }
}

/// `GET /limits` answered.
pub fn answered(model: &mut Model, answer: Result<Vec<LimitView>, Problem>) {
    model.in_flight.remove(&Fetch::Limits);
    if let Some(list) = crate::update::answered(model, answer) {
        model.pools = Some(list);
    }
}

/// A limit's lines: `NAME  STATES  USED/MAX  waiting N  per EXPR  RATE`, then
/// `  KEY  USED/MAX` for each key holding slots.
pub fn lines(limit: &LimitView) -> Vec<String> {
    let mut head = format!(
        "{}  {}  {}/{}  waiting {}",
        limit.name,
        limit.states.join(","),
        limit.used,
        limit.max,
        limit.waiting
    );
    if let Some(per) = &limit.per {
        head.push_str(&format!("  per {per}"));
    }
    if let Some(rate) = &limit.rate {
        head.push_str(&format!("  {rate}"));
    }
    let mut all = vec![head];
    if limit.per.is_some() {
        for key in &limit.keys {
            all.push(format!("  {}  {}/{}", key.key, key.used, limit.max));
        }
    }
    all
}
