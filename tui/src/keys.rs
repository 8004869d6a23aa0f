//! What each key does, in each mode (README.md, "Watch and steer"): arrows or `j` `k` move,
//! `/` filters (the filter language, or text), `t` by status, `p` `r` `c` steer,
//! `f` fires, `R` retries, space and `*` mark (then `p` `r` `c` `f` `R` act on
//! the marked tokens through a preview, `crate::marks`), `s` starts,
//! `d` or Enter describes the token as JSON (`crate::describe`), `v` gives its
//! panes the main area, `F` the screen without the supervisors pane, `o` `O` sort
//! the table, PgUp PgDn Home End scroll its history, `z`
//! switches UTC and local time, `w` shows the graph, `S` the schedules, `L` the limits' pools,
//! `N` the notifications, `?` the
//! keys, `q` quits.
//! While read-only, the keys that would change a token only say that they are off.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use stateous_client::Steer;
use stateous_shared::bulk::BulkAction;

use crate::forms;
use crate::line_edit::LineEdit;
use crate::marks::{self, has_marks, Typed};
use crate::message::Command;
use crate::model::{Mode, Model, MOST_TOKENS, STATUSES};
use crate::update::refresh;

/// Apply a key to `model`.
pub fn key(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        model.quit = true;
        return Vec::new();
    }
    match std::mem::replace(&mut model.mode, Mode::Normal) {
        Mode::Normal => normal(model, key),
        Mode::Filter(edit) => filter(model, edit, key),
        Mode::Priority(edit) => priority(model, edit, key),
        Mode::Confirm(token) => confirm(model, token, key),
        Mode::Pick { token, events, at } => forms::pick(model, token, events, at, key),
        Mode::Fire(form) => forms::fire(model, form, key),
        Mode::Start(form) => forms::start(model, form, key),
        Mode::Graph => crate::states::key(model, key),
        Mode::Bulk(form) => marks::key(model, form, key),
        Mode::Help => Vec::new(),
        Mode::Describe(top) => crate::describe::key(model, top, key),
        Mode::Schedules => crate::schedules::key(model, key),
        Mode::Pools => crate::pools::key(model, key),
        Mode::Notifications => crate::notifications::key(model, key),
    }
}

/// The keys that change a token: pause, resume, cancel, fire, start, retry,
/// migrate, priority.
const CHANGING: [char; 8] = ['p', 'r', 'c', 'f', 's', 'R', 'M', 'P'];

