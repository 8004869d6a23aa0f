//! The notifications view: `N` shows each subscription to notifications
//! (`docs/notifications.md`) with its state and its pending, retrying,
//! delivered and dead counts, read from `GET /notify` each tick while the view is
//! open; arrows pick one, and its settings show below the list. It changes
//! nothing (`stateous notify` does, with an admin key). No I/O here: these are
//! parts of `update`.

use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::notify::SubscriptionView;

use crate::keys::moved_pick;
use crate::message::Command;
use crate::model::{Fetch, Mode, Model, Problem};

/// `N`: open the view and read the subscriptions.
pub fn open(model: &mut Model) -> Vec<Command> {
    crate::update::open_view(model, Mode::Notifications)
}

/// The picked subscription, if any.
pub fn picked(model: &Model) -> Option<&SubscriptionView> {
    model.subscriptions.as_ref()?.get(model.subscriptions_at)
}

/// A key in the notifications view: arrows (or `j` `k`, `g` `G`) pick, Esc `q`
/// `N` close the view.
pub fn key(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    let len = model.subscriptions.as_ref().map_or(0, Vec::len);
    if let Some(at) = moved_pick(model.subscriptions_at, len, key.code) {
        model.subscriptions_at = at;
    } else if let KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('N') = key.code {
        return Vec::new();
    }
    model.mode = Mode::Notifications;
    Vec::new()
}

/// `GET /notify` answered. A refusal (the list needs an admin key, or the
/// socket) is kept for the view to show, in place of the list.
pub fn answered(model: &mut Model, answer: Result<Vec<SubscriptionView>, Problem>) {
    model.in_flight.remove(&Fetch::Subscriptions);
    if let Err(Problem::Refused { sentence, .. }) = &answer {
        model.subscriptions_refused = Some(sentence.clone());
        model.subscriptions = None;
        return;
    }
    if let Some(list) = crate::update::answered(model, answer) {
        model.subscriptions_refused = None;
        model.subscriptions_at = model.subscriptions_at.min(list.len().saturating_sub(1));
        model.subscriptions = Some(list);
    }
}
