//! `L`: the pools view (`crate::pools`): a line per limit on claims with its slots
//! used of its max, the tasks waiting, its key expression and rate, and a line per
//! key holding slots; a full pool in yellow.

use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::Frame;

use super::fg;
use super::popups::{fit, listed, popup};
use crate::model::Model;

/// Draw the view.
pub fn pools(model: &Model, frame: &mut Frame) {
    let width = frame.area().width.saturating_sub(4);
    let inner = usize::from(width.saturating_sub(2));
    let title = " Limits' pools (Esc closes) ";
    let reading = ("reading the limits".to_string(), 50);
    let none = "no limit: stateous limit set NAME --states S --max N sets one";
    let Some(all) = listed(frame, title, model.pools.as_deref(), reading, (none, 64)) else {
        return;
    };
    let mut lines = Vec::new();
    for limit in all {
        let full = limit.per.is_none() && limit.used >= limit.max;
        for (at, text) in crate::pools::lines(limit).into_iter().enumerate() {
            let style = if at == 0 && full {
                fg(model, Color::Yellow)
            } else {
                Style::default()
            };
            lines.push(Line::styled(fit(&text, inner), style));
        }
    }
    popup(frame, lines, title.into(), width);
}
