//! The describe view (`d` or Enter): the selected token whole, as the JSON of its
//! detail (`GET /tokens/{id}/detail`: context, tasks, timers, held events) and
//! of its history with every payload (`GET /tokens/{id}/history`). Arrows,
//! PgUp/PgDn, Home/End scroll it; `y` copies the JSON to the terminal's clipboard
//! with OSC 52 (the escape sequence goes to the terminal, so it works over ssh
//! and in tmux with `set-clipboard` on); Esc, `d`, Enter or `q` close it.

use base64::Engine;
use crossterm::event::{KeyCode, KeyEvent};
use serde_json::{json, Value};

use crate::message::Command;
use crate::model::{Mode, Model};

/// The selected token as the describe view shows it: `{"token": detail,
/// "history": [entries]}`; `None` until its detail was read. The history is
/// there only once it was read for this token (else `null`).
pub fn document(model: &Model) -> Option<Value> {
    let detail = model.detail.as_ref()?;
    let history = match &model.history_of {
        Some(id) if *id == detail.token.token => json!(model.history),
        _ => Value::Null,
    };
    Some(json!({ "token": detail, "history": history }))
}

/// The describe view's rows at its width now: [`document`] pretty-printed, a
/// line wrapped into rows of the view's width (under its own indent), so that no
/// long value is cut.
pub fn lines(model: &Model) -> Vec<String> {
    let width = crate::view::describe_width(model);
    match document(model).map(|doc| serde_json::to_string_pretty(&doc)) {
        Some(Ok(text)) => text
            .lines()
            .flat_map(|line| {
                let indent = line.len() - line.trim_start().len() + 2;
                crate::view::wrap(line, width, indent)
            })
            .collect(),
        Some(Err(error)) => vec![format!("cannot show the token as JSON: {error}")],
        None => vec!["the selected token is being read...".to_string()],
    }
}

/// The escape sequence that asks the terminal to put `text` on the clipboard
/// (OSC 52, the clipboard `c`, base64 of the UTF-8 text, ended by BEL).
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{encoded}\x07")
}

/// Open the describe view on the selected token (a line in the status bar when
/// none is selected).
pub fn open(model: &mut Model) {
    if crate::keys::selected_or_say(model).is_some() {
        model.mode = Mode::Describe(0);
    }
}

/// A key in the describe view, whose first line shown is `top`.
pub fn key(model: &mut Model, top: usize, key: KeyEvent) -> Vec<Command> {
    let page = crate::view::describe_page(model).max(1);
    let last_top = lines(model).len().saturating_sub(page);
    let top = top.min(last_top);
    let moved = match key.code {
        KeyCode::Esc | KeyCode::Enter | KeyCode::Char('d') | KeyCode::Char('q') => {
            return Vec::new()
        }
        KeyCode::Char('y') => return copy(model, top),
        KeyCode::Down | KeyCode::Char('j') => top + 1,
        KeyCode::Up | KeyCode::Char('k') => top.saturating_sub(1),
        KeyCode::PageDown => top + page.saturating_sub(1).max(1),
        KeyCode::PageUp => top.saturating_sub(page.saturating_sub(1).max(1)),
        KeyCode::Home | KeyCode::Char('g') => 0,
        KeyCode::End | KeyCode::Char('G') => last_top,
        _ => top,
    };
    model.mode = Mode::Describe(moved.min(last_top));
    Vec::new()
}

/// `y`: the document, compact, to the clipboard; the status line says so.
fn copy(model: &mut Model, top: usize) -> Vec<Command> {
    model.mode = Mode::Describe(top);
    match document(model) {
        Some(doc) => {
            let text = doc.to_string();
            model.say(
                format!(
                    "copied the JSON of {} to the clipboard ({} bytes, OSC 52)",
                    doc["token"]["token"]["token"]
                        .as_str()
                        .unwrap_or("the token"),
                    text.len()
                ),
                false,
            );
            vec![Command::Copy(text)]
        }
        None => {
            model.say("nothing to copy: the token is still being read", true);
            Vec::new()
        }
    }
}
