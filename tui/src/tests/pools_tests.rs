//! The pools view: `L` reads and shows the limits on claims, with their slots
//! used, max, waiting tasks and keys; Esc closes it.

use crossterm::event::KeyCode;
use stateous_shared::claim_limits::{KeyUse, LimitView};

use super::view_tests::screen;
use super::*;
use crate::model::Mode;

fn limit(name: &str, per: Option<&str>, used: i64, max: i64) -> LimitView {
    LimitView {
        name: name.into(),
        states: vec!["coding".into()],
        max,
        per: per.map(str::to_string),
        rate: None,
        set_at: "2026-12-01T08:00:00Z".into(),
        used,
        keys: match per {
            Some(_) => vec![KeyUse {
                key: "'acme/api'".into(),
                used: 1,
            }],
            None => Vec::new(),
        },
        waiting: 7,
    }
}

#[test]
fn l_shows_each_pool_with_used_max_waiting_and_its_keys() {
    let mut model = full_model();
    assert_eq!(press(&mut model, KeyCode::Char('L')), vec![Command::Pools]);
    assert_eq!(model.mode, Mode::Pools);
    let list = vec![
        limit("coding", None, 3, 3),
        limit("coding-per-repo", Some("ctx['repo']"), 1, 1),
    ];
    update(&mut model, Msg::Pools(Ok(list)));
    let text = screen(&model);
    for fact in [
        "coding  coding  3/3  waiting 7",
        "coding-per-repo  coding  1/1  waiting 7  per ctx['repo']",
        "'acme/api'  1/1",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    press(&mut model, KeyCode::Esc);
    assert_ne!(model.mode, Mode::Pools);
}
