//! A snapshot of each view on a 100 by 30 test backend. The snapshots are the
//! text of the screen, in `snapshots/NAME.txt`; `UPDATE_SNAPSHOTS=1 cargo test`
//! writes them anew (then read the diff before committing).

use crossterm::event::KeyCode;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::model::{Problem, Status};
use crate::view::view;

/// The screen's text after drawing `model`, one line per row, trailing spaces cut.
fn screen(model: &Model) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(model.size.0, model.size.1)).expect("a test terminal");
    terminal
        .draw(|frame| view(model, frame))
        .expect("drawing on a test backend");
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        for x in 0..buffer.area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// Compare the screen with `snapshots/NAME.txt`.
fn snapshot(name: &str, model: &Model) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/tests/snapshots")
        .join(format!("{name}.txt"));
    let actual = screen(model);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &actual).expect("writing a snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {name}; run with UPDATE_SNAPSHOTS=1\n{actual}"));
    assert_eq!(actual, expected, "snapshot {name} differs:\n{actual}");
}

#[test]
fn main_screen_with_detail_history_and_supervisors() {
    snapshot("main", &full_model());
}

#[test]
fn main_screen_before_anything_is_read() {
    let mut model = Model::new("unix:///run/stateous.sock", now());
    model.size = (100, 30);
    snapshot("connecting", &model);
}

#[test]
fn main_screen_while_the_daemon_is_away() {
    let mut model = full_model();
    update(
        &mut model,
        Msg::Tokens(
            None,
            Err(Problem::Unreachable("cannot connect: refused".into())),
        ),
    );
    snapshot("reconnecting", &model);
}

#[test]
fn a_daemon_without_detail_and_supervisors() {
    let mut model = model();
    model.detail_route = Some(false);
    model.detail = full_model().detail;
    model.supervisors = Supervisors::Unsupported;
    snapshot("reference_daemon", &model);
}

#[test]
fn a_refusal_in_the_status_line() {
    let mut model = full_model();
    model.status = Some(Status {
        text: "refused (409 token_not_active): token 'ORD-1' is active".into(),
        error: true,
    });
    snapshot("refusal", &model);
}

#[test]
fn the_text_filter_as_typed() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "ord");
    snapshot("filter", &model);
}

#[test]
fn the_table_filtered_by_status() {
    let mut model = model();
    model.status_filter = Some("paused");
    snapshot("status_filter", &model);
}

#[test]
fn cancel_asks_to_confirm() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('c'));
    snapshot("confirm", &model);
}

#[test]
fn the_help_popup() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('?'));
    snapshot("help", &model);
}

#[test]
fn the_workflow_graph() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('w'));
    snapshot("graph", &model);
}

#[test]
fn the_event_picker() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('f'));
    snapshot("pick", &model);
}

#[test]
fn the_payload_editor_shows_the_schema_error() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('f'));
    press(&mut model, KeyCode::Enter);
    typed(&mut model, "{\"approved\": \"yes\"}");
    snapshot("fire_invalid", &model);
}

#[test]
fn the_payload_editor_with_a_fitting_payload_and_a_key() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('f'));
    press(&mut model, KeyCode::Enter);
    typed(&mut model, "{\"approved\": true}");
    press(&mut model, KeyCode::Tab);
    typed(&mut model, "retry-1");
    snapshot("fire_valid", &model);
}

#[test]
fn the_start_form() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('s'));
    typed(&mut model, "ORD-9");
    press(&mut model, KeyCode::Tab);
    snapshot("start", &model);
}

#[test]
fn a_small_terminal_draws_without_panicking() {
    for (columns, rows) in [(1, 1), (20, 5), (40, 12)] {
        let mut model = full_model();
        model.size = (columns, rows);
        for key in ['?', 'w', 'f', 's'] {
            model.mode = crate::model::Mode::Normal;
            press(&mut model, KeyCode::Char(key));
            screen(&model);
        }
    }
}

#[test]
fn a_token_with_nothing_running_says_so() {
    let mut model = full_model();
    if let Some(detail) = model.detail.as_mut() {
        detail.tasks.clear();
        detail.timers.clear();
        detail.held.clear();
    }
    let text = screen(&model);
    assert!(
        text.contains("tasks     none running; no timers; nothing held"),
        "{text}"
    );
}

#[test]
fn a_parent_with_children_on_a_live_stream() {
    let mut model = full_model();
    model.stream = crate::model::StreamState::Live;
    let mut child = token("ORD-1.review", "check", "active", 30);
    child.parent = Some("ORD-1".into());
    model.children = vec![child];
    snapshot("children_live", &model);
}
