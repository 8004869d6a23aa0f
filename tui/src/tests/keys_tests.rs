//! `update` with the keys of watching and reading: read-only, the token on the whole screen,
//! the history's scrolling and following, UTC and local time, the table's pages.

use crossterm::event::KeyCode;
use serde_json::json;
use stateous_client::{Steer, WatchEntry};

use super::*;
use crate::message::Acted;
use crate::model::Mode;

fn status_line(model: &Model) -> String {
    model
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

#[test]
fn read_only_keys_that_would_change_a_token_send_nothing_and_say_so() {
    let mut model = full_model();
    model.read_only = true;
    for key in ['p', 'r', 'c', 'f', 's'] {
        model.status = None;
        let commands = press(&mut model, KeyCode::Char(key));
        assert!(commands.is_empty(), "{key}: {commands:?}");
        assert_eq!(model.mode, Mode::Normal, "{key} opened {:?}", model.mode);
        assert!(
            status_line(&model).starts_with(&format!("read-only: '{key}' would change a token")),
            "{key}: {}",
            status_line(&model)
        );
    }
    // Reading goes on as before.
    let reads = press(&mut model, KeyCode::Down);
    assert!(
        reads.contains(&Command::History("ORD-2".into())),
        "{reads:?}"
    );
}

#[test]
fn read_only_drops_a_change_whatever_asked_for_it() {
    let mut model = full_model();
    // A confirmation left open from before cannot send either: `update` filters
    // what the keys give.
    model.mode = Mode::Confirm("ORD-1".into());
    model.read_only = true;
    assert!(press(&mut model, KeyCode::Char('y')).is_empty());
    // Without read-only the same key sends the cancel.
    model.read_only = false;
    model.mode = Mode::Confirm("ORD-1".into());
    assert_eq!(
        press(&mut model, KeyCode::Char('y')),
        vec![Command::Steer("ORD-1".into(), Steer::Cancel)]
    );
}

#[test]
fn v_gives_the_token_the_screen_and_esc_or_v_gives_it_back() {
    let mut model = full_model();
    model.status = Some(crate::model::Status {
        text: "kept".into(),
        error: false,
    });
    assert!(press(&mut model, KeyCode::Char('v')).is_empty());
    assert!(model.zoom);
    press(&mut model, KeyCode::Esc);
    assert!(!model.zoom);
    assert_eq!(
        status_line(&model),
        "kept",
        "the first Esc only closes the token"
    );
    press(&mut model, KeyCode::Char('v'));
    press(&mut model, KeyCode::Char('v'));
    assert!(!model.zoom);
}

/// [`full_model`] at 100 by 30 with a history of `count` entries, 1 to `count`.
fn long_history(count: i64) -> Model {
    let mut model = full_model();
    model.history = (1..=count)
        .map(|seq| HistoryEntry {
            seq,
            at: at(seq - count),
            kind: "note".into(),
            data: json!({"text": format!("line {seq}")})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            by: None,
        })
        .collect();
    model
}

#[test]
fn the_history_scrolls_by_pages_and_follows_new_entries_at_its_end() {
    let mut model = long_history(40);
    let page = crate::view::history_page(&model);
    assert!(page > 2 && page < 40, "{page}");
    assert_eq!(model.history_top, None, "it follows the end");
    press(&mut model, KeyCode::PageUp);
    let up = 40 - page - (page - 1);
    assert_eq!(model.history_top, Some(up));
    press(&mut model, KeyCode::Home);
    assert_eq!(model.history_top, Some(0));
    press(&mut model, KeyCode::PageUp);
    assert_eq!(model.history_top, Some(0), "no further than the first");
    press(&mut model, KeyCode::PageDown);
    assert_eq!(model.history_top, Some(page - 1));
    // An entry that comes while scrolled up leaves the view where it is.
    let entry = |seq| WatchEntry {
        token: "ORD-1".into(),
        entry: HistoryEntry {
            seq,
            at: at(0),
            kind: "note".into(),
            data: serde_json::Map::new(),
            by: None,
        },
    };
    update(&mut model, Msg::Entry(entry(41)));
    assert_eq!(model.history.len(), 41);
    assert_eq!(model.history_top, Some(page - 1));
    // PgDn onto the end follows it again; End does at once.
    for _ in 0..20 {
        press(&mut model, KeyCode::PageDown);
    }
    assert_eq!(model.history_top, None);
    press(&mut model, KeyCode::Home);
    press(&mut model, KeyCode::End);
    assert_eq!(model.history_top, None);
    update(&mut model, Msg::Entry(entry(42)));
    let text = view_text(&model);
    assert!(text.contains("#42  "), "the newest entry shows:\n{text}");
}

#[test]
fn a_new_selection_starts_its_history_at_the_end() {
    let mut model = long_history(40);
    press(&mut model, KeyCode::Home);
    assert_eq!(model.history_top, Some(0));
    press(&mut model, KeyCode::Down);
    assert_eq!(model.history_top, None);
}

#[test]
fn z_switches_between_utc_and_local_time() {
    let mut model = full_model();
    assert!(!model.utc);
    press(&mut model, KeyCode::Char('z'));
    assert!(model.utc);
    assert_eq!(status_line(&model), "times are in UTC");
    press(&mut model, KeyCode::Char('z'));
    assert!(!model.utc);
    assert_eq!(status_line(&model), "times are in local time");
}

#[test]
fn shift_j_and_k_page_the_table_and_g_goes_to_its_ends() {
    let mut model = model();
    model.tokens = (0..60)
        .map(|n| token(&format!("T-{n:02}"), "draft", "active", n))
        .collect();
    let page = model.table_rows();
    press(&mut model, KeyCode::Char('J'));
    assert_eq!(model.cursor, page);
    press(&mut model, KeyCode::Char('K'));
    assert_eq!(model.cursor, 0);
    press(&mut model, KeyCode::Char('G'));
    assert_eq!(model.selected().as_deref(), Some("T-59"));
    press(&mut model, KeyCode::Char('g'));
    assert_eq!(model.selected().as_deref(), Some("T-00"));
}

#[test]
fn an_answer_to_an_action_is_shown_in_read_only_too() {
    // An action sent before read-only was set still answers; it reads, not writes.
    let mut model = full_model();
    model.read_only = true;
    let acted = Acted {
        token: token("ORD-1", "review", "paused", 0),
        duplicate: false,
        said: None,
    };
    let commands = update(&mut model, Msg::Done(Ok(acted)));
    assert!(
        commands.iter().all(|c| !c.changes_a_token()),
        "{commands:?}"
    );
    assert!(
        status_line(&model).starts_with("ORD-1"),
        "{}",
        status_line(&model)
    );
}

/// The screen's text.
fn view_text(model: &Model) -> String {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    let mut terminal =
        Terminal::new(TestBackend::new(model.size.0, model.size.1)).expect("a test terminal");
    terminal
        .draw(|frame| crate::view::view(model, frame))
        .expect("drawing on a test backend");
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            text.push_str(buffer[(x, y)].symbol());
        }
        text.push('\n');
    }
    text
}

