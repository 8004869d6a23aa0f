//! The describe view (`d`, Enter), the full screen (`F`) and the sorted table
//! (`o`, `O`).

use crossterm::event::KeyCode;
use serde_json::json;

use super::view_tests::{screen, snapshot};
use super::*;
use crate::model::{Mode, SortBy};

#[test]
fn d_describes_the_token_as_json_with_its_payloads() {
    let mut model = full_model();
    assert!(press(&mut model, KeyCode::Char('d')).is_empty());
    assert_eq!(model.mode, Mode::Describe(0));
    let doc = crate::describe::document(&model).unwrap();
    assert_eq!(doc["token"]["token"]["token"], "ORD-1");
    assert_eq!(doc["token"]["tasks"][0]["holder"], "box-1");
    assert_eq!(doc["history"][2]["data"]["event"], "submitted");
    assert_eq!(doc["history"].as_array().unwrap().len(), 5);
    let text = screen(&model);
    assert!(text.contains("ORD-1 as JSON, rows 1-"), "{text}");
    assert!(text.contains("\"holder\": \"box-1\""), "{text}");
    assert!(!text.contains("Supervisors"), "{text}");
    snapshot("describe", &model);
    press(&mut model, KeyCode::Esc);
    assert_eq!(model.mode, Mode::Normal);
    press(&mut model, KeyCode::Enter);
    assert_eq!(model.mode, Mode::Describe(0), "Enter describes too");
}

#[test]
fn the_describe_view_scrolls_by_line_page_and_to_either_end() {
    let mut model = full_model();
    press(&mut model, KeyCode::Enter);
    let lines = crate::describe::lines(&model).len();
    let page = crate::view::describe_page(&model);
    assert!(lines > page, "{lines} lines fit a page of {page}");
    press(&mut model, KeyCode::Down);
    assert_eq!(model.mode, Mode::Describe(1));
    press(&mut model, KeyCode::PageDown);
    assert_eq!(model.mode, Mode::Describe(page));
    press(&mut model, KeyCode::End);
    assert_eq!(model.mode, Mode::Describe(lines - page));
    press(&mut model, KeyCode::Down);
    assert_eq!(
        model.mode,
        Mode::Describe(lines - page),
        "no further than the end"
    );
    let text = screen(&model);
    assert!(
        text.contains(&format!("rows {}-{lines} of {lines}", lines - page + 1)),
        "{text}"
    );
    snapshot("describe_end", &model);
    press(&mut model, KeyCode::PageUp);
    assert_eq!(model.mode, Mode::Describe(lines - 2 * page + 1));
    press(&mut model, KeyCode::Home);
    assert_eq!(model.mode, Mode::Describe(0));
}

#[test]
fn y_copies_the_json_with_osc_52_and_says_so() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('d'));
    let commands = press(&mut model, KeyCode::Char('y'));
    let [Command::Copy(text)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    let copied: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(Some(copied), crate::describe::document(&model));
    let status = model.status.clone().unwrap();
    assert!(status
        .text
        .starts_with("copied the JSON of ORD-1 to the clipboard"));
    assert!(!status.error);
    assert_eq!(model.mode, Mode::Describe(0), "the view stays open");
    assert_eq!(
        crate::describe::osc52("{\"a\":1}"),
        "\x1b]52;c;eyJhIjoxfQ==\x07"
    );
}

#[test]
fn y_is_allowed_read_only_and_describe_before_the_detail_says_so() {
    let mut model = full_model();
    model.read_only = true;
    model.detail = None;
    press(&mut model, KeyCode::Char('d'));
    assert!(screen(&model).contains("the selected token is being read"));
    assert!(press(&mut model, KeyCode::Char('y')).is_empty());
    assert!(model.status.clone().unwrap().error);
    let mut model = full_model();
    model.read_only = true;
    press(&mut model, KeyCode::Char('d'));
    assert_eq!(press(&mut model, KeyCode::Char('y')).len(), 1);
    let mut model = full_model();
    model.tokens.clear();
    press(&mut model, KeyCode::Char('d'));
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(model.status.clone().unwrap().text, "no token is selected");
    // History of another token is not shown as this one's.
    let mut model = full_model();
    model.history_of = Some("ORD-2".into());
    assert_eq!(
        crate::describe::document(&model).unwrap()["history"],
        json!(null)
    );
}

