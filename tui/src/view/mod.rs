//! `view`: the model drawn on a frame. Pure: it reads the model and nothing else
//! (no clock, no I/O), so a snapshot of it on a test backend is exact.
//!
//! The screen, top to bottom: a title line; the tokens table beside the selected
//! token's detail and history; the supervisors pane; the status line. Popups (help,
//! graph, the fire and start forms) are drawn over it.

mod format;
mod graph;
mod panes;
mod popups;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::model::{Connection, Mode, Model, StreamState};

pub use format::{age, clock, history_line};
pub use graph::graph_lines;

/// The rows of the supervisors pane, borders and header included.
const SUPERVISOR_ROWS: u16 = 6;

/// The parts of the screen at `area`.
struct Areas {
    title: Rect,
    tokens: Rect,
    detail: Rect,
    history: Rect,
    supervisors: Rect,
    status: Rect,
}

fn areas(area: Rect) -> Areas {
    let [title, main, supervisors, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(SUPERVISOR_ROWS),
        Constraint::Length(1),
    ])
    .areas(area);
    let [tokens, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(main);
    let [detail, history] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
    Areas {
        title,
        tokens,
        detail,
        history,
        supervisors,
        status,
    }
}

/// How many token rows the table shows on a terminal of `size` (columns, rows):
/// `update` asks the daemon for only as many as fit, plus a page.
pub fn table_rows(size: (u16, u16)) -> usize {
    let area = areas(Rect::new(0, 0, size.0, size.1));
    // Less the two borders and the header.
    usize::from(area.tokens.height.saturating_sub(3))
}

/// Draw `model` on `frame`.
pub fn view(model: &Model, frame: &mut Frame) {
    let area = areas(frame.area());
    frame.render_widget(title(model), area.title);
    panes::tokens(model, frame, area.tokens);
    panes::detail(model, frame, area.detail);
    panes::history(model, frame, area.history);
    panes::supervisors(model, frame, area.supervisors);
    frame.render_widget(status(model), area.status);
    match &model.mode {
        Mode::Help => popups::help(frame),
        Mode::Graph => popups::graph(model, frame),
        Mode::Pick { token, events, at } => popups::pick(frame, token, events, *at),
        Mode::Fire(form) => popups::fire(model, frame, form),
        Mode::Start(form) => popups::start(model, frame, form),
        Mode::Normal | Mode::Filter(_) | Mode::Confirm(_) => {}
    }
}

fn title(model: &Model) -> Paragraph<'static> {
    let workflow = model
        .graph
        .as_ref()
        .map_or_else(|| "?".to_string(), |g| g.main.name.clone());
    let (mark, color) = match &model.connection {
        Connection::Connecting => ("connecting".to_string(), Color::Yellow),
        Connection::Connected => ("connected".to_string(), Color::Green),
        Connection::Lost(_) => ("reconnecting".to_string(), Color::Red),
    };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let stream = match model.stream {
        StreamState::Live => ", live",
        StreamState::Off | StreamState::Unsupported => ", polling",
    };
    Paragraph::new(Line::from(vec![
        Span::styled(" stateous ", bold),
        Span::raw(format!(" workflow {workflow}  {}  ", model.url)),
        Span::styled(mark, Style::default().fg(color)),
        Span::raw(stream),
        Span::raw("   ? keys  q quit"),
    ]))
}

fn status(model: &Model) -> Paragraph<'static> {
    if let Mode::Filter(edit) = &model.mode {
        return Paragraph::new(format!(
            "filter: {}▏  Enter applies, Esc clears",
            edit.text()
        ));
    }
    if let Connection::Lost(why) = &model.connection {
        let line = format!("cannot reach {}: {why}; trying again", model.url);
        return Paragraph::new(line).style(Style::default().fg(Color::Red));
    }
    match &model.status {
        Some(status) if status.error => {
            Paragraph::new(status.text.clone()).style(Style::default().fg(Color::Red))
        }
        Some(status) => Paragraph::new(status.text.clone()),
        None => Paragraph::new(""),
    }
}
