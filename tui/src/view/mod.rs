//! `view`: the model drawn on a frame. Pure: it reads the model and nothing else
//! (no clock, no I/O), so a snapshot of it on a test backend is exact.
//!
//! The screen, top to bottom: a title line; the tokens table beside the selected
//! token's detail and history (stacked under it below [`WIDE`] columns; Enter
//! gives the token the whole main area); the supervisors pane, as tall as its
//! supervisors; the status line. Popups (help, graph, the fire and start forms)
//! are drawn over it. A pane whose text does not fit says how much is left out.

mod format;
mod graph;
mod notifications;
mod operate;
mod panes;
mod pools;
mod popups;
mod schedules;
mod wrap;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::model::{Connection, Mode, Model, StreamState, Supervisors};

pub use format::{age, clock, history_line};
pub use graph::{graph_rows, GraphRow, RowKind};
pub use panes::{detail_rows, history_rows};
pub use wrap::wrap;

/// From this many columns on, the token's panes sit beside the table; below,
/// they are stacked under it, so that each keeps the whole width.
pub const WIDE: u16 = 80;

/// The fewest rows of the supervisors pane: borders and one line.
const SUPERVISORS_LEAST: u16 = 3;

/// The smallest terminal the panes are drawn in, columns and rows; a smaller one
/// gets a sentence that says so instead of panes too small to read.
pub const LEAST: (u16, u16) = (60, 20);

/// The most rows the status line grows to, so that a long refusal is read whole
/// on a narrow terminal.
const STATUS_MOST: u16 = 3;

/// The parts of the screen at `area`.
struct Areas {
    title: Rect,
    /// Empty while the token has the main area (Enter).
    tokens: Rect,
    detail: Rect,
    history: Rect,
    supervisors: Rect,
    status: Rect,
}

fn areas(model: &Model, area: Rect, zoom: bool) -> Areas {
    let [title, main, supervisors, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(if model.full {
            0
        } else {
            supervisor_rows(model, area.height)
        }),
        Constraint::Length(status_rows(model, area.width)),
    ])
    .areas(area);
    let (tokens, detail, history) = if zoom {
        // The detail as tall as its text, leaving the history three rows or more.
        let text = detail_rows(model, usize::from(main.width.saturating_sub(2))).len();
        let wanted = u16::try_from(text).unwrap_or(u16::MAX).saturating_add(2);
        let [detail, history] =
            Layout::vertical([Constraint::Max(wanted), Constraint::Min(3)]).areas(main);
        (Rect::default(), detail, history)
    } else if area.width >= WIDE {
        let [tokens, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(main);
        let [detail, history] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
        (tokens, detail, history)
    } else {
        let [tokens, detail, history] = Layout::vertical([
            Constraint::Percentage(40),
            Constraint::Percentage(35),
            Constraint::Percentage(25),
        ])
        .areas(main);
        (tokens, detail, history)
    };
    Areas {
        title,
        tokens,
        detail,
        history,
        supervisors,
        status,
    }
}

/// The supervisors pane grows with the supervisors (a row each, under borders
/// and a header), up to about a quarter of the screen, less on a short one; the
/// rest are counted in its title.
fn supervisor_rows(model: &Model, height: u16) -> u16 {
    let wanted = match &model.supervisors {
        Supervisors::Seen(list) if !list.supervisors.is_empty() || !list.stopped.is_empty() => {
            u16::try_from(list.supervisors.len() + list.stopped.len())
                .unwrap_or(u16::MAX)
                .saturating_add(3)
        }
        _ => SUPERVISORS_LEAST,
    };
    wanted.min((height.saturating_sub(4) / 4).max(SUPERVISORS_LEAST))
}

/// How many token rows the table shows for `model`'s terminal size (as when the
/// token does not have the main area): `update` asks the daemon for only as many
/// as fit, plus a page.
pub fn table_rows(model: &Model) -> usize {
    let area = areas(model, screen(model), false);
    // Less the two borders and the header.
    usize::from(area.tokens.height.saturating_sub(3))
}

/// How many rows of text the history pane shows now: a page for PgUp and PgDn.
pub fn history_page(model: &Model) -> usize {
    let area = areas(model, screen(model), model.zoom);
    usize::from(area.history.height.saturating_sub(2))
}

/// The width of the history pane's text now, for [`history_rows`].
pub fn history_width(model: &Model) -> usize {
    let area = areas(model, screen(model), model.zoom);
    usize::from(area.history.width.saturating_sub(2))
}

/// How many lines of the describe view show at once: a page for PgUp and PgDn.
pub fn describe_page(model: &Model) -> usize {
    let area = describe_area(model, screen(model));
    usize::from(area.height.saturating_sub(2))
}

/// The width of the describe view's text now, for `crate::describe::lines`.
pub fn describe_width(model: &Model) -> usize {
    let area = describe_area(model, screen(model));
    usize::from(area.width.saturating_sub(2))
}

/// The describe view covers the main area and the supervisors pane: all but the
/// title and the status line.
fn describe_area(model: &Model, area: Rect) -> Rect {
    let areas = areas(model, area, false);
    Rect::new(
        area.x,
        areas.title.bottom(),
        area.width,
        areas.status.y.saturating_sub(areas.title.bottom()),
    )
}