fn normal(model: &mut Model, key: KeyEvent) -> Vec<Command> {
    if let KeyCode::Char(c) = key.code {
        if model.read_only && CHANGING.contains(&c) {
            model.say(
                format!("read-only: '{c}' would change a token, and this TUI changes none"),
                true,
            );
            return Vec::new();
        }
    }
    let page = model.table_rows().max(1) as isize;
    match key.code {
        KeyCode::Char('q') => model.quit = true,
        KeyCode::Down | KeyCode::Char('j') => return move_by(model, 1),
        KeyCode::Up | KeyCode::Char('k') => return move_by(model, -1),
        KeyCode::Char('J') => return move_by(model, page),
        KeyCode::Char('K') => return move_by(model, -page),
        KeyCode::Char('g') => return move_by(model, isize::MIN / 2),
        KeyCode::Char('G') => return bottom(model),
        KeyCode::PageDown | KeyCode::PageUp | KeyCode::Home | KeyCode::End => {
            scroll_history(model, key.code);
        }
        KeyCode::Enter | KeyCode::Char('d') => crate::describe::open(model),
        KeyCode::Char('v') => model.zoom = !model.zoom,
        KeyCode::Char('F') => model.full = !model.full,
        KeyCode::Char('o') => {
            let before = model.selected();
            model.sort = model.sort.next();
            return sorted(model, before);
        }
        KeyCode::Char('O') => {
            let before = model.selected();
            model.sort_reversed = !model.sort_reversed;
            return sorted(model, before);
        }
        KeyCode::Char('z') => {
            model.utc = !model.utc;
            let zone = if model.utc { "UTC" } else { "local time" };
            model.say(format!("times are in {zone}"), false);
        }
        KeyCode::Char('/') => {
            // The line starts with what it applied: the filter, else the text.
            // Not the status of `t`, which stays in force beside them (the title
            // says it): a `status:NAME` word before the cursor would make what is
            // typed after it no filter of the filter language.
            let typed = model.filter.as_ref().unwrap_or(&model.text_filter);
            model.mode = Mode::Filter(LineEdit::new(typed));
        }
        KeyCode::Char('t') => return next_status(model),
        KeyCode::Char(' ') => return marks::toggle(model),
        KeyCode::Char('*') => marks::toggle_all(model),
        KeyCode::Char('p') if has_marks(model) => return marks::open(model, BulkAction::Pause),
        KeyCode::Char('r') if has_marks(model) => return marks::open(model, BulkAction::Resume),
        KeyCode::Char('c') if has_marks(model) => return marks::open(model, BulkAction::Cancel),
        KeyCode::Char('R') if has_marks(model) => return marks::open(model, BulkAction::Retry),
        KeyCode::Char('M') if has_marks(model) => return marks::open(model, BulkAction::Migrate),
        KeyCode::Char('R') => return marks::retry(model),
        KeyCode::Char('p') => return steer(model, Steer::Pause),
        KeyCode::Char('r') => return steer(model, Steer::Resume),
        KeyCode::Char('c') => {
            if let Some(token) = selected_or_say(model) {
                model.say(
                    format!("cancel {token} for good? y to cancel, any other key keeps it"),
                    false,
                );
                model.mode = Mode::Confirm(token);
            }
        }
        KeyCode::Char('P') if has_marks(model) || selected_or_say(model).is_some() => {
            model.mode = Mode::Priority(LineEdit::new(""));
        }
        KeyCode::Char('f') => forms::open_pick(model),
        KeyCode::Char('s') => model.mode = Mode::Start(forms::new_start()),
        KeyCode::Char('w') => return crate::states::open(model),
        KeyCode::Char('S') => return crate::schedules::open(model),
        KeyCode::Char('L') => return crate::pools::open(model),
        KeyCode::Char('N') => return crate::notifications::open(model),
        KeyCode::Char('?') => model.mode = Mode::Help,
        KeyCode::Esc if model.zoom => model.zoom = false,
        KeyCode::Esc => model.status = None,
        _ => {}
    }
    Vec::new()
}

/// After `o` or `O`: the selection stays on its token (`before`), the status
/// line says that the page read is what is sorted, and the table reads the
/// whole page (the 1000 most recently moved of its filters) to sort.
fn sorted(model: &mut Model, before: Option<String>) -> Vec<Command> {
    let shown = model.shown();
    if let Some(at) = before
        .as_ref()
        .and_then(|id| shown.iter().position(|t| &t.token == id))
    {
        model.cursor = at;
    }
    follow_cursor(model);
    let order = if model.sort_reversed {
        "descending"
    } else {
        "ascending"
    };
    let text = match (model.sort, model.sort_reversed) {
        (crate::model::SortBy::Listed, false) => {
            "sorted as the daemon lists them: most recently moved first".to_string()
        }
        (crate::model::SortBy::Listed, true) => {
            "sorted least recently moved first, of the page read".to_string()
        }
        (by, _) => format!(
            "sorted by {} {order}, of the page read (the daemon lists the most recently moved)",
            by.name()
        ),
    };
    model.say(text, false);
    refresh(model)
}

/// PgUp and PgDn move the history pane a page (less a row, to keep one in
/// view); Home goes to its first entry; End, or PgDn onto the end, follows new
/// entries again.
fn scroll_history(model: &mut Model, code: KeyCode) {
    let page = crate::view::history_page(model).max(1);
    let rows = crate::view::history_rows(model, crate::view::history_width(model)).len();
    let last_top = rows.saturating_sub(page);
    let top = model.history_top.unwrap_or(last_top).min(last_top);
    let step = page.saturating_sub(1).max(1);
    model.history_top = match code {
        KeyCode::Home => Some(0),
        KeyCode::PageUp => Some(top.saturating_sub(step)),
        KeyCode::PageDown if top + step < last_top => Some(top + step),
        _ => None,
    };
}

