//! `update` with plain messages: every key and every answer, refusals included.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use stateous_client::{Steer, TokenQuery};

use super::*;
use crate::message::Acted;
use crate::model::{Fetch, Mode, Problem};

fn refused(status: u16, code: &str, sentence: &str) -> Problem {
    Problem::Refused {
        status,
        code: code.into(),
        sentence: sentence.into(),
    }
}

fn status_line(model: &Model) -> String {
    model
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn a_tick_reads_what_is_on_screen_once_until_it_is_answered() {
    let mut model = model();
    model.graph = None;
    let commands = update(&mut model, Msg::Tick(now()));
    let rows = model.table_rows() as u32;
    assert_eq!(
        commands,
        vec![
            Command::Tokens(TokenQuery {
                status: None,
                parent: None,
                limit: Some(2 * rows),
                ..TokenQuery::default()
            }),
            Command::Workflow,
            Command::OwnKey,
            Command::Supervisors,
            Command::Health,
            Command::Token {
                id: "ORD-1".into(),
                detail: true
            },
            Command::History("ORD-1".into()),
            Command::Children("ORD-1".into()),
            Command::Why("ORD-1".into()),
        ]
    );
    assert!(update(&mut model, Msg::Tick(now())).is_empty());
    let tokens = model.tokens.clone();
    update(&mut model, Msg::Tokens(None, Ok(tokens)));
    let again = update(&mut model, Msg::Tick(now()));
    assert!(matches!(again.as_slice(), [Command::Tokens(_)]));
}

#[test]
fn the_selection_follows_its_token_when_others_move_past_it() {
    let mut model = model();
    press(&mut model, KeyCode::Char('j'));
    assert_eq!(model.selected().as_deref(), Some("ORD-2"));
    let mut moved = model.tokens.clone();
    moved.rotate_left(1);
    moved.insert(0, token("ORD-9", "draft", "active", 0));
    update(&mut model, Msg::Tokens(None, Ok(moved)));
    assert_eq!(model.selected().as_deref(), Some("ORD-2"));
    assert_eq!(model.cursor, 1);
}

#[test]
fn moving_reads_the_new_selection_at_once_and_clears_the_old_one() {
    let mut model = full_model();
    let commands = press(&mut model, KeyCode::Down);
    assert!(commands.contains(&Command::History("ORD-2".into())));
    assert!(model.detail.is_none() && model.history.is_empty());
    assert!(press(&mut model, KeyCode::Char('G'))
        .iter()
        .any(|c| matches!(c, Command::Token { id, .. } if id == "ORD-3")));
    assert!(press(&mut model, KeyCode::Down).is_empty(), "already last");
    press(&mut model, KeyCode::Char('g'));
    assert_eq!(model.selected().as_deref(), Some("ORD-1"));
    press(&mut model, KeyCode::Up);
    assert_eq!(model.cursor, 0);
}

#[test]
fn pause_and_resume_send_the_selected_token_and_show_the_answer() {
    let mut model = model();
    assert_eq!(
        press(&mut model, KeyCode::Char('p')),
        vec![Command::Steer("ORD-1".into(), Steer::Pause)]
    );
    assert_eq!(status_line(&model), "pausing ORD-1...");
    let paused = token("ORD-1", "review", "paused", 65);
    let after = update(
        &mut model,
        Msg::Done(Ok(Acted {
            token: paused,
            duplicate: false,
            said: None,
        })),
    );
    assert_eq!(status_line(&model), "ORD-1: review, paused");
    assert!(after.iter().any(|c| matches!(c, Command::Tokens(_))));
    assert_eq!(
        press(&mut model, KeyCode::Char('r')),
        vec![Command::Steer("ORD-1".into(), Steer::Resume)]
    );
}

#[test]
fn a_refusal_shows_its_sentence_and_code_in_the_status_line() {
    let mut model = model();
    press(&mut model, KeyCode::Char('r'));
    let sentence = "token 'ORD-1' is active; only a paused token can be resumed";
    update(
        &mut model,
        Msg::Done(Err(refused(409, "token_not_active", sentence))),
    );
    let status = model.status.clone().expect("a status line");
    assert!(status.error);
    assert_eq!(
        status.text,
        format!("refused (409 token_not_active): {sentence}")
    );
    assert_eq!(model.connection, Connection::Connected);
}

#[test]
fn cancel_asks_first_and_only_y_sends_it() {
    let mut model = model();
    assert!(press(&mut model, KeyCode::Char('c')).is_empty());
    assert_eq!(model.mode, Mode::Confirm("ORD-1".into()));
    assert!(press(&mut model, KeyCode::Char('n')).is_empty());
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(status_line(&model), "ORD-1 was not cancelled");
    press(&mut model, KeyCode::Char('c'));
    assert_eq!(
        press(&mut model, KeyCode::Char('y')),
        vec![Command::Steer("ORD-1".into(), Steer::Cancel)]
    );
}

#[test]
fn fire_picks_an_event_of_the_state_and_checks_the_payload_before_sending() {
    let mut model = model();
    press(&mut model, KeyCode::Char('f'));
    assert_eq!(
        model.mode,
        Mode::Pick {
            token: "ORD-1".into(),
            events: vec!["reviewed".into()],
            at: 0
        }
    );
    press(&mut model, KeyCode::Enter);
    assert!(matches!(model.mode, Mode::Fire(_)));
    // `{}` lacks `approved`: Enter sends nothing and says why.
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    assert!(status_line(&model).contains("'approved' is a required property"));
    // Typing replaces the suggested `{}`.
    typed(&mut model, "{\"approved\": 1}");
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    assert!(status_line(&model).contains("is not of type 'boolean'"));
    for _ in 0..2 {
        press(&mut model, KeyCode::Backspace);
    }
    typed(&mut model, "true}");
    press(&mut model, KeyCode::Tab);
    typed(&mut model, "k-1");
    let sent = press(&mut model, KeyCode::Enter);
    assert_eq!(
        sent,
        vec![Command::Fire {
            token: "ORD-1".into(),
            event: "reviewed".into(),
            payload: json!({"approved": true}).as_object().cloned(),
            key: Some("k-1".into()),
        }]
    );
    assert_eq!(model.mode, Mode::Normal);
    update(
        &mut model,
        Msg::Done(Ok(Acted {
            token: token("ORD-1", "review", "completed", 0),
            duplicate: true,
            said: None,
        })),
    );
    assert_eq!(status_line(&model), "duplicate: ORD-1: review, completed");
}

#[test]
fn fire_says_why_when_no_event_can_be_picked() {
    let mut model = model();
    press(&mut model, KeyCode::Char('G'));
    press(&mut model, KeyCode::Char('f'));
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(status_line(&model), "ORD-3 is completed: no event moves it");
    model.graph = None;
    press(&mut model, KeyCode::Char('g'));
    press(&mut model, KeyCode::Char('f'));
    assert!(status_line(&model).starts_with("the workflow is not read yet"));
    press(&mut model, KeyCode::Esc);
    assert_eq!(model.status, None);
}

#[test]
fn fire_refused_by_the_daemon_keeps_the_ui_and_shows_the_code() {
    let mut model = model();
    press(&mut model, KeyCode::Char('f'));
    press(&mut model, KeyCode::Esc);
    assert_eq!(model.mode, Mode::Normal);
    let sentence = "'reviewed' cannot move ORD-1 from draft";
    update(
        &mut model,
        Msg::Done(Err(refused(409, "event_not_allowed", sentence))),
    );
    assert_eq!(
        status_line(&model),
        format!("refused (409 event_not_allowed): {sentence}")
    );
}

#[test]
fn start_checks_the_id_and_the_context_then_sends() {
    let mut model = model();
    press(&mut model, KeyCode::Char('s'));
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    assert_eq!(status_line(&model), "not sent: type the new token's id");
    typed(&mut model, "ORD-7");
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    assert!(status_line(&model).contains("'title' is a required property"));
    press(&mut model, KeyCode::Tab);
    typed(&mut model, "{\"title\": \"pen\"}");
    assert_eq!(
        press(&mut model, KeyCode::Enter),
        vec![Command::Start {
            token: "ORD-7".into(),
            context: json!({"title": "pen"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        }]
    );
    update(
        &mut model,
        Msg::Done(Err(refused(422, "invalid_token_id", "a token id has ..."))),
    );
    assert_eq!(
        status_line(&model),
        "refused (422 invalid_token_id): a token id has ..."
    );
    press(&mut model, KeyCode::Char('s'));
    typed(&mut model, "ORD-8");
    press(&mut model, KeyCode::Tab);
    typed(&mut model, "x");
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    let line = status_line(&model);
    assert!(
        line.starts_with("not sent: the context is not valid JSON"),
        "{line}"
    );
}

#[test]
fn filters_by_text_and_status_ask_for_the_right_page() {
    let mut model = model();
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "ord-2");
    assert_eq!(model.text_filter, "", "applied only on Enter");
    let commands = press(&mut model, KeyCode::Enter);
    assert_eq!(model.text_filter, "ord-2");
    let Some(Command::Tokens(query)) = commands.first() else {
        panic!("a read of the tokens: {commands:?}");
    };
    assert_eq!(query.limit, Some(1000));
    model.tokens = vec![
        token("ORD-1", "draft", "active", 1),
        token("ORD-2", "draft", "paused", 1),
    ];
    assert_eq!(model.selected().as_deref(), Some("ORD-2"));
    press(&mut model, KeyCode::Char('/'));
    press(&mut model, KeyCode::Esc);
    assert_eq!(model.text_filter, "");
    let commands = press(&mut model, KeyCode::Char('t'));
    let Some(Command::Tokens(query)) = commands.first() else {
        panic!("a read of the tokens: {commands:?}");
    };
    assert_eq!(query.status.as_deref(), Some("active"));
    for _ in 0..5 {
        press(&mut model, KeyCode::Char('t'));
    }
    assert_eq!(model.status_filter, None);
    // An answer to the read made under the old status filter is dropped.
    press(&mut model, KeyCode::Char('t'));
    let late = vec![token("ORD-5", "draft", "cancelled", 1)];
    update(&mut model, Msg::Tokens(None, Ok(late)));
    assert!(model.tokens.is_empty());
}

#[test]
fn actions_without_a_selection_say_so() {
    let mut model = model();
    model.tokens.clear();
    for key in ['p', 'r', 'c', 'f'] {
        model.status = None;
        assert!(press(&mut model, KeyCode::Char(key)).is_empty());
        assert_eq!(status_line(&model), "no token is selected");
        assert_eq!(model.mode, Mode::Normal);
    }
}

#[test]
fn a_lost_daemon_is_retried_and_read_afresh_when_it_is_back() {
    let mut model = model();
    update(&mut model, Msg::Tick(now()));
    update(
        &mut model,
        Msg::Tokens(None, Err(Problem::Unreachable("cannot connect".into()))),
    );
    assert_eq!(model.connection, Connection::Lost("cannot connect".into()));
    assert!(!model.tokens.is_empty(), "the last answer stays on screen");
    assert!(!model.in_flight.contains(&Fetch::Tokens));
    let back = vec![token("ORD-1", "draft", "active", 1)];
    update(&mut model, Msg::Tokens(None, Ok(back)));
    assert_eq!(model.connection, Connection::Connected);
    assert_eq!(status_line(&model), "connected again");
    assert!(model.graph.is_none(), "the graph is read again");
    let commands = update(&mut model, Msg::Tick(now()));
    assert!(commands.contains(&Command::Workflow));
}

#[test]
fn a_daemon_without_the_added_routes_is_asked_once() {
    let mut model = model();
    update(&mut model, Msg::Supervisors(Ok(None)));
    update(
        &mut model,
        Msg::Token(
            "ORD-1".into(),
            Ok((
                stateous_shared::watch::TokenDetail {
                    token: token("ORD-1", "review", "active", 1),
                    tasks: Vec::new(),
                    timers: Vec::new(),
                    held: Vec::new(),
                    graph: None,
                    graph_served: true,
                    priority: 0,
                    budget: None,
                },
                false,
            )),
        ),
    );
    let commands = update(&mut model, Msg::Tick(now()));
    assert!(!commands.contains(&Command::Supervisors));
    assert!(commands.contains(&Command::Token {
        id: "ORD-1".into(),
        detail: false
    }));
}

#[test]
fn answers_for_a_token_no_longer_selected_are_dropped() {
    let mut model = model();
    press(&mut model, KeyCode::Down);
    update(&mut model, Msg::History("ORD-1".into(), Ok(Vec::new())));
    assert_eq!(model.history_of, None);
}

#[test]
fn help_graph_and_quit() {
    let mut model = model();
    press(&mut model, KeyCode::Char('?'));
    assert_eq!(model.mode, Mode::Help);
    press(&mut model, KeyCode::Char('x'));
    assert_eq!(model.mode, Mode::Normal);
    press(&mut model, KeyCode::Char('w'));
    assert_eq!(model.mode, Mode::Graph);
    press(&mut model, KeyCode::Esc);
    assert!(!model.quit);
    press(&mut model, KeyCode::Char('q'));
    assert!(model.quit);
    let mut other = super::model();
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    update(&mut other, Msg::Key(ctrl_c));
    assert!(other.quit);
}

fn entry(token: &str, seq: i64, kind: &str) -> stateous_client::WatchEntry {
    stateous_client::WatchEntry {
        token: token.into(),
        entry: stateous_shared::wire::HistoryEntry {
            seq,
            at: at(0),
            kind: kind.into(),
            data: Default::default(),
            by: None,
        },
    }
}

#[test]
fn stream_entries_grow_the_selected_history_once_each() {
    let mut model = full_model();
    update(&mut model, Msg::Entry(entry("ORD-1", 10, "paused")));
    update(&mut model, Msg::Entry(entry("ORD-1", 10, "paused")));
    update(&mut model, Msg::Entry(entry("ORD-1", 9, "task_claimed")));
    update(&mut model, Msg::Entry(entry("ORD-2", 11, "resumed")));
    let seqs: Vec<i64> = model.history.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 3, 5, 7, 9, 10]);
    assert!(model.stale.table && model.stale.token);
    assert!(!model.stale.history, "nothing is missing");
    update(&mut model, Msg::Entry(entry("ORD-1", 12, "resumed")));
    assert_eq!(
        model.history.len(),
        6,
        "11 is missing: the history is read again"
    );
    assert!(model.stale.history);
}

