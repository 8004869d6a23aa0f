//! The four panes of the main screen: tokens, detail, history, supervisors.
//! The detail and the history are cut into rows of the pane's width here
//! (`wrap`), so each knows what it leaves out and says so.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;
use stateous_shared::durations::span_packed;
use stateous_shared::history::{named, short, token_line};
use stateous_shared::watch::TokenDetail;

use super::format::{age, clock, history_line, seconds_until};
use super::{fg, wrap::wrap};
use crate::model::{Model, Supervisors};

/// The width of the labels of the detail (`task      `): wrapped rows start there.
const LABEL: usize = 10;

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

/// `, state review` for the table's title; with `of N` when the state holds
/// more tokens of the status filter than the table loaded (it matches the
/// states among the 1000 most recently moved).
fn state_title(model: &Model, key: &crate::model::StateKey) -> String {
    let name = match &key.0 {
        Some(workflow) => format!("{workflow}/{}", key.1),
        None => key.1.clone(),
    };
    let held: i64 = model
        .states
        .iter()
        .flatten()
        .filter(|s| s.workflow == key.0 && s.state == key.1)
        .flat_map(|s| s.tokens.iter())
        .filter(|(status, _)| model.status_filter.is_none_or(|f| f == status.as_str()))
        .map(|(_, count)| *count)
        .sum();
    let loaded = model
        .tokens
        .iter()
        .filter(|t| t.state == key.1 && crate::model::workflow_of(t) == key.0.as_deref())
        .filter(|t| model.status_filter.is_none_or(|f| t.status == f))
        .count();
    if usize::try_from(held).unwrap_or(0) > loaded {
        format!(", state {name}, of {held}")
    } else {
        format!(", state {name}")
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
            // Reverse video marks the selection, so it shows without colour too.
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
            // A mark column only while something is marked, so the table is as
            // before otherwise.
            let id = if crate::marks::has_marks(model) {
                let mark = if crate::marks::is_marked(model, &token.token) {
                    "* "
                } else {
                    "  "
                };
                format!("{mark}{}", token.token)
            } else {
                token.token.clone()
            };
            Row::new(vec![
                id,
                format!("{}{visit}", named(&token.state)),
                token.status.clone(),
                age(model, &token.entered_at),
            ])
            .style(fg(model, status_color(&token.status)).patch(style))
        });
    let status = model.status_filter.unwrap_or("all");
    let mut text = if model.text_filter.is_empty() {
        String::new()
    } else {
        format!(", text '{}'", model.text_filter)
    };
    if let Some(key) = &model.state_filter {
        text.push_str(&state_title(model, key));
    }
    if let Some(filter) = &model.filter {
        text.push_str(&format!(", where {filter}"));
    }
    // The total the daemon counted, when it says and nothing is matched here.
    let total = model
        .total
        .filter(|_| model.text_filter.is_empty() && model.state_filter.is_none());
    let mut title = match total {
        Some(total) => format!(" Tokens: {total} (status {status}{text})"),
        None => format!(" Tokens: {} shown (status {status}{text})", shown.len()),
    };
    match crate::marks::marked_count(model) {
        Some(0) => {}
        Some(n) => title.push_str(&format!(", {n} marked")),
        None => title.push_str(", all marked"),
    }
    // The table holds the most recently moved it can read; the others are
    // reached by a filter (the status line says so at the last row).
    if model.capped() {
        title.push_str(&format!(", {} shown", model.tokens.len()));
    }
    // Rows scrolled out of the table are counted, so none goes unseen.
    let last = (model.scroll + rows_fit).min(shown.len());
    if model.scroll > 0 || last < shown.len() {
        title.push_str(&format!(", rows {}-{last}", model.scroll + 1));
    }
    let arrow = if model.sort_reversed { "▼" } else { "▲" };
    // A sort other than the daemon's orders the page read, and says so.
    match (model.sort, model.sort_reversed) {
        (crate::model::SortBy::Listed, false) => {}
        (crate::model::SortBy::Listed, true) => title.push_str(", listed▼"),
        (by, _) => title.push_str(&format!(", by {}{arrow}", by.name())),
    }
    title.push(' ');
    let widths = [
        Constraint::Fill(3),
        Constraint::Fill(2),
        Constraint::Length(9),
        Constraint::Length(6),
    ];
    let header: Vec<String> = ["token", "state", "status", "moved"]
        .iter()
        .map(|name| {
            if *name == model.sort.name() {
                format!("{name}{arrow}")
            } else {
                (*name).to_string()
            }
        })
        .collect();
    let header = Row::new(header).style(Style::default().add_modifier(Modifier::BOLD));
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
}

