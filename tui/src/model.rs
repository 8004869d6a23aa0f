//! The TUI's state: what the control plane last answered, what the operator is
//! doing, and what the status line says. Nothing here does I/O; `update` changes
//! it and `view` draws it.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, FixedOffset, Utc};
use stateous_shared::graph::Graph;
use stateous_shared::wire::{HistoryEntry, TokenView};

use stateous_shared::bulk::{BulkAnswer, BulkRequest};
use stateous_shared::watch::{DevClock, StateCount, SupervisorList, TokenDetail};
use stateous_shared::why::Why;

use crate::line_edit::LineEdit;

/// The statuses a token can have, in the order `t` cycles through them (after "all").
pub use stateous_shared::wire::TOKEN_STATUSES as STATUSES;

/// The largest page `GET /tokens` answers.
pub const MOST_TOKENS: u32 = 1000;

/// Why a request did not succeed, as the status line tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The control plane said no: its HTTP status, refusal code and sentence.
    Refused {
        /// The HTTP status, e.g. 409.
        status: u16,
        /// The refusal code, e.g. `token_not_active`.
        code: String,
        /// The control plane's sentence.
        sentence: String,
    },
    /// No answer: the daemon is down or restarting.
    Unreachable(String),
    /// Anything else (a wrong URL, an answer of the wrong shape).
    Other(String),
}

/// Whether the control plane answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Nothing answered yet.
    Connecting,
    /// The last request got an answer.
    Connected,
    /// The last request got none; every tick tries again.
    Lost(String),
}

/// The live stream's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamState {
    /// Not open (not yet, or broken and being opened again).
    Off,
    /// Open: entries come as they commit, and reads happen only when they do.
    Live,
    /// The control plane has no `GET /watch` (the reference's): every tick reads.
    Unsupported,
}

/// What the stream's entries made out of date, to read on the next tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stale {
    /// The tokens table: some token moved.
    pub table: bool,
    /// The selected token's detail and children: it moved.
    pub token: bool,
    /// The selected token's history: an entry came that does not follow the last
    /// one shown (or none is shown yet), so the history is read whole.
    pub history: bool,
    /// The counts of the graph view: a token moved, started or ended.
    pub states: bool,
}

/// What the status line shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// One line.
    pub text: String,
    /// Drawn in red when true.
    pub error: bool,
}

/// A read the TUI keeps current; at most one of each is in flight at a time, so a
/// slow daemon never gets a pile of the same request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fetch {
    /// `GET /tokens?status=&limit=`.
    Tokens,
    /// `GET /tokens/{id}` and, where the daemon has it, the detail route.
    Token(String),
    /// `GET /tokens/{id}/history`.
    History(String),
    /// `GET /tokens?parent={id}`.
    Children(String),
    /// `GET /workflow`.
    Workflow,
    /// `GET /access/self`.
    OwnKey,
    /// `GET /supervisors`.
    Supervisors,
    /// `GET /tokens/{text filter}`: the token whose id is the text filter.
    Exact,
    /// `GET /states`: the graph view's counts.
    States,
    /// `GET /health`: the dev clock, if the daemon runs one.
    Health,
    /// `GET /tokens/{id}/why`: the selected token's reasons.
    Why(String),
    /// `GET /schedules`: the schedules view's list.
    Schedules,
    /// `GET /limits`: the pools view's list.
    Limits,
    /// `GET /notify`: the notifications view's list.
    Subscriptions,
    /// `POST /tokens/bulk` with `dry_run`: the preview of a bulk action.
    Preview,
}

/// A state of the graph view: its child workflow (`None` for the main one) and
/// its name.
pub type StateKey = (Option<String>, String);

/// What the supervisors pane knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Supervisors {
    /// Not asked yet.
    Unknown,
    /// The control plane has no `GET /supervisors` (the reference's has none).
    Unsupported,
    /// The supervisors seen, and those that said they stopped.
    Seen(SupervisorList),
}

/// The form of `f`: an event, its payload's JSON, an optional idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireForm {
    /// The token to fire on; empty: the marked tokens (a bulk fire).
    pub token: String,
    /// The event picked.
    pub event: String,
    /// The payload as typed: empty or a JSON object.
    pub payload: LineEdit,
    /// The idempotency key; empty sends none.
    pub key: LineEdit,
    /// True while the key field has the cursor.
    pub on_key: bool,
}

/// The form of `s`: a token id and its context's JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartForm {
    /// The new token's id.
    pub id: LineEdit,
    /// Its context as typed: empty or a JSON object.
    pub context: LineEdit,
    /// True while the context field has the cursor.
    pub on_context: bool,
}

