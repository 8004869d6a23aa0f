//! The four panes of the main screen: tokens, detail, history, supervisors.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use stateous_shared::history::{named, short, token_line};
use stateous_shared::live::TokenDetail;

use super::format::{age, clock, history_line, seconds_until, span};
use crate::model::{Model, Supervisors};

/// A supervisor not heard from for this long is marked stale: the default lease
/// (2 minutes), after which its tasks go to others anyway.
pub const STALE_SECONDS: i64 = 120;

fn status_color(status: &str) -> Color {
    match status {
        "active" => Color::Green,
        "paused" => Color::Yellow,
        "failed" => Color::Red,
        "cancelled" => Color::DarkGray,
        _ => Color::Reset,
    }
}

/// The tokens table: the rows on screen only.
pub fn tokens(model: &Model, frame: &mut Frame, area: Rect) {
    let shown = model.shown();
    let rows_fit = usize::from(area.height.saturating_sub(3));
    let rows = shown
        .iter()
        .enumerate()
        .skip(model.scroll)
        .take(rows_fit)
        .map(|(at, token)| {
            let style = if at == model.cursor {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            let visit = if token.visit > 1 {
                format!(" ({})", token.visit)
            } else {
                String::new()
            };
            Row::new(vec![
                token.token.clone(),
                format!("{}{visit}", named(&token.state)),
                token.status.clone(),
                age(model, &token.entered_at),
            ])
            .style(style.fg(status_color(&token.status)))
        });
    let status = model.status_filter.unwrap_or("all");
    let text = if model.text_filter.is_empty() {
        String::new()
    } else {
        format!(", text '{}'", model.text_filter)
    };
    let title = format!(" Tokens: {} shown (status {status}{text}) ", shown.len());
    let widths = [
        Constraint::Fill(3),
        Constraint::Fill(2),
        Constraint::Length(9),
        Constraint::Length(6),
    ];
    let header = Row::new(vec!["token", "state", "status", "moved"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
}

/// The selected token's detail: its line, context, tasks, timers, held events and
/// children.
pub fn detail(model: &Model, frame: &mut Frame, area: Rect) {
    let block = Block::default().borders(Borders::ALL).title(" Token ");
    let lines = match (&model.detail, model.selected()) {
        (Some(detail), Some(id)) if detail.token.token == id => detail_lines(model, detail),
        (_, Some(id)) => vec![Line::from(format!("reading {id}..."))],
        (_, None) => vec![Line::from("no token is selected")],
    };
    let text = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false });
    frame.render_widget(text, area);
}

fn detail_lines(model: &Model, detail: &TokenDetail) -> Vec<Line<'static>> {
    let token = &detail.token;
    let mut lines = vec![
        Line::styled(
            token_line(token),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::from(format!(
            "entered   {} ({} ago)",
            clock(model, &token.entered_at),
            age(model, &token.entered_at)
        )),
    ];
    if let Some(parent) = &token.parent {
        lines.push(Line::from(format!("parent    {parent}")));
    }
    let context = short(&serde_json::Value::Object(token.context.clone()));
    lines.push(Line::from(format!("context   {context}")));
    if model.detail_route == Some(false) {
        lines.push(Line::from(
            "tasks     (this control plane does not list them)",
        ));
    } else {
        lines.extend(work_lines(model, detail));
    }
    for child in &model.children {
        lines.push(Line::from(format!("child     {}", token_line(child))));
    }
    lines
}

/// The tasks with their lease countdown, the timers, the held events.
fn work_lines(model: &Model, detail: &TokenDetail) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for task in &detail.tasks {
        let holder = task
            .holder
            .as_deref()
            .map_or(String::new(), |h| format!(", {h}"));
        let lease = task
            .lease_until
            .as_deref()
            .and_then(|until| seconds_until(model.now, until))
            .map_or(String::new(), |left| format!(", lease {}", span(left)));
        lines.push(Line::from(format!(
            "task      {} {} {}, attempt {}{holder}{lease}",
            task.task, task.state, task.status, task.attempt
        )));
    }
    for timer in &detail.timers {
        let left = seconds_until(model.now, &timer.due_at).map_or("?".into(), span);
        lines.push(Line::from(format!(
            "timer     {} at {} (in {left})",
            timer.event,
            clock(model, &timer.due_at)
        )));
    }
    for held in &detail.held {
        let payload = held.payload.as_ref().map_or(String::new(), |p| {
            format!(" {}", short(&serde_json::Value::Object(p.clone())))
        });
        lines.push(Line::from(format!("held      {}{payload}", held.event)));
    }
    if lines.is_empty() {
        lines.push(Line::from(
            "tasks     none running; no timers; nothing held",
        ));
    }
    lines
}

/// The selected token's history, its newest lines at the bottom.
pub fn history(model: &Model, frame: &mut Frame, area: Rect) {
    let selected = model.selected();
    let ours = selected.is_some() && model.history_of == selected;
    let title = match (&selected, ours) {
        (Some(id), true) => format!(" History of {id}: {} entries ", model.history.len()),
        _ => " History ".to_string(),
    };
    let fit = usize::from(area.height.saturating_sub(2));
    let lines: Vec<Line> = if ours {
        let skip = model.history.len().saturating_sub(fit);
        model.history[skip..]
            .iter()
            .map(|entry| Line::from(history_line(model, entry)))
            .collect()
    } else {
        Vec::new()
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The supervisors pane: running tasks, outbox depth, last seen; stale ones marked.
pub fn supervisors(model: &Model, frame: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Supervisors ");
    let list = match &model.supervisors {
        Supervisors::Seen(list) if !list.is_empty() => list,
        other => {
            let line = match other {
                Supervisors::Unsupported => "this control plane does not list its supervisors",
                Supervisors::Seen(_) => "no supervisor has claimed yet",
                Supervisors::Unknown => "reading...",
            };
            frame.render_widget(Paragraph::new(line).block(block), area);
            return;
        }
    };
    let rows = list.iter().map(|s| {
        let since = seconds_until(model.now, &s.last_seen).map(|left| -left);
        let stale = since.is_some_and(|since| since > STALE_SECONDS);
        let seen = since.map_or("?".to_string(), span);
        let mark = if stale { "stale" } else { "" };
        let outbox = s.outbox.map_or("?".to_string(), |d| d.to_string());
        let style = if stale {
            Style::default().fg(Color::Red)
        } else {
            Style::default()
        };
        Row::new(vec![
            s.name.clone(),
            s.states.join(", "),
            s.running.to_string(),
            outbox,
            format!("{seen} ago"),
            mark.to_string(),
        ])
        .style(style)
    });
    let widths = [
        Constraint::Fill(2),
        Constraint::Fill(3),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(5),
    ];
    let header = Row::new(vec!["name", "states", "running", "outbox", "last seen", ""])
        .style(Style::default().add_modifier(Modifier::BOLD));
    frame.render_widget(Table::new(rows, widths).header(header).block(block), area);
}
