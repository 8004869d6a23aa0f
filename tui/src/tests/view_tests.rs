//! A snapshot of each view on a 100 by 30 test backend. The snapshots are the
//! text of the screen, in `snapshots/NAME.txt`; `UPDATE_SNAPSHOTS=1 cargo test`
//! writes them anew (then read the diff before committing).

use crossterm::event::KeyCode;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::model::{Problem, Status};
use crate::view::view;
use stateous_shared::watch::StoppedSupervisor;

/// The screen's text after drawing `model`, one line per row, trailing spaces cut.
pub fn screen(model: &Model) -> String {
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
pub fn snapshot(name: &str, model: &Model) {
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
fn under_60_by_20_the_screen_says_the_terminal_is_too_small() {
    for (columns, rows) in [(59, 20), (60, 19), (40, 12)] {
        let text = screen(&sized(columns, rows));
        let said: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            said.contains(&format!(
                "The terminal is {columns}x{rows}; Stateous needs at least 60x20."
            )),
            "{text}"
        );
        assert!(said.contains("press q to quit"), "{text}");
        assert!(!text.contains("Tokens"), "no pane is drawn: {text}");
    }
    assert!(screen(&sized(60, 20)).contains("Tokens: 3 shown"));
}

#[test]
fn at_60_by_20_a_long_refusal_is_read_whole_in_the_status_line() {
    let mut model = sized(60, 20);
    let sentence = "refused (409 token_not_active): token 'ORD-1' is completed; \
                    only an active or paused token takes events";
    model.status = Some(Status {
        text: sentence.into(),
        error: true,
    });
    let text = screen(&model);
    let bottom: Vec<&str> = text.lines().rev().take(3).collect();
    let said = bottom
        .into_iter()
        .rev()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(said.ends_with(sentence), "{text}");
}

#[test]
fn a_small_terminal_draws_without_panicking() {
    for (columns, rows) in [(1, 1), (2, 2), (20, 5), (40, 12), (60, 20)] {
        let mut model = full_model();
        model.size = (columns, rows);
        for key in ['?', 'w', 'f', 's'] {
            model.mode = crate::model::Mode::Normal;
            press(&mut model, KeyCode::Char(key));
            screen(&model);
        }
        model.mode = crate::model::Mode::Normal;
        for key in [KeyCode::Enter, KeyCode::PageUp, KeyCode::Home, KeyCode::End] {
            press(&mut model, key);
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
fn a_token_over_its_budget_shows_what_it_used_against_it() {
    let mut model = full_model();
    if let Some(detail) = model.detail.as_mut() {
        let view = serde_json::json!({"usage": {"cost_usd": 5.12, "input_tokens": 1200},
            "budget": {"cost_usd": 5}, "budget_from": "token", "over": ["cost_usd"]});
        detail.budget = Some(serde_json::from_value(view).unwrap());
    }
    let rows: Vec<String> = crate::view::detail_rows(&model, 100)
        .iter()
        .map(|row| row.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(
        rows.contains(&"usage     cost_usd 5.12 of 5, input_tokens 1200 (over budget)".to_string()),
        "{rows:?}"
    );
}

#[test]
fn a_token_with_a_priority_shows_it_and_one_without_does_not() {
    let mut model = full_model();
    let rows = |model: &crate::model::Model| -> Vec<String> {
        crate::view::detail_rows(model, 100)
            .iter()
            .map(|row| row.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    };
    assert!(!rows(&model).iter().any(|row| row.starts_with("priority")));
    if let Some(detail) = model.detail.as_mut() {
        detail.priority = 7;
    }
    assert!(rows(&model).contains(&"priority  7".to_string()));
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

/// [`full_model`] on a terminal of `columns` by `rows`.
fn sized(columns: u16, rows: u16) -> Model {
    let mut model = full_model();
    model.size = (columns, rows);
    model
}

#[test]
fn at_80_by_24_the_token_pane_says_what_it_leaves_out() {
    let model = sized(80, 24);
    let text = screen(&model);
    assert!(text.contains("more rows: v shows all"), "{text}");
    snapshot("small_80x24", &model);
}

#[test]
fn at_80_by_24_enter_shows_every_fact_of_the_token() {
    let mut model = sized(80, 24);
    press(&mut model, KeyCode::Char('v'));
    let text = screen(&model);
    for fact in [
        "task      4 review claimed, attempt 2, box-1, lease 1m35s",
        "timer     timeout at 13:00:00 (in 1h00m)",
        "held      submitted",
        "#9  box-1 took task 4 (attempt 2)",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    assert!(!text.contains("more rows"), "{text}");
    snapshot("small_80x24_token", &model);
}

#[test]
fn at_60_by_20_the_selected_tokens_state_status_and_task_stay_in_sight() {
    let text = screen(&sized(60, 20));
    for fact in [
        "ORD-1: review, active",
        "task      4 review claimed, attempt 2, box-1, lease 1m35s",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    assert!(text.contains("more rows: v shows all"), "{text}");
}

#[test]
fn at_60_by_20_the_panes_stack_and_nothing_vanishes_silently() {
    let model = sized(60, 20);
    let text = screen(&model);
    // The table, the token, its history and the supervisors each have a pane.
    for title in [
        "Tokens: 3 shown",
        "Token",
        "History of ORD-1",
        "Supervisors: 2",
    ] {
        assert!(text.contains(title), "no {title:?} in\n{text}");
    }
    assert!(text.contains("more rows: v shows all"), "{text}");
    snapshot("small_60x20", &model);
    let mut zoomed = model.clone();
    press(&mut zoomed, KeyCode::Char('v'));
    let text = screen(&zoomed);
    for fact in ["lease 1m35s", "timeout at 13:00:00", "held      submitted"] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    snapshot("small_60x20_token", &zoomed);
}

#[test]
fn the_supervisors_pane_grows_with_its_supervisors_and_counts_those_cut() {
    let mut model = sized(100, 30);
    let Supervisors::Seen(list) = &mut model.supervisors else {
        panic!("two supervisors");
    };
    let template = list.supervisors[0].clone();
    for n in 2..9 {
        let mut more = template.clone();
        more.name = format!("box-{n}");
        more.last_seen = at(-300 - n);
        list.supervisors.push(more);
    }
    let text = screen(&model);
    assert!(text.contains("Supervisors: 9, 8 stale, 3 shown"), "{text}");
    assert_eq!(text.matches("stale│").count(), 2, "{text}");
}

#[test]
fn read_only_says_so_in_the_header_and_the_help() {
    let mut model = sized(80, 24);
    model.read_only = true;
    snapshot("read_only", &model);
    press(&mut model, KeyCode::Char('?'));
    let text = screen(&model);
    assert!(
        text.contains("read-only: p r c f s R M P are off"),
        "{text}"
    );
}

#[test]
fn read_only_shows_at_60_columns_too() {
    let mut model = sized(60, 20);
    model.read_only = true;
    model.url = "unix:///run/user/1000/stateous.sock".into();
    let text = screen(&model);
    let title = text.lines().next().unwrap_or_default();
    assert!(title.contains("read-only"), "{title}");
}

/// The cells of a drawn screen.
fn cells(model: &Model) -> ratatui::buffer::Buffer {
    let mut terminal =
        Terminal::new(TestBackend::new(model.size.0, model.size.1)).expect("a test terminal");
    terminal
        .draw(|frame| view(model, frame))
        .expect("drawing on a test backend");
    terminal.backend().buffer().clone()
}

#[test]
fn without_colour_the_selected_row_is_in_reverse_video_and_nothing_has_a_colour() {
    use ratatui::style::{Color, Modifier};
    let mut model = sized(80, 24);
    model.color = false;
    model.status = Some(Status {
        text: "refused (409 token_not_active): token 'ORD-1' is active".into(),
        error: true,
    });
    press(&mut model, KeyCode::Char('j'));
    let buffer = cells(&model);
    for cell in buffer.content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset), "{cell:?}");
    }
    // The selected row (ORD-2, the table's second) from border to border.
    let y = 4;
    let row: String = (1..39).map(|x| buffer[(x, y)].symbol()).collect();
    assert!(row.starts_with("ORD-2"), "{row}");
    for x in 1..39 {
        assert!(
            buffer[(x, y)].modifier.contains(Modifier::REVERSED),
            "column {x} of {row:?}"
        );
    }
    for x in 1..39 {
        assert!(!buffer[(x, y + 1)].modifier.contains(Modifier::REVERSED));
    }
    snapshot("no_color", &model);
}

#[test]
fn a_paused_tokens_timers_are_frozen_not_counting_down() {
    let mut model = full_model();
    if let Some(detail) = model.detail.as_mut() {
        detail.token.status = "paused".into();
    }
    if let Some(token) = model.tokens.iter_mut().find(|t| t.token == "ORD-1") {
        token.status = "paused".into();
    }
    model.history.push(HistoryEntry {
        seq: 10,
        at: at(-600),
        kind: "paused".into(),
        data: serde_json::Map::new(),
        by: Some("ops".into()),
    });
    let text = screen(&model);
    // Paused ten minutes ago, with the timer an hour off: 1h10m were left then.
    assert!(
        text.contains("timer     timeout frozen with 1h10m left"),
        "{text}"
    );
    let later = {
        let mut later = model.clone();
        update(
            &mut later,
            Msg::Tick(now() + chrono::Duration::seconds(120)),
        );
        screen(&later)
    };
    assert!(later.contains("timeout frozen with 1h10m left"), "{later}");
    assert!(!text.contains("(in 1h00m)"), "{text}");
    // The pause was made with the access key `ops`: the history says so.
    assert!(text.contains("paused  (by key ops)"), "{text}");
}

#[test]
fn history_times_show_their_date_when_not_today_and_z_switches_to_utc() {
    let mut model = full_model();
    model.zone = Some(chrono::FixedOffset::east_opt(2 * 3600).expect("UTC+2"));
    model.history[0].at = at(-2 * 86_400);
    let text = screen(&model);
    assert!(text.contains("2026-11-28 14:00:00  #1  started"), "{text}");
    assert!(text.contains("││13:59:40  #9  box-1 took task 4"), "{text}");
    assert!(text.contains("local time"), "{text}");
    press(&mut model, KeyCode::Char('z'));
    let text = screen(&model);
    assert!(text.contains("2026-11-28 12:00:00  #1  started"), "{text}");
    assert!(text.contains("11:59:40  #9  box-1 took task 4"), "{text}");
    assert!(text.contains("entered   11:58:55"), "{text}");
    assert!(text.contains(" UTC "), "{text}");
}

#[test]
fn a_move_to_another_address_shows_in_the_header_and_the_status_line() {
    let mut model = full_model();
    model.url = "http://a:1".into();
    model.addresses = vec!["http://a:1".into(), "http://b:2".into()];
    let title = screen(&model)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(title.contains("http://a:1 (1 of 2)"), "{title}");
    crate::update::update(&mut model, Msg::Serving("http://b:2".into()));
    let text = screen(&model);
    let title = text.lines().next().unwrap_or_default();
    assert!(title.contains("http://b:2 (2 of 2)"), "{title}");
    assert!(
        text.contains("the control plane at http://a:1 does not serve; connected to http://b:2"),
        "{text}"
    );
}

#[test]
fn a_token_on_an_older_graph_names_it_in_its_detail() {
    let mut model = full_model();
    assert!(!screen(&model).contains("(not served)"));
    if let Some(detail) = &mut model.detail {
        detail.graph = Some("sha256:959262a16404".into());
        detail.graph_served = false;
    }
    let text = screen(&model);
    assert!(
        text.contains("graph     sha256:959262a16404 (not served)"),
        "{text}"
    );
}

#[test]
fn the_workflow_graph_names_the_older_graphs_with_live_tokens() {
    let mut model = full_model();
    let graph = |checksum: &str, served: bool, tokens: serde_json::Value| {
        stateous_shared::watch::GraphView {
            checksum: checksum.into(),
            workflow: "orders".into(),
            served,
            first_served: at(-7200),
            last_served: at(-7200),
            tokens: serde_json::from_value(tokens).unwrap(),
        }
    };
    model.graphs = vec![
        graph(
            "sha256:0000aaaa1111bbbb",
            false,
            serde_json::json!({"completed": 4}),
        ),
        graph(
            "sha256:959262a16404ffff",
            false,
            serde_json::json!({"active": 2, "paused": 1}),
        ),
        graph(
            "sha256:90e2bdc2736affff",
            true,
            serde_json::json!({"active": 5}),
        ),
    ];
    press(&mut model, KeyCode::Char('w'));
    let text = screen(&model);
    assert!(
        text.contains("older graphs with live tokens: sha256:959262a16404 (3 live)"),
        "{text}"
    );
    assert!(!text.contains("sha256:0000aaaa1111"), "{text}");
}

/// After a graceful stop the pane said `no supervisor has claimed yet`, which was
/// untrue: the supervisor had claimed until it stopped.
#[test]
fn a_supervisor_that_stopped_is_listed_as_stopped_with_its_time() {
    let mut model = sized(100, 30);
    model.supervisors = Supervisors::Seen(SupervisorList {
        supervisors: Vec::new(),
        stopped: vec![StoppedSupervisor {
            name: "vm".into(),
            states: vec!["review".into()],
            stopped_at: at(-12),
        }],
    });
    let text = screen(&model);
    assert!(!text.contains("no supervisor has claimed yet"), "{text}");
    assert!(text.contains("Supervisors: 0, 1 stopped"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("│vm "))
        .unwrap_or_else(|| panic!("a row of vm in\n{text}"));
    // The model's zone is UTC.
    let stopped_at = DateTime::parse_from_rfc3339(&at(-12))
        .expect("a time")
        .format("%H:%M:%S")
        .to_string();
    assert!(
        row.contains("review") && row.contains(&stopped_at) && row.contains("stopped"),
        "{row}"
    );
}