#[test]
fn with_a_live_stream_a_tick_reads_only_what_entries_made_stale() {
    let mut model = full_model();
    update(&mut model, Msg::Stream(crate::model::StreamState::Live));
    let first = update(&mut model, Msg::Tick(now()));
    assert!(
        first.iter().any(|c| matches!(c, Command::Tokens(_))),
        "all at once"
    );
    model.in_flight.clear();
    let quiet = update(&mut model, Msg::Tick(now()));
    assert_eq!(
        quiet,
        vec![Command::Supervisors],
        "only the supervisors pane"
    );
    model.in_flight.clear();
    update(&mut model, Msg::Entry(entry("ORD-3", 1, "started")));
    let other = update(&mut model, Msg::Tick(now()));
    assert_eq!(other.len(), 2, "the supervisors and the table: {other:?}");
    model.in_flight.clear();
    update(&mut model, Msg::Entry(entry("ORD-1", 10, "paused")));
    let ours = update(&mut model, Msg::Tick(now()));
    assert!(ours.contains(&Command::Token {
        id: "ORD-1".into(),
        detail: true
    }));
    assert!(
        !ours.contains(&Command::History("ORD-1".into())),
        "the stream gave it"
    );
    model.in_flight.clear();
    for _ in 4..crate::update::QUIET_TICKS {
        let commands = update(&mut model, Msg::Tick(now()));
        assert_eq!(commands, vec![Command::Supervisors]);
        model.in_flight.clear();
    }
    let anyway = update(&mut model, Msg::Tick(now()));
    assert!(
        anyway.contains(&Command::History("ORD-1".into())),
        "everything, now and then"
    );
    model.in_flight.clear();
    update(&mut model, Msg::Stream(crate::model::StreamState::Off));
    for _ in 0..2 {
        let polled = update(&mut model, Msg::Tick(now()));
        assert!(polled.iter().any(|c| matches!(c, Command::Tokens(_))));
        model.in_flight.clear();
    }
}