/// A bulk action's preview, waiting for the operator: the reason goes
/// into each token's history, and the count must be typed to go ahead.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkForm {
    /// The request, as previewed (`dry_run` set).
    pub request: BulkRequest,
    /// The preview: the count and a sample with what each would do.
    pub preview: BulkAnswer,
    /// The reason, as typed.
    pub reason: LineEdit,
    /// The count, as typed.
    pub typed: LineEdit,
    /// True while the count field has the cursor.
    pub on_typed: bool,
}

/// What the keys do now.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Browsing: arrows move, letters act.
    Normal,
    /// `/`: typing the text filter.
    Filter(LineEdit),
    /// `P`: typing a priority for the selected token, or the marked ones.
    Priority(LineEdit),
    /// `c`: waiting for `y` to cancel this token.
    Confirm(String),
    /// `f`, first step: picking one of the state's events.
    Pick {
        /// The token to fire on; empty: the marked tokens.
        token: String,
        /// The events its state has transitions for, in the graph's order.
        events: Vec<String>,
        /// The highlighted one.
        at: usize,
    },
    /// `f`, second step: the payload and the key.
    Fire(FireForm),
    /// `s`: starting a token.
    Start(StartForm),
    /// `?`: the keys.
    Help,
    /// `w`: the workflow graph.
    Graph,
    /// A bulk action's preview: a reason and the typed count go ahead.
    Bulk(Box<BulkForm>),
    /// `d` or Enter: the selected token described whole as JSON (its detail and
    /// its history with every payload), from this line of the text on
    /// (`crate::describe`).
    Describe(usize),
    /// `S`: the schedules, live (`crate::schedules`).
    Schedules,
    /// `L`: the limits' pools, live (`crate::pools`).
    Pools,
    /// `N`: the subscriptions to notifications and their counts, live
    /// (`crate::notifications`).
    Notifications,
}

/// A column the token table can be sorted by (`o` cycles, `O` flips the order).
/// The sort orders the page the daemon answered, not the daemon's listing: the
/// page is the most recently moved tokens that match the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// The daemon's order: most recently moved first.
    #[default]
    Listed,
    /// The token's id.
    Token,
    /// Its state's name.
    State,
    /// Its status.
    Status,
    /// When it entered its state (`entered_at`, the `moved` column), the
    /// shortest time first.
    Moved,
}

impl SortBy {
    /// The next column `o` picks, back to the daemon's order after the last.
    pub fn next(self) -> SortBy {
        match self {
            SortBy::Listed => SortBy::Token,
            SortBy::Token => SortBy::State,
            SortBy::State => SortBy::Status,
            SortBy::Status => SortBy::Moved,
            SortBy::Moved => SortBy::Listed,
        }
    }

    /// The column's name, as the table header and the status line say it.
    pub fn name(self) -> &'static str {
        match self {
            SortBy::Listed => "listed",
            SortBy::Token => "token",
            SortBy::State => "state",
            SortBy::Status => "status",
            SortBy::Moved => "moved",
        }
    }
}

