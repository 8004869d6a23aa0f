//! The command line of `stateous ctx ...`, the helper a routine calls.

use clap::{Args, Parser, Subcommand};

/// What `stateous ctx` is, in one line of `stateous --help` (no final period, as
/// clap shows a one-paragraph doc comment).
pub const ABOUT: &str = "Inside a routine: speak to the supervisor that runs it";

/// What `stateous ctx --help` says of it: the line above, then how.
pub const LONG_ABOUT: &str = "Inside a routine: speak to the supervisor that runs it.

It speaks over the Unix socket that STATEOUS_CTX names. A routine may speak that protocol \
itself: one JSON object per line, e.g. {\"op\": \"emit\", \"event\": \"done\"}; the answer is \
{\"ok\": true, \"value\": ...} or {\"ok\": false, \"error\": \"...\"}.";

/// The arguments of `get` and `memory get`.
#[derive(Args)]
pub struct GetArgs {
    /// The key.
    key: Option<String>,
    /// Print a string without its quotes.
    #[arg(short, long)]
    raw: bool,
}

/// The arguments of `set` and `memory set`.
#[derive(Args)]
pub struct SetArgs {
    /// The key.
    key: String,
    /// The value, as JSON (`@FILE`: a file's; `-`: standard input's).
    value: String,
}

#[derive(Subcommand)]
pub enum CtxCommand {
    /// Print the token's context, or one key of it, as JSON.
    Get(GetArgs),
    /// Change one key of the context; sent with the outcome.
    Set(SetArgs),
    /// Write a line of progress to the token's history.
    Note {
        /// The text (at most 500 characters).
        text: Vec<String>,
    },
    /// Read or write the routine's memory (saved at once).
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Set a timer: fire EVENT after a while, if the token is still here.
    Schedule {
        /// The event.
        event: String,
        /// Its payload, as JSON (`@FILE`: a file's; `-`: standard input's).
        payload: Option<String>,
        /// When: `30s`, `10m`, `6h`, `1d`.
        #[arg(long)]
        after: String,
    },
    /// The outcome: this event (then exit 0).
    Emit {
        /// The event.
        event: String,
        /// Its payload, as JSON (`@FILE`: a file's; `-`: standard input's).
        payload: Option<String>,
    },
    /// The outcome: wait for a report from outside (then exit 0).
    Wait,
    /// Print the events this state may emit, with their payloads, as JSON Schema.
    OutcomeSchema,
    /// Report what the routine spent (sent at once; counts even if it then fails)
    ///
    /// Each NAME=NUMBER adds NUMBER to the token's sum of NAME: a name is 1 to 64
    /// of a-z, 0-9, _ and ., a number from 0 to 1e15, e.g. `stateous ctx usage
    /// cost_usd=0.12 input_tokens=1200`. A token over its budget is paused and its
    /// routine stopped.
    Usage {
        /// NAME=NUMBER, one or more.
        #[arg(required = true, value_name = "NAME=NUMBER")]
        amounts: Vec<String>,
    },
}

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// Print the memory, or one key of it.
    Get(GetArgs),
    /// Save one key.
    Set(SetArgs),
    /// Delete one key.
    Del {
        /// The key.
        key: String,
    },
}

/// The command line of `stateous ctx ...` alone, parsed as `Cli` (main.rs) parses it.
/// The helper starts once per call of a routine, and building the parser of every
/// command first took about a fifth of its start: 0.3 of 1.7 ms and 57 of 390 page
/// faults (`perf stat stateous ctx emit done`).
#[derive(Parser)]
#[command(name = "stateous", version = crate::VERSION, args_override_self = true)]
struct CtxCli {
    #[command(subcommand)]
    command: CtxOnly,
}

#[derive(Subcommand)]
enum CtxOnly {
    #[command(subcommand, about = ABOUT, long_about = LONG_ABOUT)]
    Ctx(CtxCommand),
}

/// `stateous ctx ...`: parse the command line (as `Cli` would), run it; the exit code.
pub fn parse_and_run() -> i32 {
    let CtxOnly::Ctx(command) = crate::cli_errors::parse_or_exit::<CtxCli>().command;
    run(command)
}

/// Run one `stateous ctx` command; its exit code.
pub fn run(command: CtxCommand) -> i32 {
    use stateous_supervisor::ctx_socket::{run_helper, Helper};
    let (helper, raw) = match command {
        CtxCommand::Get(GetArgs { key, raw }) => (Helper::Get(key), raw),
        CtxCommand::Set(SetArgs { key, value }) => (Helper::Set(key, value), false),
        CtxCommand::Note { text } => (Helper::Note(text.join(" ")), false),
        CtxCommand::Memory(MemoryCommand::Get(GetArgs { key, raw })) => {
            (Helper::MemoryGet(key), raw)
        }
        CtxCommand::Memory(MemoryCommand::Set(SetArgs { key, value })) => {
            (Helper::MemorySet(key, value), false)
        }
        CtxCommand::Memory(MemoryCommand::Del { key }) => (Helper::MemoryDel(key), false),
        CtxCommand::Schedule {
            event,
            payload,
            after,
        } => (Helper::Schedule(event, payload, after), false),
        CtxCommand::Emit { event, payload } => (Helper::Emit(event, payload), false),
        CtxCommand::Wait => (Helper::Wait, false),
        CtxCommand::OutcomeSchema => (Helper::OutcomeSchema, false),
        CtxCommand::Usage { amounts } => (Helper::Usage(amounts), false),
    };
    crate::cli_errors::exit_code(run_helper(helper, raw).map(|()| 0))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn the_helpers_own_parser_answers_as_the_whole_command_line_does() {
        let cases: [&[&str]; 10] = [
            &["ctx"],
            &["ctx", "--help"],
            &["ctx", "emit", "--help"],
            &["ctx", "memory", "set", "--help"],
            &["ctx", "bogus"],
            &["ctx", "--version"],
            &["ctx", "emit"],
            &["ctx", "schedule", "later", "--after"],
            &["ctx", "get", "-r", "repo"],
            &["ctx", "note", "two", "words"],
        ];
        for args in cases {
            let argv = || std::iter::once("stateous").chain(args.iter().copied());
            let whole = crate::Cli::try_parse_from(argv())
                .map(|_| ())
                .map_err(|e| (e.kind(), e.to_string()));
            let own = super::CtxCli::try_parse_from(argv())
                .map(|_| ())
                .map_err(|e| (e.kind(), e.to_string()));
            assert_eq!(own, whole, "{args:?}");
        }
    }
}