/// With 20,000 tokens the table holds the 1000 most recently moved (the API's
/// largest page). `G` went only to the last row read so far (row 72 of a 36-row
/// table), each press a little further, and at row 1000 it stopped without a
/// word while the title said 20000.
#[test]
fn g_goes_to_the_last_of_the_1000_rows_the_table_holds_and_says_where_the_rest_are() {
    use crate::model::MOST_TOKENS;
    let rows = |n: usize| -> Vec<TokenView> {
        (0..n)
            .map(|i| token(&format!("T-{i}"), "review", "active", i as i64))
            .collect()
    };
    let mut model = model();
    model.tokens = rows(72);
    model.total = Some(20_000);
    let commands = press(&mut model, KeyCode::Char('G'));
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, Command::Tokens(q) if q.limit == Some(MOST_TOKENS))),
        "G asks for every row the table can hold: {commands:?}"
    );
    update(
        &mut model,
        Msg::Page {
            status: None,
            filter: None,
            answer: Ok((rows(1000), Some(20_000))),
        },
    );
    assert_eq!(model.selected().as_deref(), Some("T-999"));
    assert_eq!(
        status_line(&model),
        "the table holds the 1000 most recently moved of 20000 tokens; \
         / with a filter (e.g. state == 'draft') reaches the others"
    );
    model.size = (160, 45);
    crate::keys::follow_cursor(&mut model);
    let screen = crate::tests::view_tests::screen(&model);
    assert!(
        screen.lines().nth(1).is_some_and(|title| title
            .contains("Tokens: 20000 (status all), 1000 shown, rows ")
            && title.contains("-1000 ")),
        "{screen}"
    );
    // Where every match is loaded, nothing is said.
    let mut model = crate::tests::model();
    press(&mut model, KeyCode::Char('G'));
    assert_eq!(model.selected().as_deref(), Some("ORD-3"));
    assert_eq!(status_line(&model), "");
}