/// Everything the TUI shows.
#[derive(Debug, Clone)]
pub struct Model {
    /// The control plane's URL, for the title: of several addresses, the one
    /// that served last.
    pub url: String,
    /// Every address the TUI was given, in order (a control plane and its
    /// standbys); the title says which of them serves when there are several.
    pub addresses: Vec<String>,
    /// The time of the last tick; ages and countdowns count from it.
    pub now: DateTime<Utc>,
    /// The zone times are shown in when `utc` is off; `None` is the machine's
    /// local zone (tests fix one).
    pub zone: Option<FixedOffset>,
    /// Times in UTC rather than in `zone` (`z` switches).
    pub utc: bool,
    /// `--read-only` or `STATEOUS_READ_ONLY=1`: no key changes a token, and no
    /// request that would is sent.
    pub read_only: bool,
    /// False with `NO_COLOR`: nothing is drawn in colour, and what colour says is
    /// said by text or reverse video.
    pub color: bool,
    /// `v`: the selected token's detail and history on the whole main area.
    pub zoom: bool,
    /// The first row of the history pane shown; `None` follows the end, so that
    /// new entries come into view (PgUp, PgDn, Home, End move it).
    pub history_top: Option<usize>,
    /// The terminal's size: columns, rows.
    pub size: (u16, u16),
    /// Whether the control plane answers.
    pub connection: Connection,
    /// The served workflow, once `GET /workflow` answered.
    pub graph: Option<Graph>,
    /// The tokens of the last `GET /tokens`, most recently moved first.
    pub tokens: Vec<TokenView>,
    /// `None` shows every status.
    pub status_filter: Option<&'static str>,
    /// Only tokens whose id, state or context contains this (case-insensitive).
    pub text_filter: String,
    /// The token whose id is the text filter, read by itself: it shows even when
    /// it is older than the 1000 tokens a page holds.
    pub exact: Option<TokenView>,
    /// The selected row among the shown tokens.
    pub cursor: usize,
    /// The first row the table shows.
    pub scroll: usize,
    /// The selected token as last read, with its tasks, timers and held events.
    pub detail: Option<TokenDetail>,
    /// Whether the daemon has `GET /tokens/{id}/detail`: `None` until asked; the
    /// reference's has not, and then only the token is read.
    pub detail_route: Option<bool>,
    /// The selected token's children.
    pub children: Vec<TokenView>,
    /// The selected token's history; `history_of` names whose it is.
    pub history: Vec<HistoryEntry>,
    /// The token `history` belongs to.
    pub history_of: Option<String>,
    /// The supervisors pane.
    pub supervisors: Supervisors,
    /// What the keys do now.
    pub mode: Mode,
    /// The status line.
    pub status: Option<Status>,
    /// The reads waiting for an answer.
    pub in_flight: BTreeSet<Fetch>,
    /// Set by `q`: the loop ends.
    pub quit: bool,
    /// The live stream's state.
    pub stream: StreamState,
    /// What entries from the stream made out of date since it was last read.
    pub stale: Stale,
    /// Ticks since the screen's data was last read.
    pub quiet_ticks: u32,
    /// The kept graphs (`GET /graphs`), for the graph view's line of the older
    /// graphs that have live tokens.
    pub graphs: Vec<stateous_shared::watch::GraphView>,
    /// The TUI's own access key, once `GET /access/self` answered: a scoped
    /// key is offered only the events it may fire.
    pub own_key: Option<stateous_shared::access::OwnKey>,
    /// Whether `GET /access/self` was asked.
    pub own_key_asked: bool,
    /// The tokens of each state by status (`GET /states`), for the graph view;
    /// `None` until read, and from a daemon without the route.
    pub states: Option<Vec<StateCount>>,
    /// When each state's counts last changed: the graph view highlights it for
    /// a moment (`crate::states::HIGHLIGHT`).
    pub states_changed: BTreeMap<StateKey, DateTime<Utc>>,
    /// The graph view's selected row (`crate::states::rows`).
    pub graph_at: usize,
    /// Only the tokens in this state (picked in the graph view with Enter).
    pub state_filter: Option<StateKey>,
    /// The daemon's dev clock (`serve --dev-clock`), as `/health` said it.
    pub dev_clock: Option<DevClock>,
    /// The schedules, as `GET /schedules` last said (`None` until read).
    pub schedules: Option<Vec<stateous_shared::schedules::ScheduleView>>,
    /// The schedules view's picked row.
    pub schedules_at: usize,
    /// The limits, as `GET /limits` last said (`None` until read).
    pub pools: Option<Vec<stateous_shared::claim_limits::LimitView>>,
    /// The subscriptions to notifications, as `GET /notify` last said (`None`
    /// until read, or when refused).
    pub subscriptions: Option<Vec<stateous_shared::notify::SubscriptionView>>,
    /// The notifications view's picked row.
    pub subscriptions_at: usize,
    /// Why `GET /notify` was refused (it needs an admin key, or the socket).
    pub subscriptions_refused: Option<String>,
    /// A filter in the filter language (`/` with an expression), sent as `where`
    /// so that the daemon matches every token, not only those loaded.
    pub filter: Option<String>,
    /// How many tokens the table's filters match in all, as the last page said
    /// (`x-total-count`); `None` from a daemon that does not say.
    pub total: Option<u64>,
    /// The tokens marked with space, for a bulk action.
    pub marks: BTreeSet<String>,
    /// `*`: every token the filters match is marked; a bulk action goes by the
    /// filter rather than by ids.
    pub mark_all: bool,
    /// The selected token's "why" facts; `None` until read, and from a daemon
    /// without the route.
    pub why: Option<Why>,
    /// The bulk action running now, as far as it went.
    pub running: Option<BulkAnswer>,
    /// `G` was pressed while more tokens match than were read: the next page
    /// asks for all the table holds, and the selection goes to its last row.
    pub to_bottom: bool,
    /// `F`: the main area takes the supervisors pane's rows too.
    pub full: bool,
    /// The column the shown page is sorted by (`o`).
    pub sort: SortBy,
    /// The sort goes the other way (`O`).
    pub sort_reversed: bool,
}

