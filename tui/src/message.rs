//! The messages `update` takes (keys, ticks, the client task's answers) and the
//! commands it gives back for the client task to carry out.

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use serde_json::Value;
use stateous_client::{Steer, TokenQuery, WatchEntry};
use stateous_shared::bulk::{BulkAnswer, BulkRequest};
use stateous_shared::watch::{GraphView, StateCount, SupervisorList, TokenDetail};
use stateous_shared::why::Why;
use stateous_shared::wire::{Health, HistoryEntry, Object, TokenView};

use crate::model::{Problem, StreamState};

/// Something that happened: a key, a tick of the clock, or an answer.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key was pressed.
    Key(KeyEvent),
    /// The terminal's new size: columns, rows.
    Resize(u16, u16),
    /// A second passed; the time now.
    Tick(DateTime<Utc>),
    /// `GET /tokens` answered the read made under this status filter.
    Tokens(Option<String>, Result<Vec<TokenView>, Problem>),
    /// `GET /tokens` answered the read made under this status filter and filter
    /// (`where`), with how many match in all when the daemon says.
    Page {
        /// The status filter of the read.
        status: Option<String>,
        /// Its filter (`where`).
        filter: Option<String>,
        /// The page and the total.
        answer: Result<(Vec<TokenView>, Option<u64>), Problem>,
    },
    /// `GET /tokens/{id}/why` answered; `Ok(None)` from a daemon without it.
    Why(String, Result<Option<Box<Why>>, Problem>),
    /// The preview of a bulk action answered.
    Previewed(Box<BulkRequest>, Result<BulkAnswer, Problem>),
    /// A bulk action went on (`done` false) or ended: its outcomes so far, merged.
    Ran {
        /// Everything so far.
        so_far: BulkAnswer,
        /// True once the walk ended.
        done: bool,
    },
    /// A bulk action stopped on a refusal of the whole request.
    RunFailed(Problem),
    /// The selected token was read: with its tasks, timers and held events when the
    /// daemon has the detail route (`true`), else the plain token (`false`).
    Token(String, Result<(TokenDetail, bool), Problem>),
    /// `GET /tokens/{id}/history` answered.
    History(String, Result<Vec<HistoryEntry>, Problem>),
    /// `GET /tokens?parent={id}` answered.
    Children(String, Result<Vec<TokenView>, Problem>),
    /// `GET /tokens/{id}` for the text filter answered; `None`: no such token.
    Exact(String, Result<Option<TokenView>, Problem>),
    /// `GET /workflow` answered: the graph document.
    Workflow(Result<Value, Problem>),
    /// `GET /supervisors` answered; `Ok(None)` when the daemon has no such route.
    Supervisors(Result<Option<SupervisorList>, Problem>),
    /// `GET /states` answered; `Ok(None)` when the daemon has no such route.
    States(Result<Option<Vec<StateCount>>, Problem>),
    /// `GET /graphs` answered: the kept graphs (none from a daemon without the
    /// route, or when it could not be read).
    Graphs(Vec<GraphView>),
    /// `GET /access/self` answered: the TUI's own key (`None` from a daemon
    /// without the route, or when it could not be read: no limit is assumed).
    OwnKey(Option<stateous_shared::access::OwnKey>),
    /// `GET /health` answered.
    Health(Result<Health, Problem>),
    /// A pause, resume, cancel, fire or start answered.
    Done(Result<Acted, Problem>),
    /// The live stream (`GET /watch`) opened, broke, or is not served.
    Stream(StreamState),
    /// A ledger entry came on the live stream, after its commit.
    Entry(WatchEntry),
    /// Of several addresses, another one serves now (the client moved to it).
    Serving(String),
    /// `GET /schedules` answered.
    Schedules(Result<Vec<stateous_shared::schedules::ScheduleView>, Problem>),
    /// `GET /limits` answered.
    Pools(Result<Vec<stateous_shared::claim_limits::LimitView>, Problem>),
    /// A schedule's pause or resume answered: the schedule.
    ScheduleSteered(Result<stateous_shared::schedules::ScheduleView, Problem>),
    /// `GET /notify` answered: the subscriptions with their counts.
    Subscriptions(Result<Vec<stateous_shared::notify::SubscriptionView>, Problem>),
}

/// The answer to an action.
#[derive(Debug, Clone, PartialEq)]
pub struct Acted {
    /// The token as the answer shows it.
    pub token: TokenView,
    /// True for a fire whose idempotency key was used before.
    pub duplicate: bool,
    /// What the status line says instead of the token's line, if anything.
    pub said: Option<String>,
}

/// Work for the client task: every request the TUI makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `GET /tokens` with these filters.
    Tokens(TokenQuery),
    /// Read one token; `detail` asks for the detail route first.
    Token {
        /// The token.
        id: String,
        /// Whether to try `GET /tokens/{id}/detail`.
        detail: bool,
    },
    /// `GET /tokens/{id}/history`.
    History(String),
    /// `GET /tokens?parent={id}`.
    Children(String),
    /// `GET /tokens/{id}` for the token whose id is the text filter.
    Exact(String),
    /// `GET /workflow`.
    Workflow,
    /// `GET /supervisors`.
    Supervisors,
    /// `GET /states`.
    States,
    /// `GET /graphs`.
    Graphs,
    /// `GET /access/self`.
    OwnKey,
    /// `GET /health`.
    Health,
    /// Pause, resume or cancel a token.
    Steer(String, Steer),
    /// Fire an event.
    Fire {
        /// The token.
        token: String,
        /// The event.
        event: String,
        /// Its payload, if any.
        payload: Option<Object>,
        /// The idempotency key, if any.
        key: Option<String>,
    },
    /// Start a token.
    Start {
        /// The token's id.
        token: String,
        /// Its context.
        context: Object,
    },
    /// `GET /tokens/{id}/why`.
    Why(String),
    /// Retry a failed token.
    Retry(String),
    /// Set a token's priority.
    Priority {
        /// The token.
        token: String,
        /// Its new priority.
        priority: i64,
    },
    /// Preview a bulk action (`dry_run`).
    Preview(BulkRequest),
    /// Run a bulk action to its end, page after page, telling each.
    Run(BulkRequest),
    /// Put this text on the terminal's clipboard (OSC 52, `crate::describe`):
    /// the loop writes it to the terminal, no request is made.
    Copy(String),
    /// `GET /schedules`.
    Schedules,
    /// `GET /limits`.
    Pools,
    /// Pause (`pause` true) or resume the schedule `name`.
    PauseSchedule {
        /// The schedule.
        name: String,
        /// Pause, or resume.
        pause: bool,
    },
    /// `GET /notify`.
    Subscriptions,
}

impl Command {
    /// Whether the command changes a token (pause, resume, cancel, fire, start,
    /// retry, a bulk run), or a schedule (which starts tokens), rather than reads:
    /// none is sent while the TUI is read-only.
    pub fn changes_a_token(&self) -> bool {
        matches!(
            self,
            Command::Steer(..)
                | Command::Fire { .. }
                | Command::Start { .. }
                | Command::Retry(_)
                | Command::Priority { .. }
                | Command::Run(_)
                | Command::PauseSchedule { .. }
        )
    }
}