#[test]
fn the_filter_line_takes_a_status_word_and_text() {
    let mut model = model();
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "status:paused ord");
    press(&mut model, KeyCode::Enter);
    assert_eq!(model.status_filter, Some("paused"));
    assert_eq!(model.text_filter, "ord");
    press(&mut model, KeyCode::Char('/'));
    let Mode::Filter(edit) = &model.mode else {
        panic!("the filter line: {:?}", model.mode);
    };
    // The status stays in force beside the text, and the title says it.
    assert_eq!(edit.text(), "ord");
    press(&mut model, KeyCode::Esc);
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "status:asleep x");
    press(&mut model, KeyCode::Enter);
    assert!(status_line(&model).starts_with("'asleep' is not a status"));
    assert_eq!(
        (model.status_filter, model.text_filter.as_str()),
        (Some("paused"), "x")
    );
    press(&mut model, KeyCode::Char('/'));
    press(&mut model, KeyCode::Home);
    for _ in 0..30 {
        press(&mut model, KeyCode::Delete);
    }
    typed(&mut model, "status:all");
    press(&mut model, KeyCode::Enter);
    assert_eq!(
        (model.status_filter, model.text_filter.as_str()),
        (None, "")
    );
}

/// After `t`, `/` started with `status:cancelled `, so that a filter typed after
/// it did not parse; and the error of one that did not parse stayed in the
/// status line after one that did.
#[test]
fn a_filter_typed_after_t_applies_and_ends_the_error_of_an_earlier_one() {
    let mut model = model();
    for _ in 0..5 {
        press(&mut model, KeyCode::Char('t'));
    }
    assert_eq!(model.status_filter, Some("cancelled"));
    press(&mut model, KeyCode::Char('/'));
    let Mode::Filter(edit) = &model.mode else {
        panic!("the filter line: {:?}", model.mode);
    };
    assert_eq!(edit.text(), "", "nothing that a filter cannot follow");
    typed(&mut model, "state == 'reveiw' and");
    press(&mut model, KeyCode::Enter);
    assert!(
        status_line(&model).starts_with("filter \"state == 'reveiw' and\""),
        "{}",
        status_line(&model)
    );
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "state == 'review'");
    let commands = press(&mut model, KeyCode::Enter);
    assert_eq!(model.filter.as_deref(), Some("state == 'review'"));
    assert_eq!(model.status, None, "the error is gone");
    let Some(Command::Tokens(query)) = commands.first() else {
        panic!("a read of the tokens: {commands:?}");
    };
    assert_eq!(
        (query.status.as_deref(), query.filter.as_deref()),
        (Some("cancelled"), Some("state == 'review'"))
    );
    // The daemon's refusal of a filter goes the same way.
    update(
        &mut model,
        Msg::Page {
            status: Some("cancelled".into()),
            filter: Some("state == 'review'".into()),
            answer: Err(refused(422, "invalid_argument", "no state 'review'")),
        },
    );
    assert!(status_line(&model).starts_with("refused (422"));
    press(&mut model, KeyCode::Char('/'));
    let Mode::Filter(edit) = &model.mode else {
        panic!("the filter line: {:?}", model.mode);
    };
    assert_eq!(edit.text(), "state == 'review'");
    press(&mut model, KeyCode::End);
    typed(&mut model, " and moved > 60");
    press(&mut model, KeyCode::Enter);
    assert_eq!(model.status, None, "{:?}", model.status);
}

