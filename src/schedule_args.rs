//! The command line of `stateous schedule ...` (`docs/reference/cli.md`,
//! "schedule"): the control plane's URL, then what to do with its schedules.

use clap::Subcommand;

use crate::client_args::{named, CommandArgs};
use crate::commands::schedule::{ScheduleAction as Action, ScheduleCommand};
use stateous_shared::schedules::NewSchedule;

/// `stateous schedule ...`.
pub type ScheduleArgs = CommandArgs<ScheduleAction>;

/// What to do with the schedules.
// Made once per run, from the command line: the size of `Add` costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum ScheduleAction {
    /// Add a schedule: start a token at each occurrence of WHEN
    ///
    /// WHEN is a cron expression read in --zone, `0 9 * * 1-5` (five fields:
    /// minute hour day-of-month month day-of-week; six with seconds first), or an
    /// interval, `every 15m`. A time the zone skips in spring fires at the first
    /// instant after the gap; one it repeats in autumn fires once, at the first.
    Add {
        /// The schedule's name: 1 to 64 of A-Z a-z 0-9 . _ -.
        name: String,
        /// `0 9 * * 1-5` or `every 15m`.
        #[arg(value_name = "WHEN")]
        spec: String,
        /// The IANA time zone of the cron expression, e.g. Europe/Berlin.
        #[arg(long, default_value = "UTC")]
        zone: String,
        /// The token id template; fields {schedule} {date} {time} {second}
        /// {utc_date} {utc_time} {occurrence} {unix} ({at} and {local} in contexts).
        #[arg(long, default_value = "{schedule}-{occurrence}")]
        token: String,
        /// The context template: JSON, @FILE or - (standard input); its strings
        /// take the same fields.
        #[arg(long, value_name = "JSON")]
        context: Option<String>,
        /// Move each start by up to this much after its occurrence, the same for
        /// an occurrence every time (e.g. 30s; at most 1h).
        #[arg(long, value_name = "DURATION")]
        jitter: Option<String>,
        /// While a token of an earlier occurrence is live: skip, buffer_one or allow.
        #[arg(long, default_value = "skip")]
        overlap: String,
        /// Occurrences missed while no control plane ran: none, latest (one start)
        /// or all (within --window, at most --cap).
        #[arg(long, default_value = "latest")]
        catch_up: String,
        /// With --catch-up all: how far back a missed occurrence still starts.
        #[arg(long, value_name = "DURATION", default_value = "1d")]
        window: String,
        /// With --catch-up all: the most starts of one catch-up.
        #[arg(long, default_value_t = 10)]
        cap: i64,
        /// Change the schedule of this name if there is one: it becomes what this
        /// command says, each setting not given taking its default (as at a first add).
        #[arg(long)]
        replace: bool,
    },
    /// List the schedules: the next three occurrences (in the zone and UTC), the
    /// last token and its status, the latest skipped occurrences and why
    List,
    /// Show one schedule, as list does
    Show {
        /// The schedule's name.
        name: String,
    },
    /// Pause a schedule: no occurrence starts until it resumes
    Pause {
        /// The schedule's name.
        name: String,
    },
    /// Resume a paused schedule, from its next occurrence after now
    Resume {
        /// The schedule's name.
        name: String,
    },
    /// Remove a schedule (the tokens it started stay)
    Remove {
        /// The schedule's name.
        name: String,
    },
    /// Start an occurrence now, under the schedule's overlap policy
    Trigger {
        /// The schedule's name.
        name: String,
    },
}

impl TryFrom<ScheduleArgs> for ScheduleCommand {
    type Error = String;

    fn try_from(args: ScheduleArgs) -> Result<Self, String> {
        let action = match args.action {
            ScheduleAction::Add {
                name,
                spec,
                zone,
                token,
                context,
                jitter,
                overlap,
                catch_up,
                window,
                cap,
                replace,
            } => Action::Add {
                schedule: Box::new(NewSchedule {
                    name,
                    spec,
                    zone: Some(zone),
                    token: Some(token),
                    context: None,
                    jitter,
                    overlap: Some(overlap),
                    catch_up: Some(catch_up),
                    window: Some(window),
                    cap: Some(cap),
                    replace,
                }),
                context,
            },
            ScheduleAction::List => Action::List,
            ScheduleAction::Show { name } => Action::Show(named("schedule", name)?),
            ScheduleAction::Pause { name } => Action::Pause(named("schedule", name)?),
            ScheduleAction::Resume { name } => Action::Resume(named("schedule", name)?),
            ScheduleAction::Remove { name } => Action::Remove(named("schedule", name)?),
            ScheduleAction::Trigger { name } => Action::Trigger(named("schedule", name)?),
        };
        Ok(ScheduleCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}