/// Move the selection a row down (after a mark).
pub fn move_down(model: &mut Model) -> Vec<Command> {
    move_by(model, 1)
}

/// Move the selection by `by` rows (clamped); a new selection is read at once.
fn move_by(model: &mut Model, by: isize) -> Vec<Command> {
    let count = model.shown().len();
    if count == 0 {
        return Vec::new();
    }
    let before = model.selected();
    let at = (model.cursor as isize).saturating_add(by);
    model.cursor = at.clamp(0, count as isize - 1) as usize;
    follow_cursor(model);
    if by > 0 {
        say_if_capped(model);
    }
    if model.selected() == before {
        return Vec::new();
    }
    forget_selection(model);
    refresh(model)
}

/// `G`: the last row read; when more tokens match, the next page asks for all
/// that the table holds and the selection goes to its end once it comes.
fn bottom(model: &mut Model) -> Vec<Command> {
    let more = model.more_than_read() && !model.capped();
    model.to_bottom = more;
    let mut commands = move_by(model, isize::MAX / 2);
    if more && commands.is_empty() {
        commands = refresh(model);
    }
    say_if_capped(model);
    commands
}

/// Where an arrow (or `j` `k`, Home End, `g` `G`) moves the pick of a list of `len`
/// items from `at`; `None` for any other key. The views of the schedules and the
/// notifications pick with it.
pub fn moved_pick(at: usize, len: usize, code: KeyCode) -> Option<usize> {
    let last = len.saturating_sub(1);
    match code {
        KeyCode::Down | KeyCode::Char('j') => Some((at + 1).min(last)),
        KeyCode::Up | KeyCode::Char('k') => Some(at.saturating_sub(1)),
        KeyCode::Home | KeyCode::Char('g') => Some(0),
        KeyCode::End | KeyCode::Char('G') => Some(last),
        _ => None,
    }
}

/// At the table's last row, when it holds all it can and more tokens match, the
/// status line says where the others are (the title already says `1000 shown`).
pub fn say_if_capped(model: &mut Model) {
    let last = model.shown().len().saturating_sub(1);
    if model.capped() && model.cursor == last {
        let total = model.total.unwrap_or_default();
        model.say(
            format!(
                "the table holds the {MOST_TOKENS} most recently moved of {total} tokens; \
                 / with a filter (e.g. state == 'draft') reaches the others"
            ),
            false,
        );
    }
}

/// What was read for the selection before: a new one starts with none of it, and
/// its history follows its end.
pub fn forget_selection(model: &mut Model) {
    model.detail = None;
    model.history.clear();
    model.history_of = None;
    model.history_top = None;
    model.children.clear();
    model.why = None;
}

/// Scroll the table so that the selected row is on screen.
pub fn follow_cursor(model: &mut Model) {
    let rows = model.table_rows().max(1);
    if model.cursor < model.scroll {
        model.scroll = model.cursor;
    } else if model.cursor >= model.scroll + rows {
        model.scroll = model.cursor + 1 - rows;
    }
}

/// `t`: the next status filter (all, then each status in turn).
fn next_status(model: &mut Model) -> Vec<Command> {
    let at = model
        .status_filter
        .and_then(|now| STATUSES.iter().position(|s| *s == now));
    model.status_filter = match at {
        None => Some(STATUSES[0]),
        Some(i) if i + 1 < STATUSES.len() => Some(STATUSES[i + 1]),
        Some(_) => None,
    };
    reset_table(model)
}

/// The table starts over at its top, with a fresh read.
pub fn reset_table(model: &mut Model) -> Vec<Command> {
    // "Every match" was of the old filters.
    model.mark_all = false;
    model.total = None;
    model.tokens.clear();
    model.exact = None;
    model.in_flight.remove(&crate::model::Fetch::Exact);
    // A read under the old filters may be out; this one goes out at once too.
    model.in_flight.remove(&crate::model::Fetch::Tokens);
    model.cursor = 0;
    model.scroll = 0;
    forget_selection(model);
    refresh(model)
}