#[test]
fn f_hides_the_supervisors_pane_and_gives_its_rows_to_the_table() {
    let mut model = full_model();
    let rows = model.table_rows();
    press(&mut model, KeyCode::Char('F'));
    assert!(model.full);
    let text = screen(&model);
    assert!(!text.contains("Supervisors"), "{text}");
    assert!(model.table_rows() > rows);
    snapshot("full_screen", &model);
    press(&mut model, KeyCode::Char('F'));
    assert!(screen(&model).contains("Supervisors"));
}

fn ids(model: &Model) -> Vec<String> {
    model.shown().iter().map(|t| t.token.clone()).collect()
}

#[test]
fn o_cycles_the_sort_column_and_capital_o_flips_it_on_the_page_shown() {
    let mut model = full_model();
    model.tokens = vec![
        token("ORD-2", "draft", "paused", 300),
        token("ORD-1", "review", "active", 65),
        token("ORD-3", "review", "completed", 4000),
    ];
    model.cursor = 1;
    assert_eq!(ids(&model), ["ORD-2", "ORD-1", "ORD-3"]);
    press(&mut model, KeyCode::Char('o'));
    assert_eq!(model.sort, SortBy::Token);
    assert_eq!(ids(&model), ["ORD-1", "ORD-2", "ORD-3"]);
    assert_eq!(
        model.selected().as_deref(),
        Some("ORD-1"),
        "the selection stays"
    );
    assert!(model
        .status
        .clone()
        .unwrap()
        .text
        .contains("of the page read"));
    press(&mut model, KeyCode::Char('O'));
    assert_eq!(ids(&model), ["ORD-3", "ORD-2", "ORD-1"]);
    let text = screen(&model);
    assert!(text.contains("token▼"), "{text}");
    assert!(text.contains("shown (status all), by token▼"), "{text}");
    snapshot("sorted_by_token_reversed", &model);
    press(&mut model, KeyCode::Char('O'));
    press(&mut model, KeyCode::Char('o'));
    assert_eq!(model.sort, SortBy::State);
    assert_eq!(ids(&model), ["ORD-2", "ORD-1", "ORD-3"]);
    press(&mut model, KeyCode::Char('o'));
    assert_eq!(model.sort, SortBy::Status);
    assert_eq!(ids(&model), ["ORD-1", "ORD-3", "ORD-2"]);
    press(&mut model, KeyCode::Char('o'));
    assert_eq!(model.sort, SortBy::Moved);
    assert_eq!(
        ids(&model),
        ["ORD-1", "ORD-2", "ORD-3"],
        "shortest in state first"
    );
    press(&mut model, KeyCode::Char('o'));
    assert_eq!(model.sort, SortBy::Listed);
    assert_eq!(ids(&model), ["ORD-2", "ORD-1", "ORD-3"]);
    assert!(model
        .status
        .clone()
        .unwrap()
        .text
        .contains("as the daemon lists them"));
}

#[test]
fn a_long_value_is_wrapped_in_the_describe_view_not_cut() {
    let mut model = full_model();
    let long = format!("{} the end", "word ".repeat(40));
    if let Some(detail) = model.detail.as_mut() {
        detail
            .token
            .context
            .insert("note".into(), serde_json::Value::String(long.clone()));
    }
    press(&mut model, KeyCode::Char('d'));
    let text = screen(&model);
    assert!(text.contains("the end\""), "{text}");
    let rows = crate::describe::lines(&model);
    assert!(rows.iter().all(|row| row.chars().count() <= 98), "{rows:?}");
}

#[test]
fn a_sorted_table_reads_the_whole_page_of_its_filters() {
    let mut model = full_model();
    let limit = |commands: &[Command]| {
        commands.iter().find_map(|command| match command {
            Command::Tokens(query) => query.limit,
            _ => None,
        })
    };
    model.in_flight.clear();
    let unsorted = limit(&crate::update::refresh(&mut model)).unwrap();
    assert!(unsorted < crate::model::MOST_TOKENS, "{unsorted}");
    model.in_flight.clear();
    let commands = press(&mut model, KeyCode::Char('o'));
    assert_eq!(limit(&commands), Some(crate::model::MOST_TOKENS));
}
