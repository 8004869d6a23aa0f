//! Operating many tokens in the TUI: marks and bulk actions through
//! the preview, the filter language in `/` with the total in the title, `R`, and
//! the why facts in the token pane.

use crossterm::event::KeyCode;
use serde_json::json;
use stateous_client::TokenQuery;
use stateous_shared::bulk::{BulkAction, BulkAnswer, Outcome, TokenOutcome};
use stateous_shared::why::Why;

use super::view_tests::{screen, snapshot};
use super::*;
use crate::model::Mode;

fn preview(count: i64) -> BulkAnswer {
    BulkAnswer {
        count,
        sample: vec![TokenOutcome {
            token: "ORD-1".into(),
            outcome: Outcome::Applied,
            state: "review".into(),
            status: "active".into(),
            detail: "cancels it in 'review'".into(),
            code: None,
        }],
        applied: count,
        ..BulkAnswer::new(BulkAction::Cancel, true)
    }
}

fn previewed(model: &mut Model, commands: Vec<Command>, count: i64) {
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("no preview asked: {commands:?}");
    };
    update(
        model,
        Msg::Previewed(Box::new(request.clone()), Ok(preview(count))),
    );
}

#[test]
fn space_marks_rows_and_a_bulk_cancel_goes_through_the_preview() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char(' '));
    assert_eq!(model.selected().as_deref(), Some("ORD-2"), "down a row");
    press(&mut model, KeyCode::Char(' '));
    assert_eq!(model.marks.len(), 2);
    let text = screen(&model);
    assert!(
        text.contains("Tokens: 3 shown (status all), 2 marked"),
        "{text}"
    );
    assert!(text.contains("│* ORD-1"), "{text}");
    assert!(text.contains("│  ORD-3"), "{text}");
    let commands = press(&mut model, KeyCode::Char('c'));
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert_eq!(request.action, Some(BulkAction::Cancel));
    assert!(request.dry_run);
    assert_eq!(request.tokens, Some(vec!["ORD-1".into(), "ORD-2".into()]));
    previewed(&mut model, commands, 2);
    snapshot("bulk_preview", &model);
    // A reason and the count are needed.
    press(&mut model, KeyCode::Enter);
    assert!(matches!(model.mode, Mode::Bulk(_)));
    assert_eq!(
        model.status.as_ref().map(|s| s.text.as_str()),
        Some("type a reason: it goes into each token's history")
    );
    typed(&mut model, "incident 42");
    press(&mut model, KeyCode::Tab);
    typed(&mut model, "3");
    press(&mut model, KeyCode::Enter);
    assert_eq!(
        model.status.as_ref().map(|s| s.text.as_str()),
        Some("type 2 to go ahead")
    );
    press(&mut model, KeyCode::Backspace);
    typed(&mut model, "2");
    let commands = press(&mut model, KeyCode::Enter);
    let [Command::Run(run)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert!(!run.dry_run);
    assert_eq!(run.reason.as_deref(), Some("incident 42"));
    assert!(model.marks.is_empty(), "the marks went with the run");
    // Progress, then the end reads the screen again.
    let mut so_far = preview(2);
    so_far.dry_run = false;
    so_far.count = 1;
    so_far.applied = 1;
    update(
        &mut model,
        Msg::Ran {
            so_far: so_far.clone(),
            done: false,
        },
    );
    assert_eq!(
        model.status.as_ref().map(|s| s.text.as_str()),
        Some("cancel: 1 tokens, 1 applied, 0 refused, 0 duplicate, 0 skipped")
    );
    so_far.count = 2;
    so_far.applied = 2;
    let after = update(&mut model, Msg::Ran { so_far, done: true });
    assert!(
        after.iter().any(|c| matches!(c, Command::Tokens(_))),
        "{after:?}"
    );
}

