//! What is drawn over the main screen: help, the graph, the event picker, the
//! fire form and the start form.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::fg;
use super::graph::{graph_rows, RowKind};
use crate::forms::{payload_check, start_check};
use crate::line_edit::LineEdit;
use crate::model::{FireForm, Model, StartForm};

/// The keys, as `?` shows them.
pub const HELP: [&str; 28] = [
    "↑ ↓  j k      move; J K: a page; g G: top, bottom",
    "d  Enter      the token as JSON, scrolled; y copies it (OSC 52)",
    "v  F          its panes on the whole screen; hide the supervisors",
    "o  O          sort the page shown by the next column; reverse it",
    "PgUp PgDn     scroll its history; Home End: first, last (follows)",
    "/             filter: state == 'review' and moved > 600 and",
    "              ctx['k'] == 'v' (the daemon matches every token),",
    "              or text of id, state, context; status:NAME;",
    "              Enter applies, Esc clears; t: the next status",
    "p             pause the selected token",
    "r             resume it",
    "c             cancel it (asks first)",
    "f             fire an event: pick it, type its payload,",
    "              Tab to the idempotency key, Enter sends",
    "R  P          retry the selected failed token; set its priority",
    "space  *      mark the row; mark every token the filter matches",
    "              (* again clears); then p r c f R P act on the marked",
    "              tokens: a preview, a reason, the count typed;",
    "              M moves them to the served graph the same way",
    "s             start a token: its id, Tab, its context",
    "z             times in UTC or in local time",
    "w             the live state graph; Enter there picks a state",
    "S             the schedules; p r there pause and resume one",
    "L  N          the limits' pools; the notifications, with counts",
    "?             these keys",
    "Esc           clear the status line; close a form",
    "q  Ctrl-C     quit",
    "any key closes this",
];

/// The first line of the help when no key may change a token.
const READ_ONLY: &str = "read-only: p r c f s R M P are off (--read-only, STATEOUS_READ_ONLY)";

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

pub(super) fn popup(frame: &mut Frame, lines: Vec<Line<'static>>, title: String, width: u16) {
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

/// A popup of a view's list whose row `picked` must show: the lines scrolled so
/// that it does, with the row after it (the heading counts as the first line).
pub(super) fn popup_at(
    frame: &mut Frame,
    mut lines: Vec<Line<'static>>,
    picked: usize,
    title: String,
    width: u16,
) {
    let room = usize::from(frame.area().height.saturating_sub(2)).max(1);
    let skip = (picked + 3).saturating_sub(room).min(lines.len());
    let lines = lines.split_off(skip);
    popup(frame, lines, title, width);
}

/// The list a view draws, or, while it is not read yet or holds nothing, a popup of
/// one line that says so, each line with its popup's width: `None` then.
pub(super) fn listed<'a, T>(
    frame: &mut Frame,
    title: &str,
    list: Option<&'a [T]>,
    (reading, reading_width): (String, u16),
    (none, none_width): (&'static str, u16),
) -> Option<&'a [T]> {
    match list {
        None => popup(
            frame,
            vec![Line::from(reading)],
            title.into(),
            reading_width,
        ),
        Some([]) => popup(frame, vec![Line::from(none)], title.into(), none_width),
        Some(all) => return Some(all),
    }
    None
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

/// The width of the counts beside a state: three columns and a change mark.
const COUNTS: usize = 22;

/// `w`: the workflow graph with each state's tokens by status, the selected
/// token's state marked, the picked row in reverse video, and the states whose
/// counts just changed in bold (yellow, with colour) and marked `*`.
pub fn graph(model: &Model, frame: &mut Frame) {
    let Some(graph) = &model.graph else {
        let lines = vec![Line::from("the workflow is not read yet")];
        popup(frame, lines, " Workflow (Esc closes) ".into(), 40);
        return;
    };
    let state = model
        .detail
        .as_ref()
        .filter(|d| Some(&d.token.token) == model.selected().as_ref() && d.token.parent.is_none())
        .map(|d| d.token.state.clone());
    let width = frame.area().width.saturating_sub(4);
    let inner = usize::from(width.saturating_sub(2));
    let left_width = inner.saturating_sub(COUNTS);
    let number = |n: i64| {
        if model.states.is_some() {
            n.to_string()
        } else {
            "-".to_string()
        }
    };
    let mut choice = 0;
    let mut cursor_line = 0;
    let mut lines: Vec<Line> = Vec::new();
    if let Some(older) = crate::states::older_graphs(model) {
        lines.push(Line::styled(fit(&older, inner), fg(model, Color::Yellow)));
    }
    for row in graph_rows(graph, state.as_deref()) {
        let (counts, picked, changed) = match &row.kind {
            RowKind::Title => (" active paused failed ".to_string(), false, false),
            RowKind::Every | RowKind::State(_) => {
                let (counts, changed) = match &row.kind {
                    RowKind::State(key) => (
                        crate::states::counts(model, key),
                        crate::states::highlighted(model, key),
                    ),
                    _ => (every(model), false),
                };
                let picked = choice == model.graph_at;
                if picked {
                    cursor_line = lines.len();
                }
                choice += 1;
                let mark = if changed { '*' } else { ' ' };
                let [active, paused, failed] = counts.map(number);
                let text = format!("{active:>7}{paused:>7}{failed:>7}{mark}");
                (text, picked, changed)
            }
            RowKind::Other => (String::new(), false, false),
        };
        // A transition has the whole width: nothing stands beside it.
        let text = match row.kind {
            RowKind::Other => fit(&row.text, inner),
            _ => format!("{}{counts}", fit(&row.text, left_width)),
        };
        let mut style = Style::default();
        if changed {
            style = style
                .add_modifier(Modifier::BOLD)
                .patch(fg(model, Color::Yellow));
        }
        if picked {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(text, style));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(fit(
        "↑↓ pick a state, Enter: its tokens only, Esc closes",
        inner,
    )));
    // Scrolled so that the picked row shows, the keys' line staying in view.
    let room = usize::from(frame.area().height.saturating_sub(2)).max(1);
    let skip = (cursor_line + 3).saturating_sub(room).min(lines.len());
    let lines = lines.split_off(skip);
    let shown = match &model.state_filter {
        Some((Some(workflow), state)) => format!("{workflow}/{state}"),
        Some((None, state)) => state.clone(),
        None => "every state".to_string(),
    };
    let title = format!(" Workflow: tokens by state, live; the table shows {shown} ");
    popup(frame, lines, title, width);
}

/// The counts of every state: the sums of each column.
fn every(model: &Model) -> [i64; 3] {
    let mut sums = [0; 3];
    for count in model.states.iter().flatten() {
        for (sum, status) in sums.iter_mut().zip(crate::states::COUNTED) {
            *sum += count.tokens.get(status).copied().unwrap_or(0);
        }
    }
    sums
}

/// `text` cut or padded to `width` columns.
pub(super) fn fit(text: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push_str(&" ".repeat(width.saturating_sub(used)));
    out
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
    let on = if token.is_empty() {
        "the marked tokens"
    } else {
        token
    };
    popup(frame, lines, format!(" Fire on {on}: which event? "), 56);
}

/// A field with a cursor mark when it has the focus.
pub(super) fn field(label: &str, edit: &LineEdit, focused: bool) -> Line<'static> {
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
pub(super) fn check(model: &Model, result: Result<String, String>) -> Line<'static> {
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
    let on = if form.token.is_empty() {
        "the marked tokens (a preview first)"
    } else {
        form.token.as_str()
    };
    let title = format!(" Fire {} on {on} ", form.event);
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
