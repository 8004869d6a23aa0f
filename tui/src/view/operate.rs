//! What the TUI draws of operating many tokens: the bulk action's
//! preview (a popup asking for the reason and the typed count), and the "why"
//! lines of the token pane.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;
use stateous_shared::bulk::{outcome_line, would_line};
use stateous_shared::history::named;

use super::fg;
use super::popups::{check, field, popup};
use crate::model::{BulkForm, Model};

/// The most sample rows the preview shows.
const SAMPLE_ROWS: usize = 10;

/// The preview of a bulk action: the count and what the first tokens get, the
/// reason and the count to type.
pub fn bulk(model: &Model, frame: &mut Frame, form: &BulkForm) {
    let preview = &form.preview;
    let action = preview.action.as_str();
    let which = match (&form.request.filter, &form.request.tokens) {
        (Some(filter), _) => format!("where {filter}"),
        (None, Some(tokens)) => format!("{} marked", tokens.len()),
        (None, None) => String::new(),
    };
    let count = preview.count;
    let mut lines = vec![Line::styled(
        format!("{action}: {count} {} ({which})", tokens(count)),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for outcome in preview.sample.iter().take(SAMPLE_ROWS) {
        let color = if outcome.code.is_some() {
            Color::Red
        } else {
            Color::Reset
        };
        lines.push(Line::styled(
            format!("  {}", outcome_line(outcome)),
            fg(model, color),
        ));
    }
    let shown = preview.sample.len().min(SAMPLE_ROWS) as i64;
    if count > shown {
        lines.push(Line::from(format!("  ... and {} more", count - shown)));
    }
    let counted = would_line(preview, "a filter that names a status takes them in");
    let color = if preview.refused > 0 {
        Color::Red
    } else {
        Color::Reset
    };
    lines.push(Line::styled(counted, fg(model, color)));
    lines.push(Line::from(""));
    lines.push(field("reason   ", &form.reason, !form.on_typed));
    lines.push(field("count    ", &form.typed, form.on_typed));
    let ready = crate::marks::ready(form).map(|()| format!("✓ ready to {action} {count}"));
    lines.push(check(model, ready));
    lines.push(Line::from(""));
    lines.push(Line::from(
        "Tab switches field, Enter goes ahead, Esc changes nothing",
    ));
    let width = frame.area().width.saturating_sub(4).min(100);
    popup(
        frame,
        lines,
        format!(" {action} the marked tokens? "),
        width,
    );
}

fn tokens(count: i64) -> &'static str {
    if count == 1 {
        "token"
    } else {
        "tokens"
    }
}

/// The token pane's "why" lines: each reason, then each guarded transition with
/// its value on the context, and a join's progress.
pub fn why_lines(model: &Model) -> Vec<Line<'static>> {
    let Some(why) = &model.why else {
        return Vec::new();
    };
    if model.selected().as_deref() != Some(why.token.token.as_str()) {
        return Vec::new();
    }
    let mut lines: Vec<Line<'static>> = why
        .reasons
        .iter()
        .map(|reason| Line::styled(format!("why       {reason}"), fg(model, Color::Cyan)))
        .collect();
    for t in &why.transitions {
        let Some(guard) = &t.guard else {
            continue;
        };
        let value = match t.holds {
            Some(true) => "true".to_string(),
            Some(false) => "false".to_string(),
            None => "decided by the payload".to_string(),
        };
        lines.push(Line::from(format!(
            "guard     {} -> {}: {value} ({guard})",
            t.event,
            named(&t.to)
        )));
    }
    if let Some(join) = &why.join {
        lines.push(Line::from(format!(
            "join      {}: {} of {} children ended",
            join.join, join.ended, join.children
        )));
    }
    lines
}
