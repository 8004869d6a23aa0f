//! `update`: the model after a message, and the requests to make. It does no I/O
//! and reads no clock (`docs/design.md`, "The TUI"): the time comes in `Msg::Tick`.

use stateous_client::TokenQuery;
use stateous_client::WatchEntry;
use stateous_shared::graph::{canonical, Graph};
use stateous_shared::wire::TokenView;

use crate::keys;
use crate::message::{Acted, Command, Msg};
use crate::model::{
    Connection, Fetch, Mode, Model, Problem, Stale, StreamState, Supervisors, MOST_TOKENS,
};

/// With a live stream and nothing new, the screen's data is read this often
/// anyway (in ticks).
pub const QUIET_TICKS: u32 = 10;

/// Apply `msg` to `model`; the commands are the requests to send. A read-only
/// model sends no request that changes a token, whatever asked for one.
pub fn update(model: &mut Model, msg: Msg) -> Vec<Command> {
    let mut commands = step(model, msg);
    if model.read_only {
        commands.retain(|command| !command.changes_a_token());
    }
    commands
}

fn step(model: &mut Model, msg: Msg) -> Vec<Command> {
    match msg {
        Msg::Key(key) => return keys::key(model, key),
        Msg::Resize(columns, rows) => model.size = (columns, rows),
        Msg::Tick(now) => {
            model.now = crate::states::daemon_now(model, now);
            return tick(model);
        }
        Msg::Stream(state) => {
            model.stream = state;
            // What happened while the stream was away is read whole, at once.
            model.quiet_ticks = QUIET_TICKS;
        }
        Msg::Entry(entry) => stream_entry(model, entry),
        Msg::Serving(url) => {
            let was = std::mem::replace(&mut model.url, url);
            model.say(
                format!(
                    "the control plane at {was} does not serve; connected to {}",
                    model.url
                ),
                false,
            );
        }
        Msg::Tokens(status, answer) => return tokens(model, status, None, answer),
        Msg::Page {
            status,
            filter,
            answer,
        } => {
            if filter == model.filter && status.as_deref() == model.status_filter {
                if let Ok((_, total)) = &answer {
                    model.total = *total;
                }
            }
            let answer = answer.map(|(tokens, _)| tokens);
            return tokens(model, status, filter, answer);
        }
        Msg::Why(id, answer) => {
            model.in_flight.remove(&Fetch::Why(id.clone()));
            if let Some(why) = answered(model, answer) {
                if model.selected().as_deref() == Some(id.as_str()) {
                    model.why = why.map(|why| *why);
                }
            }
        }
        Msg::Previewed(request, answer) => crate::marks::previewed(model, *request, answer),
        Msg::Ran { so_far, done } => return crate::marks::ran(model, so_far, done),
        Msg::RunFailed(problem) => crate::marks::failed(model, &problem),
        Msg::Token(id, answer) => {
            model.in_flight.remove(&Fetch::Token(id.clone()));
            if let Some((detail, route)) = answered(model, answer) {
                model.detail_route = Some(route);
                if model.selected().as_deref() == Some(id.as_str()) {
                    model.detail = Some(detail);
                }
            }
        }
        Msg::History(id, answer) => {
            model.in_flight.remove(&Fetch::History(id.clone()));
            if let Some(entries) = answered(model, answer) {
                if model.selected().as_deref() == Some(id.as_str()) {
                    model.history = entries;
                    model.history_of = Some(id);
                }
            }
        }
        Msg::Children(id, answer) => {
            model.in_flight.remove(&Fetch::Children(id.clone()));
            if let Some(children) = answered(model, answer) {
                if model.selected().as_deref() == Some(id.as_str()) {
                    model.children = children;
                }
            }
        }
        Msg::Exact(id, answer) => {
            model.in_flight.remove(&Fetch::Exact);
            let before = model.selected();
            if let Some(token) = answered(model, answer) {
                if id == model.text_filter {
                    model.exact = token;
                }
            }
            return read_new_selection(model, before);
        }
        Msg::Workflow(answer) => {
            model.in_flight.remove(&Fetch::Workflow);
            if let Some(document) = answered(model, answer) {
                match Graph::load(&canonical(&document)) {
                    Ok(graph) => model.graph = Some(graph),
                    Err(error) => model.say(format!("the served workflow: {error}"), true),
                }
            }
        }
        Msg::Supervisors(answer) => {
            model.in_flight.remove(&Fetch::Supervisors);
            if let Some(list) = answered(model, answer) {
                model.supervisors = match list {
                    Some(list) => Supervisors::Seen(list),
                    None => Supervisors::Unsupported,
                };
            }
        }
        Msg::States(answer) => crate::states::answered(model, answer),
        Msg::Graphs(graphs) => model.graphs = graphs,
        Msg::OwnKey(own) => {
            model.in_flight.remove(&Fetch::OwnKey);
            model.own_key = own;
        }
        Msg::Health(answer) => crate::states::health(model, answer),
        Msg::Done(answer) => return done(model, answer),
        Msg::Schedules(answer) => crate::schedules::answered(model, answer),
        Msg::Pools(answer) => crate::pools::answered(model, answer),
        Msg::ScheduleSteered(answer) => return crate::schedules::steered(model, answer),
        Msg::Subscriptions(answer) => crate::notifications::answered(model, answer),
    }
    Vec::new()
}

