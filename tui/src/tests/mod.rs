//! Tests of the TUI: `update` with plain messages, and a snapshot of each view on
//! a fixed-size test backend. The fixtures are the `orders`
//! starter's graph file and a few tokens, at a fixed time, in UTC.

mod describe_tests;
mod graph_tests;
mod keys_tests;
mod marks_tests;
mod notifications_tests;
mod pools_tests;
mod schedules_tests;
mod update_tests;
mod view_tests;

use chrono::{DateTime, FixedOffset, Utc};
use crossterm::event::{KeyCode, KeyEvent};
use serde_json::json;
use stateous_shared::graph::Graph;
use stateous_shared::watch::{
    HeldEvent, SupervisorList, SupervisorView, TaskView, TimerView, TokenDetail,
};
use stateous_shared::wire::{HistoryEntry, TokenView};

use crate::message::{Command, Msg};
use crate::model::{Connection, Model, Supervisors};
use crate::update::update;

/// The `orders` starter, as `stateous init workflow orders` compiles it.
pub const ORDERS: &str = include_str!("orders.json");

/// The fixed time of every test: 2026-11-30 12:00:00 UTC.
pub fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .expect("a fixed time")
        .with_timezone(&Utc)
}

/// A token of `orders` that entered `state` `ago` seconds before [`now`].
pub fn token(id: &str, state: &str, status: &str, ago: i64) -> TokenView {
    let at = now() - chrono::Duration::seconds(ago);
    TokenView {
        token: id.into(),
        state: state.into(),
        status: status.into(),
        visit: 1,
        context: json!({"title": format!("book {id}")})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        entered_at: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        parent: None,
    }
}

/// An ISO time `delta` seconds from [`now`].
pub fn at(delta: i64) -> String {
    (now() + chrono::Duration::seconds(delta)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A key press.
pub fn press(model: &mut Model, code: KeyCode) -> Vec<Command> {
    update(model, Msg::Key(KeyEvent::from(code)))
}

/// Type `text` one character at a time.
pub fn typed(model: &mut Model, text: &str) {
    for c in text.chars() {
        press(model, KeyCode::Char(c));
    }
}

/// A model at [`now`] in UTC, 100 by 30, connected, with the orders graph and
/// three tokens, ORD-1 selected.
pub fn model() -> Model {
    let mut model = Model::new("http://127.0.0.1:8080", now());
    model.zone = Some(FixedOffset::east_opt(0).expect("UTC"));
    model.size = (100, 30);
    model.connection = Connection::Connected;
    model.graph = Some(Graph::load(ORDERS).expect("the orders graph loads"));
    model.tokens = vec![
        token("ORD-1", "review", "active", 65),
        token("ORD-2", "draft", "paused", 300),
        token("ORD-3", "review", "completed", 4000),
    ];
    model.supervisors = Supervisors::Seen(SupervisorList::default());
    model
}

/// [`model`] with ORD-1's detail (a claimed task, a timer, a held event), its
/// history and two supervisors, one of them stale.
pub fn full_model() -> Model {
    let mut model = model();
    model.detail_route = Some(true);
    model.detail = Some(TokenDetail {
        token: token("ORD-1", "review", "active", 65),
        tasks: vec![TaskView {
            task: 4,
            state: "review".into(),
            status: "claimed".into(),
            attempt: 2,
            holder: Some("box-1".into()),
            lease_until: Some(at(95)),
            lease_left: Some(95.0),
        }],
        timers: vec![TimerView {
            event: "timeout".into(),
            due_at: at(3600),
        }],
        held: vec![HeldEvent {
            event: "submitted".into(),
            payload: None,
            at: Some(at(-10)),
        }],
        graph: None,
        graph_served: true,
        priority: 0,
        budget: None,
    });
    let entry = |seq, ago: i64, kind: &str, data: serde_json::Value| HistoryEntry {
        seq,
        at: at(-ago),
        kind: kind.into(),
        data: data.as_object().cloned().unwrap_or_default(),
        by: None,
    };
    model.history = vec![
        entry(1, 70, "started", json!({})),
        entry(3, 70, "entered", json!({"state": "draft", "visit": 1})),
        entry(
            5,
            65,
            "event_accepted",
            json!({"event": "submitted", "state": "draft"}),
        ),
        entry(7, 65, "entered", json!({"state": "review", "visit": 1})),
        entry(
            9,
            20,
            "task_claimed",
            json!({"task": 4, "supervisor": "box-1", "attempt": 2}),
        ),
    ];
    model.history_of = Some("ORD-1".into());
    model.supervisors = Supervisors::Seen(SupervisorList {
        supervisors: vec![
            SupervisorView {
                name: "box-1".into(),
                states: vec!["draft".into(), "review".into()],
                running: 1,
                outbox: Some(0),
                last_seen: at(-3),
            },
            SupervisorView {
                name: "old-box".into(),
                states: vec!["review".into()],
                running: 0,
                outbox: Some(12),
                last_seen: at(-600),
            },
        ],
        stopped: Vec::new(),
    });
    model
}
