//! What is drawn over the main screen: help, the graph, the event picker, the
//! fire form and the start form.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::fg;
use super::graph::graph_lines;
use crate::forms::{payload_check, start_check};
use crate::input::LineEdit;
use crate::model::{FireForm, Model, StartForm};

/// The keys, as `?` shows them.
pub const HELP: [&str; 19] = [
    "↑ ↓  j k      move; J K: a page; g G: top, bottom",
    "Enter         the selected token on the whole screen (Esc back)",
    "PgUp PgDn     scroll its history; Home: the first entry,",
    "Home End      End: the last, and follow new entries",
    "/             filter: text of id, state, context; status:NAME",
    "              Enter applies, Esc clears; t: the next status",
    "p             pause the selected token",
    "r             resume it",
    "c             cancel it (asks first)",
    "f             fire an event: pick it, type its payload,",
    "              Tab to the idempotency key, Enter sends",
    "s             start a token: its id, Tab, its context",
    "z             times in UTC or in local time",
    "w             the workflow graph",
    "?             these keys",
    "Esc           clear the status line; close a form",
    "q  Ctrl-C     quit",
    "",
    "any key closes this",
];

/// The first line of the help when no key may change a token.
const READ_ONLY: &str = "read-only: p r c f s are off (--read-only, STATEOUS_READ_ONLY)";

/// A box of `width` by `height` in the middle of `area` (cut to fit).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(row);
    cell
}

fn popup(frame: &mut Frame, lines: Vec<Line<'static>>, title: String, width: u16) {
    let height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let area = centered(frame.area(), width, height);
    let block = Block::default().borders(Borders::ALL).title(title);
    frame.render_widget(Clear, area);
    let text = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false });
    frame.render_widget(text, area);
}

/// `?`.
pub fn help(model: &Model, frame: &mut Frame) {
    let mut lines: Vec<Line> = HELP.iter().map(|line| Line::from(*line)).collect();
    if model.read_only {
        let style = Style::default().add_modifier(Modifier::REVERSED);
        lines.insert(0, Line::styled(READ_ONLY, style));
    }
    popup(frame, lines, " Keys ".into(), 68);
}

/// `w`: the workflow graph, the selected token's state marked.
pub fn graph(model: &Model, frame: &mut Frame) {
    let lines = match &model.graph {
        Some(graph) => {
            let state = model
                .detail
                .as_ref()
                .filter(|d| Some(&d.token.token) == model.selected().as_ref())
                .map(|d| d.token.state.clone());
            graph_lines(graph, state.as_deref())
                .into_iter()
                .map(Line::from)
                .collect()
        }
        None => vec![Line::from("the workflow is not read yet")],
    };
    let width = frame.area().width.saturating_sub(4);
    popup(frame, lines, " Workflow (any key closes) ".into(), width);
}

/// `f`, first step.
pub fn pick(frame: &mut Frame, token: &str, events: &[String], at: usize) {
    let mut lines: Vec<Line> = events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            if i == at {
                Line::styled(
                    format!("> {event}"),
                    Style::default().add_modifier(Modifier::REVERSED),
                )
            } else {
                Line::from(format!("  {event}"))
            }
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from("Enter picks, Esc gives up"));
    popup(frame, lines, format!(" Fire on {token}: which event? "), 48);
}

/// A field with a cursor mark when it has the focus.
fn field(label: &str, edit: &LineEdit, focused: bool) -> Line<'static> {
    let text = if focused {
        let (before, after): (String, String) = {
            let chars: Vec<char> = edit.text().chars().collect();
            let (a, b) = chars.split_at(edit.cursor().min(chars.len()));
            (a.iter().collect(), b.iter().collect())
        };
        format!("{label}{before}▏{after}")
    } else {
        format!("{label}{}", edit.text())
    };
    let style = if focused {
        Style::default().add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    Line::styled(text, style)
}

/// A check line: green when the form can be sent, red with the first problem
/// (its ✓ or ✗ says the same without colour).
fn check(model: &Model, result: Result<String, String>) -> Line<'static> {
    match result {
        Ok(line) => Line::styled(line, fg(model, Color::Green)),
        Err(problem) => Line::styled(format!("✗ {problem}"), fg(model, Color::Red)),
    }
}

/// `f`, second step: the payload, checked against the event's schema as typed.
pub fn fire(model: &Model, frame: &mut Frame, form: &FireForm) {
    let model_name = model
        .graph
        .as_ref()
        .and_then(|g| g.main.events.get(&form.event).cloned().flatten());
    let schema = match &model_name {
        Some(name) => format!("payload model: {name}"),
        None => "this event carries no payload".to_string(),
    };
    let lines = vec![
        Line::from(schema),
        field("payload  ", &form.payload, !form.on_key),
        field("key      ", &form.key, form.on_key),
        check(
            model,
            payload_check(model, form).map(|_| "✓ the payload fits".to_string()),
        ),
        Line::from(""),
        Line::from("Tab switches field, Enter sends, Esc gives up"),
    ];
    let title = format!(" Fire {} on {} ", form.event, form.token);
    popup(frame, lines, title, 72);
}

/// `s`: a new token's id and context.
pub fn start(model: &Model, frame: &mut Frame, form: &StartForm) {
    let lines = vec![
        field("token    ", &form.id, !form.on_context),
        field("context  ", &form.context, form.on_context),
        check(
            model,
            start_check(model, form).map(|(id, _)| format!("✓ ready to start {id}")),
        ),
        Line::from(""),
        Line::from("Tab switches field, Enter starts, Esc gives up"),
    ];
    popup(frame, lines, " Start a token ".into(), 72);
}