/// While the stream is live, a tick reads only what its entries made out of date
/// (the table, the selected token, its history when an entry is missing), and
/// everything every [`QUIET_TICKS`], for what the ledger does not record. The
/// supervisors pane is read every tick, since heartbeats are not entries.
/// Without the stream, everything is read every tick.
fn tick(model: &mut Model) -> Vec<Command> {
    model.quiet_ticks += 1;
    if model.stream != StreamState::Live || model.quiet_ticks >= QUIET_TICKS {
        model.quiet_ticks = 0;
        model.stale = Stale::default();
        return refresh(model);
    }
    let stale = std::mem::take(&mut model.stale);
    let mut commands = Vec::new();
    let mut want = |model: &mut Model, fetch: Fetch, command: Command| {
        if model.in_flight.insert(fetch) {
            commands.push(command);
        }
    };
    if model.supervisors != Supervisors::Unsupported {
        want(model, Fetch::Supervisors, Command::Supervisors);
    }
    // A dev clock moves when told to, not with the ticks: its header is read
    // each tick.
    if model.dev_clock.is_some() {
        want(model, Fetch::Health, Command::Health);
    }
    if stale.states && crate::states::wanted(model) {
        want(model, Fetch::States, Command::States);
    }
    if let Some((fetch, read)) = mode_read(model) {
        want(model, fetch, read);
    }
    if stale.table {
        let query = tokens_query(model);
        want(model, Fetch::Tokens, Command::Tokens(query));
    }
    if let Some(id) = model.selected() {
        if stale.token {
            let (fetch, read) = token_read(model, &id);
            want(model, fetch, read);
            want(
                model,
                Fetch::Children(id.clone()),
                Command::Children(id.clone()),
            );
            want(model, Fetch::Why(id.clone()), Command::Why(id.clone()));
        }
        if stale.history {
            want(model, Fetch::History(id.clone()), Command::History(id));
        }
    }
    commands
}

/// A ledger entry from the stream: the selected token's history grows by it at
/// once when it follows the last entry shown; what it makes out of date is read
/// on the next tick.
fn stream_entry(model: &mut Model, entry: WatchEntry) {
    model.stale.table = true;
    if crate::states::moves_counts(&entry.entry.kind) {
        model.stale.states = true;
    }
    let selected = model.selected();
    if selected.as_deref() == Some(entry.token.as_str()) {
        model.stale.token = true;
    }
    if model.history_of.as_deref() != Some(entry.token.as_str()) {
        if selected.as_deref() == Some(entry.token.as_str()) {
            model.stale.history = true;
        }
        return;
    }
    let last = model.history.last().map_or(0, |e| e.seq);
    if entry.entry.seq == last + 1 {
        model.history.push(entry.entry);
    } else if entry.entry.seq > last + 1 {
        model.stale.history = true;
    }
}

