//! `stateous schedule add|list|show|pause|resume|remove|trigger`: the control
//! plane's schedules (`docs/schedules.md`), over `/schedules`.

use std::io::Write;

use super::{print_list, CommandError};
use stateous_client::ClientError;
use stateous_shared::schedules::{NewSchedule, ScheduleView, Triggered};
use stateous_shared::time::parse_iso;

/// One `stateous schedule ...` command line.
#[derive(Debug, Clone)]
pub struct ScheduleCommand {
    /// `--url`, the access key and the TLS flags.
    pub connection: stateous_client::Connection,
    /// `--json`: print the control plane's answer.
    pub json: bool,
    /// What to do.
    pub action: ScheduleAction,
}

/// The sub-command.
#[derive(Debug, Clone)]
pub enum ScheduleAction {
    /// `add NAME WHEN ...`; `context` is the `--context` argument, read here.
    Add {
        /// The schedule, but its context.
        schedule: Box<NewSchedule>,
        /// `--context`: JSON, `@FILE` or `-`.
        context: Option<String>,
    },
    /// `list`.
    List,
    /// `show NAME`.
    Show(String),
    /// `pause NAME`.
    Pause(String),
    /// `resume NAME`.
    Resume(String),
    /// `remove NAME`.
    Remove(String),
    /// `trigger NAME`.
    Trigger(String),
}

/// Run `command`, writing the schedules' lines (or the JSON answer) to `out`.
pub async fn run(command: &ScheduleCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let client = command
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, false)?;
    let refused = |error: ClientError| CommandError::Client(error).with_code();
    let views = match &command.action {
        ScheduleAction::Add { schedule, context } => {
            let mut schedule = NewSchedule::clone(schedule);
            if let Some(text) = context {
                schedule.context = Some(super::json_object(text, "--context")?);
            }
            vec![client.add_schedule(&schedule).await.map_err(refused)?]
        }
        ScheduleAction::List => client.schedules().await.map_err(refused)?.schedules,
        ScheduleAction::Show(name) => vec![client.schedule(name).await.map_err(refused)?],
        ScheduleAction::Pause(name) => {
            vec![client.pause_schedule(name, true).await.map_err(refused)?]
        }
        ScheduleAction::Resume(name) => {
            vec![client.pause_schedule(name, false).await.map_err(refused)?]
        }
        ScheduleAction::Remove(name) => {
            client.remove_schedule(name).await.map_err(refused)?;
            eprintln!("removed the schedule {name}; the tokens it started stay");
            return Ok(());
        }
        ScheduleAction::Trigger(name) => {
            let triggered = client.trigger_schedule(name).await.map_err(refused)?;
            if command.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string(&triggered).unwrap_or_default()
                )?;
            } else {
                writeln!(out, "{}", triggered_line(&triggered))?;
            }
            return Ok(());
        }
    };
    if command.json {
        let text = match &command.action {
            ScheduleAction::List => serde_json::to_string(&views),
            _ => serde_json::to_string(&views[0]),
        };
        writeln!(out, "{}", text.unwrap_or_default())?;
        return Ok(());
    }
    let none = "no schedule: add one with stateous schedule add NAME WHEN";
    print_list(out, &views, none, lines)
}

/// `started: TOKEN`, `buffered: TOKEN` or `skipped: TOKEN: REASON`.
pub fn triggered_line(triggered: &Triggered) -> String {
    match &triggered.reason {
        Some(reason) => format!("{}: {}: {reason}", triggered.outcome, triggered.token),
        None => format!("{}: {}", triggered.outcome, triggered.token),
    }
}

