//! The schedules view: `S` shows each schedule (`docs/schedules.md`) with its next
//! occurrence, its last token and that token's status, read from `GET /schedules`
//! each tick while the view is open; arrows pick one, and its next three
//! occurrences and latest skipped ones show below the list. `p` and `r` pause and
//! resume the picked schedule, except read-only, where they only say that they
//! are off. No I/O here: these are parts of `update`.

use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::schedules::ScheduleView;

use crate::keys::moved_pick;
use crate::message::Command;
use crate::model::{Fetch, Mode, Model, Problem};

/// `S`: open the view and read the schedules.
pub fn open(model: &mut Model) -> Vec<Command> {
    crate::update::open_view(model, Mode::Schedules)
}

/// The picked schedule, if any.
pub fn picked(model: &Model) -> Option<&ScheduleView> {
    model.schedules.as_ref()?.get(model.schedules_at)
}

/// A key in the schedules view: arrows (or `j` `k`) pick, `p` pauses and `r`
/// resumes the picked schedule, Esc `q` `S` close the view.
pub fn key(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    let len = model.schedules.as_ref().map_or(0, Vec::len);
    let mut commands = Vec::new();
    match (moved_pick(model.schedules_at, len, key.code), key.code) {
        (Some(at), _) => model.schedules_at = at,
        (None, KeyCode::Char(c @ ('p' | 'r'))) => {
            let pause = c == 'p';
            if model.read_only {
                let what = if pause { "pause" } else { "resume" };
                model.say(
                    format!("read-only: '{c}' would {what} a schedule, and this TUI changes none"),
                    true,
                );
            } else if let Some(schedule) = picked(model) {
                commands.push(Command::PauseSchedule {
                    name: schedule.name.clone(),
                    pause,
                });
            }
        }
        (None, KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('S')) => return Vec::new(),
        _ => {}
    }
    model.mode = Mode::Schedules;
    commands
}

/// `GET /schedules` answered.
pub fn answered(model: &mut Model, answer: Result<Vec<ScheduleView>, Problem>) {
    model.in_flight.remove(&Fetch::Schedules);
    if let Some(list) = crate::update::answered(model, answer) {
        model.schedules_at = model.schedules_at.min(list.len().saturating_sub(1));
        model.schedules = Some(list);
    }
}

/// A pause or resume answered: say so, and read the list again.
pub fn steered(model: &mut Model, answer: Result<ScheduleView, Problem>) -> Vec<Command> {
    if let Some(view) = crate::update::answered(model, answer) {
        model.say(
            format!("the schedule {} is {}", view.name, view.status),
            false,
        );
        if let Some(kept) = model
            .schedules
            .iter_mut()
            .flatten()
            .find(|kept| kept.name == view.name)
        {
            *kept = view;
        }
    }
    if model.in_flight.insert(Fetch::Schedules) {
        return vec![Command::Schedules];
    }
    Vec::new()
}