/// The reads that keep the screen current, each unless one is in flight: the
/// tokens (only as many as the table shows, plus a page), the workflow until it is
/// known, the supervisors, and the selected token with its history and children.
pub fn refresh(model: &mut Model) -> Vec<Command> {
    let mut commands = Vec::new();
    let mut want = |model: &mut Model, fetch: Fetch, command: Command| {
        if model.in_flight.insert(fetch) {
            commands.push(command);
        }
    };
    let query = tokens_query(model);
    want(model, Fetch::Tokens, Command::Tokens(query));
    // A filter that could be a token id is also read as one.
    let text = model.text_filter.clone();
    if !text.is_empty() && !text.contains(char::is_whitespace) {
        want(model, Fetch::Exact, Command::Exact(text));
    }
    if model.graph.is_none() {
        want(model, Fetch::Workflow, Command::Workflow);
    }
    // Once: what the TUI's own key may do (a scoped key fires only its events).
    if !model.own_key_asked {
        model.own_key_asked = true;
        want(model, Fetch::OwnKey, Command::OwnKey);
    }
    if model.supervisors != Supervisors::Unsupported {
        want(model, Fetch::Supervisors, Command::Supervisors);
    }
    want(model, Fetch::Health, Command::Health);
    if crate::states::wanted(model) {
        want(model, Fetch::States, Command::States);
    }
    if let Some((fetch, read)) = mode_read(model) {
        want(model, fetch, read);
    }
    if let Some(id) = model.selected() {
        let (fetch, read) = token_read(model, &id);
        want(model, fetch, read);
        want(
            model,
            Fetch::History(id.clone()),
            Command::History(id.clone()),
        );
        want(
            model,
            Fetch::Children(id.clone()),
            Command::Children(id.clone()),
        );
        want(model, Fetch::Why(id.clone()), Command::Why(id));
    }
    commands
}

/// The read of the token `id`: with its tasks, timers and held events unless
/// the daemon showed it has no detail route.
/// The read of the open view's pane, when it is one that every tick reads: the
/// schedules move with the clock, not with the ledger, and the pools and the
/// notifications' counts with the claims and the sender.
fn mode_read(model: &Model) -> Option<(Fetch, Command)> {
    match model.mode {
        Mode::Schedules => Some((Fetch::Schedules, Command::Schedules)),
        Mode::Pools => Some((Fetch::Limits, Command::Pools)),
        Mode::Notifications => Some((Fetch::Subscriptions, Command::Subscriptions)),
        _ => None,
    }
}

/// Open the view `mode` (`S`, `L`, `N`) and read its pane, unless that read is
/// under way already.
pub(crate) fn open_view(model: &mut Model, mode: Mode) -> Vec<Command> {
    model.mode = mode;
    let Some((fetch, read)) = mode_read(model) else {
        return Vec::new();
    };
    if model.in_flight.insert(fetch) {
        return vec![read];
    }
    Vec::new()
}

fn token_read(model: &Model, id: &str) -> (Fetch, Command) {
    let read = Command::Token {
        id: id.to_string(),
        detail: model.detail_route != Some(false),
    };
    (Fetch::Token(id.to_string()), read)
}