impl Model {
    /// A model for the control plane at `url`, before anything was read.
    pub fn new(url: &str, now: DateTime<Utc>) -> Model {
        Model {
            url: url.to_string(),
            addresses: vec![url.to_string()],
            now,
            zone: None,
            utc: false,
            read_only: false,
            color: true,
            zoom: false,
            history_top: None,
            size: (80, 24),
            connection: Connection::Connecting,
            graph: None,
            tokens: Vec::new(),
            status_filter: None,
            text_filter: String::new(),
            exact: None,
            cursor: 0,
            scroll: 0,
            detail: None,
            detail_route: None,
            children: Vec::new(),
            history: Vec::new(),
            history_of: None,
            supervisors: Supervisors::Unknown,
            mode: Mode::Normal,
            status: None,
            in_flight: BTreeSet::new(),
            quit: false,
            stream: StreamState::Off,
            stale: Stale::default(),
            quiet_ticks: 0,
            graphs: Vec::new(),
            own_key: None,
            own_key_asked: false,
            states: None,
            states_changed: BTreeMap::new(),
            graph_at: 0,
            state_filter: None,
            dev_clock: None,
            schedules: None,
            schedules_at: 0,
            pools: None,
            subscriptions: None,
            subscriptions_at: 0,
            subscriptions_refused: None,
            filter: None,
            total: None,
            marks: BTreeSet::new(),
            mark_all: false,
            why: None,
            running: None,
            to_bottom: false,
            full: false,
            sort: SortBy::Listed,
            sort_reversed: false,
        }
    }

    /// The tokens the table shows: those of the status filter (and of the state
    /// picked in the graph view) whose id, state or context contains the text
    /// filter, in the order of [`Model::sort`] (a stable sort of the page read,
    /// so equal keys keep the daemon's order).
    pub fn shown(&self) -> Vec<&TokenView> {
        let mut shown = self.filtered();
        let key = |t: &&TokenView| -> (String, String) {
            match self.sort {
                SortBy::Listed => (String::new(), String::new()),
                SortBy::Token => (t.token.clone(), String::new()),
                SortBy::State => (t.state.clone(), t.token.clone()),
                SortBy::Status => (t.status.clone(), t.token.clone()),
                // Newest entry first: the shortest time in the state.
                SortBy::Moved => (String::new(), t.entered_at.clone()),
            }
        };
        match (self.sort, self.sort_reversed) {
            (SortBy::Listed, false) => {}
            (SortBy::Listed, true) => shown.reverse(),
            (SortBy::Moved, reversed) => {
                shown.sort_by_cached_key(key);
                if !reversed {
                    shown.reverse();
                }
            }
            (_, reversed) => {
                shown.sort_by_cached_key(key);
                if reversed {
                    shown.reverse();
                }
            }
        }
        shown
    }

    fn filtered(&self) -> Vec<&TokenView> {
        let needle = self.text_filter.to_lowercase();
        let paged = self
            .exact
            .as_ref()
            .filter(|exact| !self.tokens.iter().any(|t| t.token == exact.token));
        self.tokens
            .iter()
            .chain(paged)
            .filter(|t| self.status_filter.is_none_or(|s| t.status == s))
            .filter(|t| self.state_filter.as_ref().is_none_or(|k| in_state(t, k)))
            .filter(|t| needle.is_empty() || matches_text(t, &needle))
            .collect()
    }

    /// Whether more tokens match the filters than the table read, which then
    /// holds the [`MOST_TOKENS`] most recently moved (text and state filters are
    /// matched here, over those, so they never say).
    pub fn more_than_read(&self) -> bool {
        self.text_filter.is_empty()
            && self.state_filter.is_none()
            && self
                .total
                .is_some_and(|total| total > self.tokens.len() as u64)
    }

    /// Whether the table holds all it can and more tokens match: those are
    /// reached only by a filter.
    pub fn capped(&self) -> bool {
        self.more_than_read() && self.tokens.len() as u64 >= u64::from(MOST_TOKENS)
    }

    /// The id of the selected token, if the table shows any.
    pub fn selected(&self) -> Option<String> {
        self.shown().get(self.cursor).map(|t| t.token.clone())
    }

    /// How many token rows fit the table at the current size.
    pub fn table_rows(&self) -> usize {
        crate::view::table_rows(self)
    }

    /// Show `text` in the status line; red when `error`.
    pub fn say(&mut self, text: impl Into<String>, error: bool) {
        self.status = Some(Status {
            text: text.into(),
            error,
        });
    }
}

/// The child workflow of a token: a child's id ends with its workflow's name
/// (`<parent>.<state>.<visit>.<workflow>`); `None` for the main workflow.
pub fn workflow_of(token: &TokenView) -> Option<&str> {
    token.parent.as_ref()?;
    token.token.rsplit('.').next()
}

/// Whether `token` is in the state `key`.
fn in_state(token: &TokenView, key: &StateKey) -> bool {
    token.state == key.1 && workflow_of(token) == key.0.as_deref()
}

/// Whether `token`'s id, state or context holds `needle` (already lower case).
fn matches_text(token: &TokenView, needle: &str) -> bool {
    token.token.to_lowercase().contains(needle)
        || token.state.to_lowercase().contains(needle)
        || serde_json::Value::Object(token.context.clone())
            .to_string()
            .to_lowercase()
            .contains(needle)
}