/// The selected token's detail: its line, context, tasks, timers, held events and
/// children. When they do not all fit, the token's line (its state and status) and
/// its tasks stay, then each other line in order that still fits whole, and the
/// last row counts the rows left out and names the key that shows them.
pub fn detail(model: &Model, frame: &mut Frame, area: Rect) {
    let title = if model.zoom {
        " Token (Esc: back to the table) "
    } else {
        " Token "
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let fit = usize::from(area.height.saturating_sub(2));
    let groups = detail_groups(model, usize::from(area.width.saturating_sub(2)));
    let (mut rows, left) = fitted(groups, fit);
    if left > 0 {
        let more = if model.zoom {
            format!("… {left} more rows than the terminal has")
        } else {
            format!("… {left} more rows: v shows all")
        };
        rows.push(Line::styled(
            more,
            Style::default().add_modifier(Modifier::REVERSED),
        ));
    }
    frame.render_widget(Paragraph::new(rows).block(block), area);
}

/// The rows of `groups` (each line's rows, with its rank: 0 must stay in sight
/// first, then 1, then 2) that fit in `fit` rows with one left for the count, and
/// how many rows are left out: rank by rank, each line in order that still fits
/// whole, shown in their order; all of them, and none left out, when they fit.
fn fitted(groups: Vec<(u8, Vec<Line<'static>>)>, fit: usize) -> (Vec<Line<'static>>, usize) {
    let total: usize = groups.iter().map(|(_, rows)| rows.len()).sum();
    if total <= fit || fit == 0 {
        return (groups.into_iter().flat_map(|(_, rows)| rows).collect(), 0);
    }
    let budget = fit - 1;
    let mut keep = vec![false; groups.len()];
    let mut used = 0;
    for rank in 0..=2 {
        for (n, (of, rows)) in groups.iter().enumerate() {
            if *of == rank && used + rows.len() <= budget {
                keep[n] = true;
                used += rows.len();
            }
        }
    }
    let mut shown: Vec<Line<'static>> = Vec::new();
    for ((_, rows), kept) in groups.iter().zip(&keep) {
        if *kept {
            shown.extend(rows.iter().cloned());
        }
    }
    if shown.is_empty() {
        // Not even the token's line fits whole: its first rows, cut.
        shown = groups
            .into_iter()
            .flat_map(|(_, rows)| rows)
            .take(budget)
            .collect();
    }
    let left = total - shown.len();
    (shown, left)
}

/// The detail pane's text as rows of `width` columns.
pub fn detail_rows(model: &Model, width: usize) -> Vec<Line<'static>> {
    detail_groups(model, width)
        .into_iter()
        .flat_map(|(_, rows)| rows)
        .collect()
}

/// Each line of the detail pane as its rows of `width` columns, with its rank
/// when not all fit ([`detail_lines`]).
fn detail_groups(model: &Model, width: usize) -> Vec<(u8, Vec<Line<'static>>)> {
    let lines = match (&model.detail, model.selected()) {
        (Some(detail), Some(id)) if detail.token.token == id => detail_lines(model, detail),
        (_, Some(id)) => vec![(0, Line::from(format!("reading {id}...")))],
        (_, None) => vec![(0, Line::from("no token is selected"))],
    };
    lines
        .into_iter()
        .map(|(rank, line)| {
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            let rows = wrap(&text, width, LABEL)
                .into_iter()
                .map(|row| Line::styled(row, line.style))
                .collect();
            (rank, rows)
        })
        .collect()
}

/// The lines of the detail pane, each with its rank for a pane too short for all:
/// 0 for the token's line (its state and status) and its tasks, which stay in
/// sight; 1 for why it waits; 2 for the rest.
fn detail_lines(model: &Model, detail: &TokenDetail) -> Vec<(u8, Line<'static>)> {
    let token = &detail.token;
    let mut lines = vec![
        (
            0,
            Line::styled(
                token_line(token),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ),
        (
            2,
            Line::from(format!(
                "entered   {} ({} ago)",
                clock(model, &token.entered_at),
                age(model, &token.entered_at)
            )),
        ),
    ];
    lines.extend(super::operate::why_lines(model).into_iter().map(|l| (1, l)));
    let mut rest = Vec::new();
    if let Some(parent) = &token.parent {
        rest.push(Line::from(format!("parent    {parent}")));
    }
    if let (Some(graph), false) = (&detail.graph, detail.graph_served) {
        rest.push(Line::from(format!("graph     {graph} (not served)")));
    }
    if detail.priority != 0 {
        rest.push(Line::from(format!("priority  {}", detail.priority)));
    }
    let context = short(&serde_json::Value::Object(token.context.clone()));
    rest.push(Line::from(format!("context   {context}")));
    lines.extend(rest.into_iter().map(|l| (2, l)));
    // Ours: what it used against its budget; over it, it tells why it is paused.
    if let Some(view) = &detail.budget {
        if let Some(used) = stateous_shared::usage::against(view) {
            let (rank, over) = match view.over.is_empty() {
                true => (2, String::new()),
                false => (1, " (over budget)".to_string()),
            };
            lines.push((rank, Line::from(format!("usage     {used}{over}"))));
        }
    }
    if model.detail_route == Some(false) {
        lines.push((
            0,
            Line::from("tasks     (this control plane does not list them)"),
        ));
    } else {
        lines.extend(work_lines(model, detail));
    }
    for child in &model.children {
        lines.push((2, Line::from(format!("child     {}", token_line(child)))));
    }
    lines
}

/// The tasks with their lease countdown (rank 0: they stay in sight), the timers,
/// the held events (rank 2).
fn work_lines(model: &Model, detail: &TokenDetail) -> Vec<(u8, Line<'static>)> {
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
            .map_or(String::new(), |left| {
                format!(", lease {}", span_packed(left))
            });
        lines.push((
            0,
            Line::from(format!(
                "task      {} {} {}, attempt {}{holder}{lease}",
                task.task, task.state, task.status, task.attempt
            )),
        ));
    }
    let paused = detail.token.status == "paused";
    for timer in &detail.timers {
        let line = if paused {
            // A paused token's timers stand still; resume gives them the paused
            // time back, so their due time is not yet known.
            let left = paused_at(model, &detail.token.token)
                .and_then(|at| seconds_until(at, &timer.due_at))
                .map_or(String::new(), |left| {
                    format!(" with {} left", span_packed(left))
                });
            format!("timer     {} frozen{left} (paused)", timer.event)
        } else {
            let left = seconds_until(model.now, &timer.due_at).map_or("?".into(), span_packed);
            format!(
                "timer     {} at {} (in {left})",
                timer.event,
                clock(model, &timer.due_at)
            )
        };
        lines.push((2, Line::from(line)));
    }
    for held in &detail.held {
        let payload = held.payload.as_ref().map_or(String::new(), |p| {
            format!(" {}", short(&serde_json::Value::Object(p.clone())))
        });
        lines.push((2, Line::from(format!("held      {}{payload}", held.event))));
    }
    if lines.is_empty() {
        lines.push((
            0,
            Line::from("tasks     none running; no timers; nothing held"),
        ));
    }
    lines
}

/// When `token` was last paused, from its history when it is the one shown.
fn paused_at(model: &Model, token: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    if model.history_of.as_deref() != Some(token) {
        return None;
    }
    let entry = model.history.iter().rev().find(|e| e.kind == "paused")?;
    let at = chrono::DateTime::parse_from_rfc3339(&entry.at).ok()?;
    Some(at.with_timezone(&chrono::Utc))
}

/// The selected token's history as rows of `width` columns, oldest first; empty
/// while the history shown is not the selected token's.
pub fn history_rows(model: &Model, width: usize) -> Vec<String> {
    let selected = model.selected();
    if selected.is_none() || model.history_of != selected {
        return Vec::new();
    }
    model
        .history
        .iter()
        .flat_map(|entry| wrap(&history_line(model, entry), width, LABEL))
        .collect()
}

/// The selected token's history. It follows the end (the newest rows at the
/// bottom) until PgUp or Home moves it; the title says where it is then.
pub fn history(model: &Model, frame: &mut Frame, area: Rect) {
    let selected = model.selected();
    let ours = selected.is_some() && model.history_of == selected;
    let fit = usize::from(area.height.saturating_sub(2));
    let rows = history_rows(model, usize::from(area.width.saturating_sub(2)));
    let last_top = rows.len().saturating_sub(fit);
    let top = model.history_top.map_or(last_top, |top| top.min(last_top));
    let title = match (&selected, ours) {
        (Some(id), true) if top < last_top => format!(
            " History of {id}: {} entries, {} rows below (End) ",
            model.history.len(),
            last_top - top
        ),
        (Some(id), true) => format!(" History of {id}: {} entries ", model.history.len()),
        _ => " History ".to_string(),
    };
    let lines: Vec<Line> = rows
        .into_iter()
        .skip(top)
        .take(fit)
        .map(Line::from)
        .collect();
    let block = Block::default().borders(Borders::ALL).title(title);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The supervisors pane: running tasks, outbox depth, last seen; stale ones
/// marked; then those that said they stopped, with when they did. Those that do
/// not fit are counted in the title.
pub fn supervisors(model: &Model, frame: &mut Frame, area: Rect) {
    let (list, stopped) = match &model.supervisors {
        Supervisors::Seen(list) if !list.supervisors.is_empty() || !list.stopped.is_empty() => {
            (&list.supervisors, &list.stopped)
        }
        other => {
            let line = match other {
                Supervisors::Unsupported => "this control plane does not list its supervisors",
                Supervisors::Seen(_) => "no supervisor has claimed yet",
                Supervisors::Unknown => "reading...",
            };
            let block = Block::default()
                .borders(Borders::ALL)
                .title(" Supervisors ");
            frame.render_widget(Paragraph::new(line).block(block), area);
            return;
        }
    };
    let since = |last_seen: &str| seconds_until(model.now, last_seen).map(|left| -left);
    let is_stale = |last_seen: &str| since(last_seen).is_some_and(|s| s > STALE_SECONDS);
    let stale = list.iter().filter(|s| is_stale(&s.last_seen)).count();
    let fit = usize::from(area.height.saturating_sub(3));
    let mut title = format!(" Supervisors: {}", list.len());
    if stale > 0 {
        title.push_str(&format!(", {stale} stale"));
    }
    if !stopped.is_empty() {
        title.push_str(&format!(", {} stopped", stopped.len()));
    }
    let all = list.len() + stopped.len();
    if fit < all {
        title.push_str(&format!(", {fit} shown"));
    }
    title.push(' ');
    let running = list.iter().map(|s| {
        let stale = is_stale(&s.last_seen);
        let seen = since(&s.last_seen).map_or("?".to_string(), span_packed);
        let mark = if stale { "stale" } else { "" };
        let outbox = s.outbox.map_or("?".to_string(), |d| d.to_string());
        let style = if stale {
            fg(model, Color::Red)
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
    // A stopped one was last heard from as it said it stopped: its time shows
    // where the others' last heartbeat does.
    let stopped_rows = stopped.iter().map(|s| {
        Row::new(vec![
            s.name.clone(),
            s.states.join(", "),
            "-".to_string(),
            "-".to_string(),
            clock(model, &s.stopped_at),
            "stopped".to_string(),
        ])
        .style(fg(model, Color::DarkGray))
    });
    let rows: Vec<Row> = running.chain(stopped_rows).collect();
    // The mark's column is as wide as its longest word.
    let mark = if stopped.is_empty() { 5 } else { 7 };
    let widths = [
        Constraint::Fill(2),
        Constraint::Fill(3),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(mark),
    ];
    let header = Row::new(vec!["name", "states", "running", "outbox", "last seen", ""])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let block = Block::default().borders(Borders::ALL).title(title);
    frame.render_widget(Table::new(rows, widths).header(header).block(block), area);
}