fn filter(model: &mut Model, mut edit: LineEdit, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Enter => {
            apply_filter(model, edit.text());
            reset_table(model)
        }
        KeyCode::Esc => {
            model.text_filter.clear();
            model.filter = None;
            reset_table(model)
        }
        _ => {
            edit.key(key);
            model.mode = Mode::Filter(edit);
            Vec::new()
        }
    }
}

/// A typed filter: an expression of the filter language goes to the daemon as
/// `where` (one that does not parse says the parser's sentence and changes
/// nothing); otherwise a word `status:NAME` picks the status (`status:all` any),
/// the other words are the text to look for. An unknown status says so and
/// leaves the status filter as it was. One that applies clears an error from
/// the status line.
fn apply_filter(model: &mut Model, typed: &str) {
    let typed_filter = marks::typed_filter(typed);
    // A filter that applies ends the error of an earlier one.
    if !matches!(typed_filter, Typed::Wrong(_)) && model.status.as_ref().is_some_and(|s| s.error) {
        model.status = None;
    }
    match typed_filter {
        Typed::Filter(filter) => {
            model.filter = Some(filter);
            model.text_filter.clear();
            return;
        }
        Typed::Wrong(sentence) => {
            model.say(sentence, true);
            return;
        }
        Typed::Text(_) => model.filter = None,
    }
    let mut words = Vec::new();
    for word in typed.split_whitespace() {
        match word.strip_prefix("status:") {
            Some("all") => model.status_filter = None,
            Some(name) => match STATUSES.iter().find(|s| **s == name) {
                Some(status) => model.status_filter = Some(status),
                None => model.say(
                    format!("'{name}' is not a status: {}", STATUSES.join(", ")),
                    true,
                ),
            },
            None => words.push(word),
        }
    }
    model.text_filter = words.join(" ");
}

fn confirm(model: &mut Model, token: String, key: KeyEvent) -> Vec<Command> {
    if key.code == KeyCode::Char('y') || key.code == KeyCode::Char('Y') {
        model.say(format!("cancelling {token}..."), false);
        vec![Command::Steer(token, Steer::Cancel)]
    } else {
        model.say(format!("{token} was not cancelled"), false);
        Vec::new()
    }
}

/// The priority prompt: Enter sets the typed priority on the selected token, or
/// asks for the preview of setting it on the marked ones; Esc leaves it.
fn priority(model: &mut Model, mut edit: LineEdit, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Enter => {
            let typed = edit.text().trim();
            let Some(priority) = typed
                .parse::<i64>()
                .ok()
                .filter(|n| n.abs() <= MOST_PRIORITY)
            else {
                // The prompt closes so that the status line can say why; P
                // opens it again.
                model.say(
                    format!("a priority is a whole number from -{MOST_PRIORITY} to {MOST_PRIORITY}, not {typed:?}; P to try again"),
                    true,
                );
                return Vec::new();
            };
            if has_marks(model) {
                return marks::open_priority(model, priority);
            }
            let Some(token) = selected_or_say(model) else {
                return Vec::new();
            };
            model.say(format!("setting the priority of {token}..."), false);
            vec![Command::Priority { token, priority }]
        }
        KeyCode::Esc => {
            model.status = None;
            Vec::new()
        }
        _ => {
            edit.key(key);
            model.mode = Mode::Priority(edit);
            Vec::new()
        }
    }
}

/// The largest priority, either way (`docs/limits.md`, "Priorities").
const MOST_PRIORITY: i64 = 1_000_000;

fn steer(model: &mut Model, action: Steer) -> Vec<Command> {
    let Some(token) = selected_or_say(model) else {
        return Vec::new();
    };
    let doing = match action {
        Steer::Pause => "pausing",
        Steer::Resume => "resuming",
        Steer::Cancel => "cancelling",
    };
    model.say(format!("{doing} {token}..."), false);
    vec![Command::Steer(token, action)]
}

/// The selected token, or a line in the status bar saying there is none.
pub fn selected_or_say(model: &mut Model) -> Option<String> {
    let token = model.selected();
    if token.is_none() {
        model.say("no token is selected", true);
    }
    token
}
