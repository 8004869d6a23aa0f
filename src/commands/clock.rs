//! `stateous clock advance DURATION|freeze|thaw|show`: move or read the dev clock of a
//! daemon started with `serve --dev-clock`, over `POST /clock/...` and `GET /health`.
//!
//! A daemon without the dev clock answers the clock's routes 404 `not_found`;
//! the command then says so in one sentence (exit 1).

use std::io::Write;
use std::time::Duration;

use super::CommandError;

use stateous_shared::durations::parse_duration;
use stateous_shared::refusal::Code;
use stateous_shared::watch::DevClock;

/// How long an advance may take to answer: it ticks at every due moment inside
/// it, which for a long advance over many tokens takes a while.
pub const ADVANCE_WITHIN: Duration = Duration::from_secs(600);

/// One `stateous clock ...` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockCommand {
    /// `--url`, the access key (an admin key over TCP) and the TLS flags.
    pub connection: stateous_client::Connection,
    /// `--json`: print the daemon's answer.
    pub json: bool,
    /// What to do.
    pub action: ClockAction,
}

/// The sub-command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockAction {
    /// `advance DURATION` (`30s`, `10m`, `1h`, `1d`).
    Advance(String),
    /// `freeze`.
    Freeze,
    /// `thaw`.
    Thaw,
    /// `show`: where the clock stands.
    Show,
}

/// Run `command`, writing the clock's line (or its JSON) to `out`.
pub async fn run(command: &ClockCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let client = command.connection.client(ADVANCE_WITHIN, false)?;
    let answered = match &command.action {
        ClockAction::Advance(by) => {
            parse_duration(by).map_err(CommandError::Usage)?;
            client.clock_advance(by).await.map(Some)
        }
        ClockAction::Freeze => client.clock_freeze(true).await.map(Some),
        ClockAction::Thaw => client.clock_freeze(false).await.map(Some),
        ClockAction::Show => client.health().await.map(|health| health.dev_clock),
    };
    let clock = match answered {
        Ok(Some(clock)) => clock,
        Ok(None) => return Err(not_dev(client.url())),
        Err(error) if error.code() == Some(Code::NotFound) => return Err(not_dev(client.url())),
        Err(error) => return Err(CommandError::Client(error).with_code()),
    };
    if command.json {
        let text = serde_json::to_string(&clock).unwrap_or_default();
        writeln!(out, "{text}")?;
    } else {
        writeln!(out, "{}", line(&clock))?;
    }
    Ok(())
}

/// `dev clock +10m (now 2026-...Z)`, with the due moments an advance ticked.
pub fn line(clock: &DevClock) -> String {
    let steps = match clock.steps {
        Some(1) => "; 1 due moment ticked on the way".to_string(),
        Some(n) if n > 1 => format!("; {n} due moments ticked on the way"),
        _ => String::new(),
    };
    format!("{} (now {}{steps})", clock.label(), clock.now)
}

/// The sentence for a daemon without the dev clock.
fn not_dev(url: &str) -> CommandError {
    CommandError::Usage(format!(
        "the daemon at {url} was not started with --dev-clock, so its clock cannot be \
         moved; start it with stateous serve --dev-clock"
    ))
}
