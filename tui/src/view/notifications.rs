//! `N`: the notifications view (`crate::notifications`): a row per subscription
//! (its name, status, format, its pending, retrying, delivered and dead counts,
//! and its URL, after `unreachable` while its queue waits for a receiver it
//! could not reach), the picked one in reverse video, a paused one in yellow
//! and one with dead notifications or an unreachable receiver in red; then
//! what the picked one is about, and since when and why its receiver cannot
//! be reached.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;
use stateous_shared::durations::span;
use stateous_shared::notify::SubscriptionView;

use super::fg;
use super::format::clock;
use super::popups::{fit, listed, popup_at};
use crate::model::Model;

/// The columns of a row before the URL: name, status, format, then the counts
/// (right-aligned).
const WIDTHS: [usize; 3] = [12, 7, 6];

/// The width of each count's column: its heading's.
const COUNTS: [usize; 4] = [7, 8, 9, 4];

const TITLE: &str = " Notifications (Esc closes) ";

/// Draw the view.
pub fn notifications(model: &Model, frame: &mut Frame) {
    let width = frame.area().width.saturating_sub(4);
    let inner = usize::from(width.saturating_sub(2));
    let reading = match &model.subscriptions_refused {
        Some(sentence) => format!("refused: {sentence}"),
        None => "reading the subscriptions".to_string(),
    };
    let none = "no subscription: stateous notify add NAME URL adds one";
    let list = model.subscriptions.as_deref();
    let Some(all) = listed(frame, TITLE, list, (reading, 60), (none, 60)) else {
        return;
    };
    let row = |cells: [&str; 3], counts: [&str; 4], url: &str| {
        let mut text = String::new();
        for (cell, width) in cells.iter().zip(WIDTHS) {
            text.push_str(&fit(cell, width));
            text.push(' ');
        }
        for (count, width) in counts.iter().zip(COUNTS) {
            text.push_str(&format!("{count:>width$} "));
        }
        text.push_str(url);
        fit(&text, inner)
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled(
        row(
            ["NAME", "STATUS", "FORMAT"],
            ["PENDING", "RETRYING", "DELIVERED", "DEAD"],
            "URL",
        ),
        bold,
    )];
    for (at, subscription) in all.iter().enumerate() {
        let counts = &subscription.counts;
        let url = match subscription.unreachable {
            Some(_) => format!("unreachable {}", subscription.url),
            None => subscription.url.clone(),
        };
        let text = row(
            [
                &subscription.name,
                &subscription.status,
                &subscription.format,
            ],
            [
                &counts.pending.to_string(),
                &counts.retrying.to_string(),
                &counts.delivered.to_string(),
                &counts.dead.to_string(),
            ],
            &url,
        );
        let mut style = Style::default();
        if counts.dead > 0 || subscription.unreachable.is_some() {
            style = style.patch(fg(model, Color::Red));
        } else if subscription.status == "paused" {
            style = style.patch(fg(model, Color::Yellow));
        }
        if at == model.subscriptions_at {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(text, style));
    }
    if let Some(picked) = crate::notifications::picked(model) {
        lines.push(Line::from(""));
        lines.push(Line::styled(
            fit(&format!("{}: {}", picked.name, about(picked)), inner),
            bold,
        ));
        if let Some(unreachable) = &picked.unreachable {
            // The times in the view's zone; the reason on a line of its own.
            let next = unreachable.next_try.as_deref().map_or_else(
                || "with the next notification".to_string(),
                |at| format!("at {}", clock(model, at)),
            );
            let since = clock(model, &unreachable.since);
            for text in [
                format!("  the receiver cannot be reached since {since}; next try {next}"),
                format!("  reason: {}", unreachable.reason),
            ] {
                lines.push(Line::styled(fit(&text, inner), fg(model, Color::Red)));
            }
        }
        if picked.counts.dead > 0 {
            let text = format!(
                "  {} dead: stateous notify failed lists them, stateous notify redeliver {} sends them again",
                picked.counts.dead, picked.name
            );
            lines.push(Line::styled(fit(&text, inner), fg(model, Color::Red)));
        }
    }
    popup_at(frame, lines, model.subscriptions_at, TITLE.into(), width);
}

/// What a subscription is about, in one line: `completed, failed in review of
/// orders where ctx['x'] > 3`, `no move for 4h in review`.
fn about(view: &SubscriptionView) -> String {
    let mut kinds: Vec<String> = view
        .kinds
        .iter()
        .filter(|kind| kind.as_str() != stateous_shared::notify::NO_MOVE)
        .cloned()
        .collect();
    if let Some(seconds) = view.no_move_seconds {
        kinds.push(format!("no move for {}", span(seconds)));
    }
    let mut text = kinds.join(", ");
    if !view.states.is_empty() {
        text.push_str(&format!(" in {}", view.states.join(", ")));
    }
    if let Some(workflow) = &view.workflow {
        text.push_str(&format!(" of {workflow}"));
    }
    if let Some(filter) = &view.filter {
        text.push_str(&format!(" where {filter}"));
    }
    text
}
