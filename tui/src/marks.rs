//! Operating many tokens in the TUI (README.md, "Operate many tokens"): marks
//! (space marks a row, `*` every token the filters match), bulk actions on the
//! marked tokens (`p` `r` `c` `f` `R`) through the daemon's preview, the retry of
//! one failed token (`R`), and the filter language in `/`. No I/O: each returns the commands for
//! the client task.
//!
//! A bulk action is previewed first (`POST /tokens/bulk` with `dry_run`): its
//! popup shows the count and a sample with what each token would get, and goes
//! ahead only with a reason (written into each history) and the count typed, as
//! `stateous token cancel --where` asks at a terminal.

use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::bulk::{operator_name, BulkAction, BulkAnswer, BulkRequest};
use stateous_shared::guards::filter::parse_filter;
use stateous_shared::pyrepr::repr_str;
use stateous_shared::wire::Object;

use crate::line_edit::LineEdit;
use crate::message::Command;
use crate::model::{BulkForm, Fetch, Mode, Model, Problem};
use crate::update::{answered, describe, refresh};

/// The most tokens marked one by one that a bulk action takes (the API's list);
/// more go by the filter (`*`).
pub const MOST_MARKED: usize = 1000;

/// Whether any token is marked.
pub fn has_marks(model: &Model) -> bool {
    model.mark_all || !model.marks.is_empty()
}

/// Whether the table shows `token` as marked.
pub fn is_marked(model: &Model, token: &str) -> bool {
    model.mark_all || model.marks.contains(token)
}

/// Space: mark or unmark the selected row, then move down a row.
pub fn toggle(model: &mut Model) -> Vec<Command> {
    let Some(token) = crate::keys::selected_or_say(model) else {
        return Vec::new();
    };
    if model.mark_all {
        // From "every match" to one by one: the rows shown stay marked.
        model.mark_all = false;
        model.marks = model.shown().iter().map(|t| t.token.clone()).collect();
    }
    if !model.marks.remove(&token) {
        model.marks.insert(token);
    }
    say_marks(model);
    crate::keys::move_down(model)
}

/// `*`: mark every token the filters match, or clear every mark. With a text
/// filter (matched here, among the tokens loaded), the rows shown are marked one
/// by one; otherwise the marks go by the filter, every match included.
pub fn toggle_all(model: &mut Model) {
    if has_marks(model) {
        model.mark_all = false;
        model.marks.clear();
        model.say("no token is marked", false);
        return;
    }
    if model.text_filter.is_empty() {
        model.mark_all = true;
    } else {
        model.marks = model.shown().iter().map(|t| t.token.clone()).collect();
    }
    say_marks(model);
}

fn say_marks(model: &mut Model) {
    let text = match marked_count(model) {
        Some(1) => "1 token is marked: p r c f R act on it".to_string(),
        Some(n) => format!("{n} tokens are marked: p r c f R act on them"),
        None => "every token the filters match is marked: p r c f R act on them".to_string(),
    };
    model.say(text, false);
}

/// How many tokens are marked; `None` when every match is and the total is not
/// known.
pub fn marked_count(model: &Model) -> Option<u64> {
    if model.mark_all {
        model.total
    } else {
        Some(model.marks.len() as u64)
    }
}

/// The filter a bulk action of `*` goes by: the filter language's filter, the
/// status filter and the state picked in the graph, joined by `and`; `true`
/// when there is none (every token).
pub fn combined_filter(model: &Model) -> String {
    let mut parts = Vec::new();
    if let Some(filter) = &model.filter {
        parts.push(format!("({filter})"));
    }
    if let Some(status) = model.status_filter {
        parts.push(format!("status == {}", repr_str(status)));
    }
    if let Some((workflow, state)) = &model.state_filter {
        parts.push(format!("state == {}", repr_str(state)));
        let workflow = workflow
            .clone()
            .or_else(|| model.graph.as_ref().map(|g| g.main.name.clone()));
        if let Some(workflow) = workflow {
            parts.push(format!("workflow == {}", repr_str(&workflow)));
        }
    }
    if parts.is_empty() {
        "true".to_string()
    } else {
        parts.join(" and ")
    }
}

/// The request of a bulk `action` on the marked tokens, as a preview.
fn request(model: &Model, action: BulkAction) -> BulkRequest {
    let (filter, tokens) = if model.mark_all {
        (Some(combined_filter(model)), None)
    } else {
        (None, Some(model.marks.iter().cloned().collect()))
    };
    BulkRequest {
        action: Some(action),
        filter,
        tokens,
        by: Some(operator_name()),
        dry_run: true,
        ..BulkRequest::default()
    }
}

/// `p` `r` `c` `R` with marks: ask for the preview.
pub fn open(model: &mut Model, action: BulkAction) -> Vec<Command> {
    send_preview(model, request(model, action))
}

/// The fire form's Enter with marks: ask for the preview of the bulk fire.
pub fn open_fire(
    model: &mut Model,
    event: String,
    payload: Option<Object>,
    key: Option<String>,
) -> Vec<Command> {
    let bulk = BulkRequest {
        event: Some(event),
        payload,
        key,
        ..request(model, BulkAction::Fire)
    };
    send_preview(model, bulk)
}

/// The priority prompt's Enter with marks: ask for the preview of the bulk
/// priority.
pub fn open_priority(model: &mut Model, priority: i64) -> Vec<Command> {
    let bulk = BulkRequest {
        priority: Some(priority),
        ..request(model, BulkAction::Priority)
    };
    send_preview(model, bulk)
}

