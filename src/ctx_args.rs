//! The command line of `stateous ctx ...`, the helper a routine calls.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum CtxCommand {
    /// Print the token's context, or one key of it, as JSON.
    Get {
        /// The key.
        key: Option<String>,
        /// Print a string without its quotes.
        #[arg(short, long)]
        raw: bool,
    },
    /// Change one key of the context; sent with the outcome.
    Set {
        /// The key.
        key: String,
        /// The value, as JSON.
        value: String,
    },
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
        /// Its payload, as JSON.
        payload: Option<String>,
        /// When: `30s`, `10m`, `6h`, `1d`.
        #[arg(long)]
        after: String,
    },
    /// The outcome: this event (then exit 0).
    Emit {
        /// The event.
        event: String,
        /// Its payload, as JSON.
        payload: Option<String>,
    },
    /// The outcome: wait for a report from outside (then exit 0).
    Wait,
    /// Print the events this state may emit, with their payloads, as JSON Schema.
    OutcomeSchema,
}

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// Print the memory, or one key of it.
    Get {
        /// The key.
        key: Option<String>,
        /// Print a string without its quotes.
        #[arg(short, long)]
        raw: bool,
    },
    /// Save one key.
    Set {
        /// The key.
        key: String,
        /// The value, as JSON.
        value: String,
    },
    /// Delete one key.
    Del {
        /// The key.
        key: String,
    },
}

/// Run one `stateous ctx` command; its exit code.
pub fn run(command: CtxCommand) -> i32 {
    use stateous_supervisor::ctx_socket::{run_helper, Helper};
    let (helper, raw) = match command {
        CtxCommand::Get { key, raw } => (Helper::Get(key), raw),
        CtxCommand::Set { key, value } => (Helper::Set(key, value), false),
        CtxCommand::Note { text } => (Helper::Note(text.join(" ")), false),
        CtxCommand::Memory(MemoryCommand::Get { key, raw }) => (Helper::MemoryGet(key), raw),
        CtxCommand::Memory(MemoryCommand::Set { key, value }) => {
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
    };
    run_helper(helper, raw)
}