/// `d` or Enter: the selected token's JSON from row `top` on, wrapped at the
/// pane's width; the title counts the rows and names the keys.
fn describe(model: &Model, frame: &mut Frame, top: usize) {
    let area = describe_area(model, frame.area());
    let text = crate::describe::lines(model);
    let page = usize::from(area.height.saturating_sub(2));
    let top = top.min(text.len().saturating_sub(page));
    let last = (top + page).min(text.len());
    let name = model.selected().unwrap_or_default();
    let title = format!(
        " {name} as JSON, rows {}-{last} of {} (↑↓ PgUp PgDn Home End; y copies; Esc back) ",
        (top + 1).min(last),
        text.len()
    );
    let lines: Vec<Line> = text[top..last]
        .iter()
        .map(|line| Line::from(line.clone()))
        .collect();
    let block = ratatui::widgets::Block::default()
        .borders(ratatui::widgets::Borders::ALL)
        .title(title);
    frame.render_widget(ratatui::widgets::Clear, area);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn screen(model: &Model) -> Rect {
    Rect::new(0, 0, model.size.0, model.size.1)
}

/// A style with `color` as its foreground, or none under `NO_COLOR`.
pub fn fg(model: &Model, color: Color) -> Style {
    if model.color {
        Style::default().fg(color)
    } else {
        Style::default()
    }
}

/// Draw `model` on `frame`.
pub fn view(model: &Model, frame: &mut Frame) {
    let (columns, rows) = (frame.area().width, frame.area().height);
    if columns < LEAST.0 || rows < LEAST.1 {
        let text = format!(
            "The terminal is {columns}x{rows}; Stateous needs at least {}x{}. Make it \
             larger, or press q to quit.",
            LEAST.0, LEAST.1
        );
        let lines: Vec<Line> = wrap(&text, usize::from(columns), 0)
            .into_iter()
            .map(Line::from)
            .collect();
        frame.render_widget(Paragraph::new(lines), frame.area());
        return;
    }
    let area = areas(model, frame.area(), model.zoom);
    frame.render_widget(title(model), area.title);
    if !model.zoom {
        panes::tokens(model, frame, area.tokens);
    }
    panes::detail(model, frame, area.detail);
    panes::history(model, frame, area.history);
    if !model.full {
        panes::supervisors(model, frame, area.supervisors);
    }
    frame.render_widget(status(model, area.status.width), area.status);
    match &model.mode {
        Mode::Help => popups::help(model, frame),
        Mode::Graph => popups::graph(model, frame),
        Mode::Pick { token, events, at } => popups::pick(frame, token, events, *at),
        Mode::Fire(form) => popups::fire(model, frame, form),
        Mode::Start(form) => popups::start(model, frame, form),
        Mode::Bulk(form) => operate::bulk(model, frame, form),
        Mode::Describe(top) => describe(model, frame, *top),
        Mode::Schedules => schedules::schedules(model, frame),
        Mode::Pools => pools::pools(model, frame),
        Mode::Notifications => notifications::notifications(model, frame),
        Mode::Normal | Mode::Filter(_) | Mode::Priority(_) | Mode::Confirm(_) => {}
    }
}

/// The title line: what is served, whether it answers, and the modes that change
/// what keys do or how times read; the URL last, since it is the longest.
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
    let mut spans = vec![
        Span::styled(" stateous ", bold),
        Span::raw(format!(" workflow {workflow}  ")),
        Span::styled(mark, fg(model, color)),
        Span::raw(stream),
    ];
    if let Some(clock) = &model.dev_clock {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(
            format!(" {} ", clock.label()),
            fg(model, Color::Yellow).add_modifier(Modifier::REVERSED),
        ));
    }
    if model.read_only {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(
            " read-only ",
            Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
    }
    let zone = if model.utc { "UTC" } else { "local time" };
    spans.push(Span::raw(format!("  {zone}  ? keys  {}", model.url)));
    if model.addresses.len() > 1 {
        let at = model.addresses.iter().position(|url| *url == model.url);
        let of = model.addresses.len();
        spans.push(Span::raw(match at {
            Some(at) => format!(" ({} of {of})", at + 1),
            None => format!(" (of {of})"),
        }));
    }
    Paragraph::new(Line::from(spans))
}

/// The status line's text, and whether it tells of a problem.
fn status_text(model: &Model) -> (String, bool) {
    if let Mode::Filter(edit) = &model.mode {
        return (
            format!("filter: {}▏  Enter applies, Esc clears", edit.text()),
            false,
        );
    }
    if let Mode::Priority(edit) = &model.mode {
        let marked = crate::marks::has_marks(model);
        let whose = match crate::marks::marked_count(model) {
            _ if !marked => model.selected().unwrap_or_default(),
            Some(1) => "the marked token".to_string(),
            Some(n) => format!("the {n} marked tokens"),
            None => "the marked tokens".to_string(),
        };
        return (
            format!(
                "priority of {whose}: {}▏  Enter sets it (higher is claimed first), Esc leaves it",
                edit.text()
            ),
            false,
        );
    }
    if let Connection::Lost(why) = &model.connection {
        return (
            format!("cannot reach {}: {why}; trying again", model.url),
            true,
        );
    }
    match &model.status {
        Some(status) => (status.text.clone(), status.error),
        None => (String::new(), false),
    }
}

/// The rows the status line takes at `width` columns: its text wrapped, one row
/// at least and [`STATUS_MOST`] at the most.
fn status_rows(model: &Model, width: u16) -> u16 {
    let (text, _) = status_text(model);
    let rows = wrap(&text, usize::from(width), 0).len();
    u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .clamp(1, STATUS_MOST)
}

fn status(model: &Model, width: u16) -> Paragraph<'static> {
    let (text, error) = status_text(model);
    let lines: Vec<Line> = wrap(&text, usize::from(width), 0)
        .into_iter()
        .map(Line::from)
        .collect();
    let paragraph = Paragraph::new(lines);
    if error {
        paragraph.style(fg(model, Color::Red))
    } else {
        paragraph
    }
}