fn send_preview(model: &mut Model, request: BulkRequest) -> Vec<Command> {
    if !model.mark_all && model.marks.len() > MOST_MARKED {
        model.say(
            format!("{} tokens are marked one by one; at most {MOST_MARKED} go that way: use * to act by the filter", model.marks.len()),
            true,
        );
        return Vec::new();
    }
    if !model.in_flight.insert(Fetch::Preview) {
        return Vec::new();
    }
    let action = request.action.map_or("act", BulkAction::as_str);
    model.say(format!("asking what {action} would do..."), false);
    vec![Command::Preview(request)]
}

/// The preview came: the form that asks for the reason and the count.
pub fn previewed(model: &mut Model, request: BulkRequest, answer: Result<BulkAnswer, Problem>) {
    model.in_flight.remove(&Fetch::Preview);
    let Some(preview) = answered(model, answer) else {
        return;
    };
    if preview.count == 0 {
        model.say("no marked token matches any more: nothing to do", true);
        return;
    }
    model.status = None;
    model.mode = Mode::Bulk(Box::new(BulkForm {
        request,
        preview,
        reason: LineEdit::default(),
        typed: LineEdit::default(),
        on_typed: false,
    }));
}

/// A key in the bulk form: Tab switches field; Enter goes ahead once there is a
/// reason and the typed count is the preview's; Esc changes nothing.
pub fn key(model: &mut Model, mut form: Box<BulkForm>, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Esc => {
            model.say("nothing was changed", false);
            return Vec::new();
        }
        KeyCode::Tab | KeyCode::BackTab => form.on_typed = !form.on_typed,
        KeyCode::Enter => match ready(&form) {
            Ok(()) => return run(model, *form),
            Err(problem) => model.say(problem, true),
        },
        _ if form.on_typed => {
            form.typed.key(key);
        }
        _ => {
            form.reason.key(key);
        }
    }
    model.mode = Mode::Bulk(form);
    Vec::new()
}

/// Why the form cannot go ahead yet, or `Ok`.
pub fn ready(form: &BulkForm) -> Result<(), String> {
    if form.reason.text().trim().is_empty() {
        return Err("type a reason: it goes into each token's history".to_string());
    }
    if form.typed.text().trim() != form.preview.count.to_string() {
        return Err(format!("type {} to go ahead", form.preview.count));
    }
    Ok(())
}

fn run(model: &mut Model, form: BulkForm) -> Vec<Command> {
    let mut request = form.request;
    request.dry_run = false;
    request.reason = Some(form.reason.text().trim().to_string());
    let action = request.action.map_or("act", BulkAction::as_str);
    model.say(
        format!("{action}: on {} tokens...", form.preview.count),
        false,
    );
    model.mark_all = false;
    model.marks.clear();
    vec![Command::Run(request)]
}

/// A bulk run went on or ended: the status line tells how far.
pub fn ran(model: &mut Model, so_far: BulkAnswer, done: bool) -> Vec<Command> {
    let action = so_far.action.as_str();
    let line = format!(
        "{action}{}: {} tokens, {} applied, {} refused, {} duplicate, {} skipped",
        if done { " done" } else { "" },
        so_far.count,
        so_far.applied,
        so_far.refused,
        so_far.duplicate,
        so_far.skipped
    );
    let refused = so_far.refused > 0;
    let first = so_far
        .outcomes
        .iter()
        .find(|o| o.code.is_some())
        .map(|o| format!("; {} {}", o.token, o.detail));
    model.say(
        format!("{line}{}", first.filter(|_| refused).unwrap_or_default()),
        refused,
    );
    model.running = if done { None } else { Some(so_far) };
    if done {
        // A read that left before the run would show the tokens as they were.
        model.in_flight.remove(&Fetch::Tokens);
        refresh(model)
    } else {
        Vec::new()
    }
}

/// A bulk run stopped on a refusal of its request.
pub fn failed(model: &mut Model, problem: &Problem) {
    model.running = None;
    model.say(
        format!("the bulk action stopped: {}", describe(problem)),
        true,
    );
}

/// `R` without marks: retry the selected token, when it failed.
pub fn retry(model: &mut Model) -> Vec<Command> {
    let Some(token) = crate::keys::selected_or_say(model) else {
        return Vec::new();
    };
    let status = model
        .shown()
        .into_iter()
        .find(|t| t.token == token)
        .map(|t| t.status.clone())
        .unwrap_or_default();
    if status != "failed" {
        model.say(
            format!("{token} is {status}: only a failed token is retried"),
            true,
        );
        return Vec::new();
    }
    model.say(format!("retrying {token}..."), false);
    vec![Command::Retry(token)]
}

/// What `/` typed: a filter of the filter language when it has an operator or
/// a keyword of one and parses (`state == 'review' and moved > 600`), else the
/// plain text search and `status:NAME` words. Text that looks like a filter
/// but does not parse keeps the old filters and says the parser's sentence.
pub enum Typed {
    /// A filter of the filter language.
    Filter(String),
    /// Plain text (and `status:` words).
    Text(String),
    /// A filter that does not parse: the sentence.
    Wrong(String),
}

/// Read what `/` typed.
pub fn typed_filter(typed: &str) -> Typed {
    let text = typed.trim();
    let looks = text.contains(['=', '<', '>', '!', '[', '('])
        || text
            .split_whitespace()
            .any(|w| ["and", "or", "not", "in"].contains(&w));
    if !looks {
        return Typed::Text(typed.to_string());
    }
    match parse_filter(text) {
        Ok(_) => Typed::Filter(text.to_string()),
        Err(error) => Typed::Wrong(error.0),
    }
}