#[test]
fn star_marks_every_match_and_acts_by_the_filter() {
    let mut model = full_model();
    model.size = (160, 30);
    model.status_filter = Some("active");
    model.filter = Some("state == 'review'".into());
    model.total = Some(5000);
    press(&mut model, KeyCode::Char('*'));
    assert!(model.mark_all);
    assert!(screen(&model).contains("5000 marked"), "{}", screen(&model));
    let commands = press(&mut model, KeyCode::Char('p'));
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert_eq!(
        request.filter.as_deref(),
        Some("(state == 'review') and status == 'active'")
    );
    assert_eq!(request.tokens, None);
    // The preview says what it would refuse, and the ended tokens it left out.
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    let mut counted = preview(5000);
    counted.applied = 4985;
    counted.refused = 15;
    counted.left_out = 50_000;
    counted.refusals = vec![stateous_shared::bulk::RefusalCount {
        code: "child_token".into(),
        status: "active".into(),
        count: 15,
        example: "token 'C-1' is a child of 'C'".into(),
    }];
    update(
        &mut model,
        Msg::Previewed(Box::new(request.clone()), Ok(counted)),
    );
    let text = screen(&model);
    assert!(
        text.contains(
            "cancel would apply to 4985 tokens and refuse 15: 15 child_token (active); 50000 \
             ended tokens left"
        ),
        "{text}"
    );
    assert!(
        text.contains("out (a filter that names a status takes them in)"),
        "{text}"
    );
    // Esc changes nothing; * again clears the marks.
    press(&mut model, KeyCode::Esc);
    assert_eq!(model.mode, Mode::Normal);
    press(&mut model, KeyCode::Char('*'));
    assert!(!model.mark_all && model.marks.is_empty());
}

#[test]
fn a_bulk_fire_picks_among_every_event_of_the_workflow() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char(' '));
    press(&mut model, KeyCode::Char('f'));
    let Mode::Pick { token, events, .. } = &model.mode else {
        panic!("{:?}", model.mode);
    };
    assert_eq!((token.as_str(), events.len()), ("", 2));
    press(&mut model, KeyCode::Enter);
    typed(&mut model, r#"{"approved": true}"#);
    let commands = press(&mut model, KeyCode::Enter);
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert_eq!(request.action, Some(BulkAction::Fire));
    assert_eq!(request.event.as_deref(), Some("reviewed"));
    assert_eq!(
        request.payload,
        json!({"approved": true}).as_object().cloned()
    );
}

#[test]
fn the_filter_language_goes_to_the_daemon_and_the_title_shows_the_total() {
    let mut model = full_model();
    model.size = (160, 30);
    press(&mut model, KeyCode::Char('/'));
    typed(&mut model, "state == 'review' and moved > 60");
    let commands = press(&mut model, KeyCode::Enter);
    assert_eq!(
        model.filter.as_deref(),
        Some("state == 'review' and moved > 60")
    );
    let query = commands.iter().find_map(|c| match c {
        Command::Tokens(query) => Some(query.clone()),
        _ => None,
    });
    assert_eq!(
        query.and_then(|q: TokenQuery| q.filter),
        Some("state == 'review' and moved > 60".to_string())
    );
    let page = vec![token("ORD-1", "review", "active", 65)];
    let filter = model.filter.clone();
    update(
        &mut model,
        Msg::Page {
            status: None,
            filter,
            answer: Ok((page, Some(100_000))),
        },
    );
    let text = screen(&model);
    assert!(
        text.contains("Tokens: 100000 (status all, where state == 'review' and moved > 60)"),
        "{text}"
    );
    // One that does not parse says the parser's sentence and keeps the filter.
    press(&mut model, KeyCode::Char('/'));
    for _ in 0..40 {
        press(&mut model, KeyCode::Backspace);
    }
    typed(&mut model, "state = 'x'");
    press(&mut model, KeyCode::Enter);
    let said = model.status.clone().expect("a sentence");
    assert!(said.error);
    assert!(
        said.text
            .starts_with("filter \"state = 'x'\": not a valid expression"),
        "{}",
        said.text
    );
    assert_eq!(
        model.filter.as_deref(),
        Some("state == 'review' and moved > 60")
    );
    // Plain text stays the shorthand.
    press(&mut model, KeyCode::Char('/'));
    for _ in 0..40 {
        press(&mut model, KeyCode::Backspace);
    }
    typed(&mut model, "ord-2");
    press(&mut model, KeyCode::Enter);
    assert_eq!(
        (model.filter.as_deref(), model.text_filter.as_str()),
        (None, "ord-2")
    );
}

#[test]
fn r_retries_a_failed_token_and_read_only_keeps_bulk_keys_off() {
    let mut model = model();
    model.tokens[0].status = "failed".into();
    assert_eq!(
        press(&mut model, KeyCode::Char('R')),
        vec![Command::Retry("ORD-1".into())]
    );
    press(&mut model, KeyCode::Char('j'));
    assert!(press(&mut model, KeyCode::Char('R')).is_empty());
    assert!(model
        .status
        .as_ref()
        .is_some_and(|s| s.text.contains("only a failed token")));
    let mut read_only = full_model();
    read_only.read_only = true;
    press(&mut read_only, KeyCode::Char(' '));
    assert!(press(&mut read_only, KeyCode::Char('c')).is_empty());
    assert!(press(&mut read_only, KeyCode::Char('R')).is_empty());
    let run = update(
        &mut read_only,
        Msg::Previewed(Default::default(), Ok(preview(1))),
    );
    assert!(run.is_empty());
}