/// A schedule's lines: its settings, its next occurrences in its zone and in
/// UTC, its last token and the latest skipped occurrences.
pub fn lines(view: &ScheduleView) -> Vec<String> {
    // Every moment to the second when one of them has seconds: an occurrence
    // every 30 s reads 12:00:00 and 12:00:30, not 12:00 and 12:00:30.
    let moments = view.next.iter().map(|coming| coming.at.as_str());
    let moments = moments.chain(view.buffered.as_deref()).chain(
        view.skipped
            .iter()
            .map(|skipped| skipped.occurrence.as_str()),
    );
    let seconds = moments
        .filter_map(parse_iso)
        .any(|moment| moment.format("%S").to_string() != "00");
    let utc = |text: &str| utc(text, seconds);
    let local = |text: &str| local(text, seconds);
    let mut lines = vec![format!(
        "{}  {}  {}  {}  overlap {}, catch-up {}{}",
        view.name,
        view.spec,
        view.zone,
        view.status,
        view.overlap,
        view.catch_up,
        if view.catch_up == "all" {
            format!(" (cap {}, window {})", view.cap, span(view.window_seconds))
        } else {
            String::new()
        }
    )];
    for (i, coming) in view.next.iter().enumerate() {
        let head = if i == 0 { "  next" } else { "      " };
        lines.push(format!(
            "{head}  {}  ({})  {}",
            local(&coming.local),
            utc(&coming.at),
            coming.token
        ));
    }
    if view.next.is_empty() && view.status == "paused" {
        lines.push("  next  none while paused".to_string());
    }
    if let Some(token) = &view.last_token {
        lines.push(format!(
            "  last  {token} ({})",
            view.last_status.as_deref().unwrap_or("-")
        ));
    }
    if let Some(waiting) = &view.buffered {
        lines.push(format!("  waits {} (buffer_one)", utc(waiting)));
    }
    for skipped in &view.skipped {
        let count = if skipped.count > 1 {
            format!(" and {} more", skipped.count - 1)
        } else {
            String::new()
        };
        lines.push(format!(
            "  skipped {}{count}: {}",
            utc(&skipped.occurrence),
            skipped.reason
        ));
    }
    lines
}

/// `2027-03-29 09:00 +02:00`: a local ISO moment, to the minute, or to the
/// second with `seconds`.
fn local(text: &str, seconds: bool) -> String {
    let Ok(moment) = chrono::DateTime::parse_from_rfc3339(text) else {
        return text.to_string();
    };
    let format = if seconds {
        "%Y-%m-%d %H:%M:%S %:z"
    } else {
        "%Y-%m-%d %H:%M %:z"
    };
    moment.format(format).to_string()
}

/// `2027-03-29 07:00Z`: a moment in UTC, to the minute, or to the second with
/// `seconds`.
fn utc(text: &str, seconds: bool) -> String {
    match parse_iso(text) {
        Some(moment) if seconds => moment.format("%Y-%m-%d %H:%M:%SZ").to_string(),
        Some(moment) => moment.format("%Y-%m-%d %H:%MZ").to_string(),
        None => text.to_string(),
    }
}

fn span(seconds: f64) -> String {
    stateous_shared::durations::span(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateous_shared::schedules::{Coming, Skipped};

    fn view(next: &[&str], skipped: &[&str]) -> ScheduleView {
        let json = serde_json::json!({
            "name": "s", "spec": "every 30s", "zone": "UTC", "token": "t", "context": {},
            "jitter_seconds": 0.0, "overlap": "allow", "catch_up": "one",
            "window_seconds": 0.0, "cap": 1, "status": "active", "next": [], "skipped": [],
            "created": "2027-01-01T00:00:00Z", "changed": "2027-01-01T00:00:00Z"
        });
        let mut view: ScheduleView = serde_json::from_value(json).unwrap();
        view.next = next
            .iter()
            .map(|at| Coming {
                at: at.to_string(),
                local: at.replace('Z', "+00:00"),
                token: "t".into(),
            })
            .collect();
        view.skipped = skipped
            .iter()
            .map(|at| Skipped {
                occurrence: at.to_string(),
                count: 1,
                reason: "overlap".into(),
            })
            .collect();
        view
    }

    #[test]
    fn moments_are_to_the_second_when_one_has_seconds() {
        let shown = lines(&view(
            &["2027-01-01T12:00:30Z", "2027-01-01T12:01:00Z"],
            &["2027-01-01T12:00:00Z"],
        ))
        .join("\n");
        assert!(shown.contains("(2027-01-01 12:01:00Z)"), "{shown}");
        assert!(shown.contains("skipped 2027-01-01 12:00:00Z"), "{shown}");
        let shown = lines(&view(&["2027-01-01T12:00:00Z"], &[])).join("\n");
        assert!(
            shown.contains("2027-01-01 12:00 +00:00  (2027-01-01 12:00Z)"),
            "{shown}"
        );
    }
}
