//! The live state graph and the dev clock in the header: `update` with plain
//! messages, and snapshots at 80x24 and 60x20.

use std::collections::BTreeMap;

use crossterm::event::KeyCode;
use stateous_client::{TokenQuery, WatchEntry};
use stateous_shared::watch::{DevClock, StateCount};
use stateous_shared::wire::{Health, HistoryEntry};

use super::view_tests::{screen, snapshot};
use super::*;
use crate::model::{Fetch, Mode, StreamState, MOST_TOKENS};

/// The release graph: `reviews` runs the child workflows `security` and `design`.
const RELEASE: &str = include_str!("../../../tests/data/release/build/release.json");

fn count(workflow: Option<&str>, state: &str, tokens: &[(&str, i64)]) -> StateCount {
    StateCount {
        workflow: workflow.map(str::to_string),
        state: state.into(),
        tokens: tokens
            .iter()
            .map(|(status, n)| (status.to_string(), *n))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// The counts of [`model`]'s three tokens, and a failed one in draft.
fn counts() -> Vec<StateCount> {
    vec![
        count(None, "draft", &[("paused", 1), ("failed", 1)]),
        count(None, "review", &[("active", 1), ("completed", 1)]),
    ]
}

/// [`full_model`] on `columns` by `rows` with the graph view open on `review`,
/// whose counts just changed.
fn graph_model(columns: u16, rows: u16) -> Model {
    let mut model = full_model();
    model.size = (columns, rows);
    let asked = press(&mut model, KeyCode::Char('w'));
    assert_eq!(asked, vec![Command::Graphs, Command::States]);
    update(&mut model, Msg::States(Ok(Some(vec![]))));
    update(&mut model, Msg::States(Ok(Some(counts()))));
    press(&mut model, KeyCode::Down);
    press(&mut model, KeyCode::Down);
    model
}

fn entry(token: &str, kind: &str) -> Msg {
    Msg::Entry(WatchEntry {
        token: token.into(),
        entry: HistoryEntry {
            seq: 99,
            at: at(0),
            kind: kind.into(),
            data: serde_json::Map::new(),
            by: None,
        },
    })
}

#[test]
fn the_state_graph_with_counts_at_80_by_24() {
    let model = graph_model(80, 24);
    assert_eq!(model.mode, Mode::Graph);
    let text = screen(&model);
    assert!(text.contains("active paused failed"), "{text}");
    assert!(
        text.contains("● review") && text.contains("1      0      0*"),
        "{text}"
    );
    assert!(text.contains("  every state"), "{text}");
    snapshot("graph_counts_80x24", &model);
}

#[test]
fn the_state_graph_with_counts_at_60_by_20() {
    let model = graph_model(60, 20);
    let text = screen(&model);
    for fact in ["draft", "0      1      1*", "review", "1      0      0*"] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    snapshot("graph_counts_60x20", &model);
}

#[test]
fn child_workflows_have_their_own_states_and_counts() {
    let mut model = model();
    model.graph = Some(stateous_shared::graph::Graph::load(RELEASE).expect("release loads"));
    press(&mut model, KeyCode::Char('w'));
    update(
        &mut model,
        Msg::States(Ok(Some(vec![
            count(None, "reviews", &[("active", 2)]),
            count(Some("security"), "triage", &[("active", 2)]),
            count(Some("design"), "triage", &[("active", 1), ("failed", 1)]),
        ]))),
    );
    let text = screen(&model);
    // Every state sums the columns: 5 active, 1 failed.
    assert!(
        text.contains("  every state") && text.contains("5      0      1"),
        "{text}"
    );
    // Down to design's triage (every state, 7 main states, security's 3, then
    // it): the view scrolls to keep it in sight.
    for _ in 0..11 {
        press(&mut model, KeyCode::Down);
    }
    let text = screen(&model);
    for fact in [
        "child workflow security",
        "child workflow design",
        "1      0      1",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    let mut design = token("R-1.reviews.1.design", "triage", "active", 5);
    design.parent = Some("R-1".into());
    let mut security = token("R-1.reviews.1.security", "triage", "active", 5);
    security.parent = Some("R-1".into());
    model.tokens = vec![design, security, token("R-1", "reviews", "active", 5)];
    press(&mut model, KeyCode::Enter);
    let shown: Vec<&str> = model.shown().iter().map(|t| t.token.as_str()).collect();
    assert_eq!(shown, Vec::<&str>::new(), "the table starts over");
    assert_eq!(
        model.state_filter,
        Some((Some("design".to_string()), "triage".to_string()))
    );
}

#[test]
fn enter_on_a_state_shows_only_its_tokens_and_every_state_shows_all() {
    let mut model = graph_model(100, 30);
    let commands = press(&mut model, KeyCode::Enter);
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(model.state_filter, Some((None, "review".to_string())));
    // The state is matched here, among the most tokens a page holds.
    assert!(
        commands.contains(&Command::Tokens(TokenQuery {
            status: None,
            parent: None,
            limit: Some(MOST_TOKENS),
            ..TokenQuery::default()
        })),
        "{commands:?}"
    );
    model.tokens = super::model().tokens;
    let shown: Vec<&str> = model.shown().iter().map(|t| t.token.as_str()).collect();
    assert_eq!(shown, ["ORD-1", "ORD-3"]);
    let text = screen(&model);
    assert!(text.contains("(status all, state review)"), "{text}");
    // Another active token in review that the page did not load: the title says
    // how many the state holds.
    update(
        &mut model,
        Msg::States(Ok(Some(vec![count(None, "review", &[("active", 5)])]))),
    );
    assert!(screen(&model).contains("state review, of 5"));
    press(&mut model, KeyCode::Char('w'));
    assert_eq!(model.graph_at, 2, "the view opens on the state shown");
    press(&mut model, KeyCode::Home);
    press(&mut model, KeyCode::Enter);
    assert_eq!(model.state_filter, None);
    assert_eq!(status_text(&model), "the table shows every state");
}

fn status_text(model: &Model) -> String {
    model
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn counts_are_read_again_when_the_stream_says_a_token_moved_and_the_highlight_fades() {
    let mut model = graph_model(100, 30);
    model.stream = StreamState::Live;
    model.quiet_ticks = 0;
    update(&mut model, entry("ORD-1", "task_claimed"));
    let tick = update(&mut model, Msg::Tick(now()));
    assert!(!tick.contains(&Command::States), "{tick:?}");
    update(&mut model, entry("ORD-1", "entered"));
    let tick = update(&mut model, Msg::Tick(now()));
    assert!(tick.contains(&Command::States), "{tick:?}");
    assert!(model.in_flight.contains(&Fetch::States));
    let key = (None, "review".to_string());
    assert!(crate::states::highlighted(&model, &key));
    let later = now() + chrono::Duration::seconds(crate::states::HIGHLIGHT);
    update(&mut model, Msg::Tick(later));
    assert!(!crate::states::highlighted(&model, &key));
    // The same counts again change nothing.
    update(&mut model, Msg::States(Ok(Some(counts()))));
    assert!(!crate::states::highlighted(&model, &key));
    // Closed, with no state picked, the graph's counts are not read.
    press(&mut model, KeyCode::Esc);
    update(&mut model, entry("ORD-1", "entered"));
    let tick = update(&mut model, Msg::Tick(later));
    assert!(!tick.contains(&Command::States), "{tick:?}");
}

#[test]
fn the_header_shows_the_dev_clock_and_reads_it_each_tick() {
    let mut model = sized_model(80, 24);
    model.stream = StreamState::Live;
    let health = |ahead: f64| Health {
        workflow: "orders".into(),
        checksum: "sha256:x".into(),
        dev_clock: Some(DevClock {
            now: at(ahead as i64),
            ahead,
            frozen: false,
            steps: None,
        }),
    };
    update(&mut model, Msg::Health(Ok(health(3600.0))));
    let text = screen(&model);
    let title = text.lines().next().unwrap_or_default();
    assert!(title.contains(" dev clock +1h "), "{title}");
    let tick = update(&mut model, Msg::Tick(now()));
    assert!(tick.contains(&Command::Health), "{tick:?}");
    // Ages count from the daemon's time, an hour after the wall's.
    assert_eq!(model.now, now() + chrono::Duration::hours(1));
    snapshot("dev_clock_header", &model);
    let mut plain = health(0.0);
    plain.dev_clock = None;
    update(&mut model, Msg::Health(Ok(plain)));
    assert!(!screen(&model).contains("dev clock"));
    let tick = update(&mut model, Msg::Tick(now()));
    assert!(!tick.contains(&Command::Health), "{tick:?}");
}

fn sized_model(columns: u16, rows: u16) -> Model {
    let mut model = full_model();
    model.size = (columns, rows);
    model
}
