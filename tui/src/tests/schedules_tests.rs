//! The schedules view: `S` reads and shows the schedules, arrows pick one, `p` and
//! `r` pause and resume it, read-only sends nothing and says so; a snapshot at
//! 100x30.

use crossterm::event::KeyCode;
use serde_json::json;
use stateous_shared::schedules::{Coming, ScheduleView, Skipped};

use super::view_tests::{screen, snapshot};
use super::*;
use crate::model::Mode;

fn schedule(name: &str, status: &str) -> ScheduleView {
    ScheduleView {
        name: name.into(),
        spec: "0 9 * * 1-5".into(),
        zone: "Europe/Berlin".into(),
        token: "triage-{date}".into(),
        context: json!({"repo": "acme/api"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        jitter_seconds: 0.0,
        overlap: "skip".into(),
        catch_up: "latest".into(),
        window_seconds: 86_400.0,
        cap: 10,
        status: status.into(),
        next: vec![
            Coming {
                at: "2026-12-01T08:00:00Z".into(),
                local: "2026-12-01T09:00:00+01:00".into(),
                token: format!("{name}-2026-12-01"),
            },
            Coming {
                at: "2026-12-02T08:00:00Z".into(),
                local: "2026-12-02T09:00:00+01:00".into(),
                token: format!("{name}-2026-12-02"),
            },
        ],
        last_token: Some(format!("{name}-2026-11-30")),
        last_status: Some("active".into()),
        buffered: None,
        skipped: vec![Skipped {
            occurrence: "2026-11-27T08:00:00Z".into(),
            count: 1,
            reason: format!("the token {name}-2026-11-26 of an earlier occurrence is still live"),
        }],
        created: "2026-11-01T00:00:00Z".into(),
        changed: "2026-11-01T00:00:00Z".into(),
    }
}

/// [`full_model`] with the schedules view open on two schedules, the second picked.
fn schedules_model() -> Model {
    let mut model = full_model();
    let asked = press(&mut model, KeyCode::Char('S'));
    assert_eq!(asked, vec![Command::Schedules]);
    assert_eq!(model.mode, Mode::Schedules);
    let list = vec![schedule("nightly", "paused"), schedule("triage", "active")];
    update(&mut model, Msg::Schedules(Ok(list)));
    press(&mut model, KeyCode::Down);
    model
}

#[test]
fn the_schedules_view_shows_each_one_and_the_picked_ones_occurrences() {
    let model = schedules_model();
    let text = screen(&model);
    for fact in [
        "triage",
        "2026-12-01 09:00 +01:00",
        "triage-2026-11-30 (active)",
        "next 2026-12-02 09:00 +01:00  (2026-12-02 08:00Z)  triage-2026-12-02",
        "skipped 2026-11-27 08:00Z: the token triage-2026-11-26",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    snapshot("schedules", &model);
}

#[test]
fn p_and_r_pause_and_resume_the_picked_schedule_and_read_only_sends_neither() {
    let mut model = schedules_model();
    assert_eq!(
        press(&mut model, KeyCode::Char('p')),
        vec![Command::PauseSchedule {
            name: "triage".into(),
            pause: true
        }]
    );
    press(&mut model, KeyCode::Up);
    assert_eq!(
        press(&mut model, KeyCode::Char('r')),
        vec![Command::PauseSchedule {
            name: "nightly".into(),
            pause: false
        }]
    );
    let mut read_only = schedules_model();
    read_only.read_only = true;
    assert!(press(&mut read_only, KeyCode::Char('p')).is_empty());
    let said = read_only.status.as_ref().map(|s| s.text.clone());
    assert_eq!(
        said.as_deref(),
        Some("read-only: 'p' would pause a schedule, and this TUI changes none")
    );
    assert_eq!(read_only.mode, Mode::Schedules);
    // Whatever asks for it, a read-only model sends no schedule's change.
    assert!(Command::PauseSchedule {
        name: "x".into(),
        pause: true
    }
    .changes_a_token());
    // Esc closes the view; a tick while open reads the list again.
    assert!(press(&mut read_only, KeyCode::Esc).is_empty());
    assert_eq!(read_only.mode, Mode::Normal);
}

#[test]
fn a_steered_schedule_is_said_and_the_list_read_again() {
    let mut model = schedules_model();
    let answer = Msg::ScheduleSteered(Ok(schedule("triage", "paused")));
    assert_eq!(update(&mut model, answer), vec![Command::Schedules]);
    let said = model.status.as_ref().map(|s| s.text.clone());
    assert_eq!(said.as_deref(), Some("the schedule triage is paused"));
}
