//! `S`: the schedules view (`crate::schedules`): a row per schedule (its name, when,
//! status, next occurrence on its zone's clock, last token and that token's
//! status), the picked one in reverse video, then the picked one's zone and
//! policies, its next occurrences in its zone and in UTC, and its latest skipped
//! occurrences.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

use super::fg;
use super::popups::{fit, listed, popup_at};
use crate::model::Model;

/// The columns of a row before the last token: name, when, status, next.
const WIDTHS: [usize; 4] = [12, 14, 7, 23];

/// Draw the view.
pub fn schedules(model: &Model, frame: &mut Frame) {
    let width = frame.area().width.saturating_sub(4);
    let inner = usize::from(width.saturating_sub(2));
    let title = if model.read_only {
        " Schedules (read-only; Esc closes) "
    } else {
        " Schedules (p pause, r resume, Esc closes) "
    };
    let reading = ("reading the schedules".to_string(), 50);
    let none = "no schedule: stateous schedule add NAME WHEN adds one";
    let Some(all) = listed(
        frame,
        title,
        model.schedules.as_deref(),
        reading,
        (none, 60),
    ) else {
        return;
    };
    let row = |cells: [&str; 5]| {
        let mut text = String::new();
        for (cell, width) in cells.iter().zip(WIDTHS) {
            text.push_str(&fit(cell, width));
            text.push(' ');
        }
        text.push_str(cells[4]);
        fit(&text, inner)
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled(
        row(["NAME", "WHEN", "STATUS", "NEXT", "LAST TOKEN"]),
        bold,
    )];
    for (at, schedule) in all.iter().enumerate() {
        let next = schedule
            .next
            .first()
            .map_or("-".to_string(), |coming| local(&coming.local));
        let last = match (&schedule.last_token, &schedule.last_status) {
            (Some(token), Some(status)) => format!("{token} ({status})"),
            _ => "-".to_string(),
        };
        let text = row([
            &schedule.name,
            &schedule.spec,
            &schedule.status,
            &next,
            &last,
        ]);
        let mut style = Style::default();
        if schedule.status == "paused" {
            style = style.patch(fg(model, Color::Yellow));
        }
        if at == model.schedules_at {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(text, style));
    }
    if let Some(picked) = crate::schedules::picked(model) {
        lines.push(Line::from(""));
        lines.push(Line::styled(
            fit(
                &format!(
                    "{}: {}, overlap {}, catch-up {}",
                    picked.name, picked.zone, picked.overlap, picked.catch_up
                ),
                inner,
            ),
            bold,
        ));
        for coming in &picked.next {
            let text = format!(
                "  next {}  ({})  {}",
                local(&coming.local),
                utc(&coming.at),
                coming.token
            );
            lines.push(Line::from(fit(&text, inner)));
        }
        if let Some(waiting) = &picked.buffered {
            lines.push(Line::from(fit(&format!("  waits {}", utc(waiting)), inner)));
        }
        for skipped in &picked.skipped {
            let text = format!("  skipped {}: {}", utc(&skipped.occurrence), skipped.reason);
            lines.push(Line::styled(fit(&text, inner), fg(model, Color::Yellow)));
        }
    }
    popup_at(frame, lines, model.schedules_at, title.into(), width);
}

/// `2027-03-29 09:00 +02:00`: a moment on its zone's clock, to the minute.
fn local(text: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|moment| moment.format("%Y-%m-%d %H:%M %:z").to_string())
        .unwrap_or_else(|_| text.to_string())
}

/// `2027-03-29 07:00Z`: a moment in UTC, to the minute.
fn utc(text: &str) -> String {
    stateous_shared::time::to_the_minute(text)
}