#[test]
fn a_text_filter_that_is_an_id_finds_a_token_older_than_the_page() {
    let mut model = model();
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "OLD-7");
    let commands = press(&mut model, KeyCode::Enter);
    assert!(
        commands.contains(&Command::Exact("OLD-7".into())),
        "{commands:?}"
    );
    update(
        &mut model,
        Msg::Tokens(None, Ok(vec![token("ORD-1", "draft", "active", 1)])),
    );
    assert!(model.shown().is_empty());
    let old = token("OLD-7", "draft", "paused", 90_000);
    let read = update(&mut model, Msg::Exact("OLD-7".into(), Ok(Some(old))));
    assert_eq!(model.selected().as_deref(), Some("OLD-7"));
    assert!(
        read.contains(&Command::History("OLD-7".into())),
        "read at once: {read:?}"
    );
    update(&mut model, Msg::Exact("OLD-7".into(), Ok(None)));
    assert!(model.shown().is_empty(), "gone");
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, " two");
    let commands = press(&mut model, KeyCode::Enter);
    assert!(
        !commands.iter().any(|c| matches!(c, Command::Exact(_))),
        "not an id"
    );
}

#[test]
fn a_scoped_key_is_offered_only_the_events_it_may_fire() {
    let scoped = |events: &[&str], states: &[&str]| stateous_shared::access::OwnKey {
        name: Some("ann".into()),
        role: stateous_shared::access::Role::Operate,
        supervisor: None,
        scope: Some(stateous_shared::access::Scope {
            events: events.iter().map(|e| e.to_string()).collect(),
            states: states.iter().map(|s| s.to_string()).collect(),
            filter: None,
        }),
    };
    let mut model = model();
    model.own_key = Some(scoped(&["reviewed", "approved"], &[]));
    press(&mut model, KeyCode::Char('f'));
    assert_eq!(
        model.mode,
        Mode::Pick {
            token: "ORD-1".into(),
            events: vec!["reviewed".into()],
            at: 0
        }
    );
    press(&mut model, KeyCode::Esc);
    model.own_key = Some(scoped(&["reviewed"], &["draft"]));
    press(&mut model, KeyCode::Char('f'));
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(
        status_line(&model),
        "the access key ann may fire only reviewed in draft: none of those moves ORD-1 from review"
    );
    model.own_key = Some(scoped(&["submitted"], &[]));
    press(&mut model, KeyCode::Char('f'));
    assert_eq!(model.mode, Mode::Normal);
    assert!(status_line(&model).starts_with("the access key ann may fire only submitted"));
}