/// The page of tokens to ask for: the status filter, the filter language's
/// filter (matched by the daemon, over every token), and the rows on screen plus
/// one page ahead (all 1000 the API gives while a text or state filter or a
/// sort is set, since those are matched or ordered here).
fn tokens_query(model: &Model) -> TokenQuery {
    let rows = model.table_rows().max(1);
    let ahead = (model.scroll + 2 * rows) as u32;
    let sorted = model.sort != crate::model::SortBy::Listed || model.sort_reversed;
    let limit = if model.text_filter.is_empty()
        && model.state_filter.is_none()
        && !model.to_bottom
        && !sorted
    {
        ahead.clamp(1, MOST_TOKENS)
    } else {
        MOST_TOKENS
    };
    TokenQuery {
        status: model.status_filter.map(str::to_string),
        parent: None,
        limit: Some(limit),
        filter: model.filter.clone(),
        ..TokenQuery::default()
    }
}

/// A page of tokens; one read under another status filter or filter than the
/// current ones is dropped (the filter changed while it was out).
fn tokens(
    model: &mut Model,
    status: Option<String>,
    filter: Option<String>,
    answer: Result<Vec<TokenView>, Problem>,
) -> Vec<Command> {
    if status.as_deref() != model.status_filter || filter != model.filter {
        return Vec::new();
    }
    model.in_flight.remove(&Fetch::Tokens);
    let before = model.selected();
    let Some(tokens) = answered(model, answer) else {
        return Vec::new();
    };
    model.tokens = tokens;
    // The selection follows its token when others move past it.
    let shown = model.shown();
    let at = before
        .as_ref()
        .and_then(|id| shown.iter().position(|t| &t.token == id));
    let count = shown.len();
    model.cursor = at.unwrap_or(model.cursor).min(count.saturating_sub(1));
    if std::mem::take(&mut model.to_bottom) {
        model.cursor = count.saturating_sub(1);
        keys::say_if_capped(model);
    }
    keys::follow_cursor(model);
    read_new_selection(model, before)
}

/// When an answer changed which token is selected (the first page came, the
/// selected one left the filter), the new one is read at once.
fn read_new_selection(model: &mut Model, before: Option<String>) -> Vec<Command> {
    if model.selected() == before {
        return Vec::new();
    }
    keys::forget_selection(model);
    refresh(model)
}

/// The value of a read's answer; a failure goes to the connection state and the
/// status line instead.
pub(crate) fn answered<T>(model: &mut Model, answer: Result<T, Problem>) -> Option<T> {
    match answer {
        Ok(value) => {
            if model.connection != Connection::Connected {
                let was_lost = matches!(model.connection, Connection::Lost(_));
                model.connection = Connection::Connected;
                if was_lost {
                    // The daemon may have come back with another graph.
                    model.graph = None;
                    model.supervisors = Supervisors::Unknown;
                    model.detail_route = None;
                    model.say("connected again", false);
                }
            }
            Some(value)
        }
        Err(Problem::Unreachable(why)) => {
            model.connection = Connection::Lost(why);
            None
        }
        Err(problem) => {
            model.say(describe(&problem), true);
            None
        }
    }
}

/// The status line after an action.
fn done(model: &mut Model, answer: Result<Acted, Problem>) -> Vec<Command> {
    match answer {
        Ok(Acted {
            said: Some(said), ..
        }) => {
            model.say(said, false);
            refresh(model)
        }
        Ok(acted) => {
            let line = stateous_shared::history::token_line(&acted.token);
            let line = if acted.duplicate {
                format!("duplicate: {line}")
            } else {
                line
            };
            model.say(line, false);
            refresh(model)
        }
        Err(Problem::Unreachable(why)) => {
            model.say(format!("not sent: {why}"), true);
            model.connection = Connection::Lost(why);
            Vec::new()
        }
        Err(problem) => {
            model.say(describe(&problem), true);
            Vec::new()
        }
    }
}

/// A problem as the status line tells it: a refusal's sentence and its code.
pub fn describe(problem: &Problem) -> String {
    match problem {
        Problem::Refused {
            status,
            code,
            sentence,
        } => format!("refused ({status} {code}): {sentence}"),
        Problem::Unreachable(why) | Problem::Other(why) => why.clone(),
    }
}