#[test]
fn the_token_pane_shows_why_the_token_waits() {
    let mut model = full_model();
    let why: Why = serde_json::from_value(json!({
        "token": model.tokens[0],
        "moved": 65,
        "reasons": [
            "its task 4 is being worked on by box-1 (attempt 2, 0 retries left); its lease ends in 1m 35s; box-1 was last heard from 3s ago"
        ],
        "transitions": [
            {"event": "reviewed", "to": "__end__", "guard": "payload.approved == true", "reads_payload": true},
            {"event": "reviewed", "to": "draft", "otherwise": true}
        ]
    }))
    .expect("a why answer");
    update(
        &mut model,
        Msg::Why("ORD-1".into(), Ok(Some(Box::new(why)))),
    );
    snapshot("why", &model);
    let text = screen(&model);
    assert!(
        text.contains("why       its task 4 is being worked on by box-1"),
        "{text}"
    );
    assert!(
        text.contains("guard     reviewed -> END: decided by the"),
        "{text}"
    );
}

#[test]
fn m_migrates_the_marked_tokens_through_the_preview() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char(' '));
    let commands = press(&mut model, KeyCode::Char('M'));
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert_eq!(request.action, Some(BulkAction::Migrate));
    assert!(request.dry_run);
    assert_eq!(request.tokens, Some(vec!["ORD-1".into()]));
    let mut read_only = full_model();
    read_only.read_only = true;
    press(&mut read_only, KeyCode::Char(' '));
    assert!(press(&mut read_only, KeyCode::Char('M')).is_empty());
}

#[test]
fn tui_where_starts_on_a_filter_and_a_wrong_one_is_refused_before_the_screen() {
    let options = crate::Options {
        filter: Some("state == 'review' and moved > 600".into()),
        ..crate::Options::default()
    };
    assert_eq!(options.check(), Ok(()));
    let mut model = Model::new("unix:///run/stateous.sock", now());
    options.apply(&mut model);
    let commands = crate::update::refresh(&mut model);
    let query = commands
        .iter()
        .find_map(|command| match command {
            Command::Tokens(query) => Some(query.clone()),
            _ => None,
        })
        .expect("a read of the tokens");
    assert_eq!(
        query.filter.as_deref(),
        Some("state == 'review' and moved > 600")
    );
    let wrong = crate::Options {
        filter: Some("state ==".into()),
        ..crate::Options::default()
    };
    assert!(wrong.check().unwrap_err().starts_with("--where: "));
}

#[test]
fn priority_sets_the_selected_tokens_or_previews_the_marked_ones() {
    let mut model = full_model();
    let selected = model.selected().unwrap();
    press(&mut model, KeyCode::Char('P'));
    assert!(matches!(model.mode, Mode::Priority(_)), "{:?}", model.mode);
    assert!(
        screen(&model).contains(&format!("priority of {selected}: ")),
        "{}",
        screen(&model)
    );
    // A priority that is no whole number closes the prompt and says why.
    typed(&mut model, "high");
    assert!(press(&mut model, KeyCode::Enter).is_empty());
    assert!(matches!(model.mode, Mode::Normal));
    assert!(
        screen(&model)
            .contains("a priority is a whole number from -1000000 to 1000000, not \"high\""),
        "{}",
        screen(&model)
    );
    press(&mut model, KeyCode::Char('P'));
    typed(&mut model, "7");
    let commands = press(&mut model, KeyCode::Enter);
    assert_eq!(
        commands,
        vec![Command::Priority {
            token: selected,
            priority: 7
        }]
    );
    // With marks, the bulk action's preview.
    press(&mut model, KeyCode::Char(' '));
    press(&mut model, KeyCode::Char('P'));
    typed(&mut model, "-2");
    let commands = press(&mut model, KeyCode::Enter);
    let [Command::Preview(request)] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    assert_eq!(request.action, Some(BulkAction::Priority));
    assert_eq!(request.priority, Some(-2));
    assert!(request.dry_run);
}

#[test]
fn a_read_only_tui_sets_no_priority() {
    let mut model = full_model();
    model.read_only = true;
    assert!(press(&mut model, KeyCode::Char('P')).is_empty());
    assert!(matches!(model.mode, Mode::Normal));
}
