//! The filter language's unit tests: what it reads, what it refuses with the
//! parser's sentence, how it evaluates, and that its pushdown never loses a token
//! (and, when exact, never adds one).

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

fn object(value: Value) -> Object {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

struct Token {
    token: &'static str,
    state: &'static str,
    status: &'static str,
    visit: i64,
    workflow: &'static str,
    parent: Option<&'static str>,
    moved: i64,
    context: Object,
}

impl Token {
    fn usual() -> Token {
        Token {
            token: "ORDER-17",
            state: "review",
            status: "active",
            visit: 2,
            workflow: "orders",
            parent: None,
            moved: 700,
            context: object(json!({
                "customer": {"name": "ACME", "tier": 2},
                "items": [{"sku": "a"}, {"sku": "b"}],
                "title": "chairs",
                "urgent": true,
            })),
        }
    }

    fn facts(&self) -> TokenFacts<'_> {
        TokenFacts {
            token: self.token,
            state: self.state,
            status: self.status,
            visit: self.visit,
            workflow: self.workflow,
            parent: self.parent,
            moved: self.moved,
            graph: "sha256:3f2a9c",
            context: &self.context,
        }
    }

    fn matches(&self, text: &str) -> bool {
        let filter = parse_filter(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        filter.matches(&self.facts())
    }
}

fn refusal(text: &str) -> String {
    match parse_filter(text) {
        Ok(filter) => panic!("{text} was accepted: {filter:?}"),
        Err(FilterError(reason)) => reason,
    }
}

#[test]
fn a_filter_reads_the_tokens_fields_and_context() {
    let token = Token::usual();
    for text in [
        "state == 'review' and status == 'active' and moved > 600 \
         and ctx['customer']['name'] == 'ACME'",
        "token == 'ORDER-17'",
        "'ORDER' in token",
        "visit == 2",
        "workflow == 'orders'",
        "parent == null",
        "ctx['items'][1]['sku'] == 'b'",
        "ctx['items'][-1]['sku'] == 'b'",
        "ctx['urgent']",
        "ctx['customer']['tier'] == 2.0",
        "600 < moved < 800",
        "state in ['draft', 'review']",
        "status not in ['failed', 'cancelled']",
        "not ctx['missing']",
        "ctx['missing'] == null",
        "true",
    ] {
        assert!(token.matches(text), "{text}");
    }
    for text in [
        "state == 'draft'",
        "moved > 700",
        "ctx['customer']['name'] == 'acme'",
        "ctx['items'][5] != null",
        "ctx['title']['deeper'] != null",
        "parent != null",
        // null compared with a number is false, as in the guards.
        "ctx['missing'] < 3",
        "false",
    ] {
        assert!(!token.matches(text), "{text}");
    }
}

#[test]
fn a_filter_that_does_not_parse_is_refused_with_the_parsers_sentence() {
    for (text, sentence) in [
        (
            "state = 'review'",
            "filter \"state = 'review'\": not a valid expression:",
        ),
        (
            "state ==",
            "filter 'state ==': not a valid expression: it ends",
        ),
        ("", "filter '': not a valid expression: it is empty"),
        (
            "x == 1",
            "unknown name 'x'; a filter reads token, state, status",
        ),
        ("payload.approved", "a filter reads tokens, not the payload"),
        ("count('done') > 1", "count() reads a token's ledger"),
        ("ctx.customer == 1", "the context is read as ctx['key']"),
        ("ctx[0] == 1", "the context's keys are strings"),
        ("ctx", "read one key of the context"),
        ("state[0] == 'r'", "only the context can be indexed"),
        ("'r' in 'review'", "`in` must search a list literal"),
        (
            "moved + 1 > 3",
            "arithmetic is not part of the guard language",
        ),
        ("state == None", "write null"),
        ("state in [status]", "a list may hold only literals"),
    ] {
        let reason = refusal(text);
        assert!(reason.contains(sentence), "{text}: {reason}");
        assert!(!reason.contains('\n'), "{reason}");
    }
}

/// A comparison that can never hold for any token is a mistake an operator
/// would not see (the filter just matches nothing, and a bulk action then does
/// nothing): a status that is not one, or a number field against a string.
#[test]
fn a_filter_that_can_match_no_token_by_a_fields_kind_is_refused() {
    for (text, sentence) in [
        (
            "status == 'activ'",
            "'activ' is not a status; a status is one of: active, paused, completed, failed, cancelled",
        ),
        (
            "status in ['active', 'Paused']",
            "'Paused' is not a status; a status is one of",
        ),
        (
            "'done' != status",
            "'done' is not a status; a status is one of",
        ),
        (
            "moved > '600'",
            "moved is a number, and no number equals or is ordered with the string '600'",
        ),
        (
            "visit == \"2\"",
            "visit is a number, and no number equals or is ordered with the string '2'",
        ),
        (
            "visit in ['1', 2]",
            "visit is a number, and no number equals or is ordered with the string '1'",
        ),
    ] {
        let reason = refusal(text);
        assert!(reason.contains(sentence), "{text}: {reason}");
        assert!(!reason.contains('\n'), "{reason}");
    }
    // What can hold for some token, or is left as it was, still passes.
    let token = Token::usual();
    for text in [
        "status in ['active', 'paused']",
        "status != 'failed'",
        "visit == 2.0",
        "moved > 600 and ctx['title'] != '600'",
        "'ORDER' in token",
    ] {
        assert!(token.matches(text), "{text}");
    }
}

#[test]
fn the_states_a_filter_names_are_those_compared_with_state() {
    let named = |text: &str| {
        let filter = parse_filter(text).unwrap();
        filter
            .states_named()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(named("state == 'review'"), ["review"]);
    assert_eq!(
        named("'a' == state or not (state != 'b' and state in ['c', 'd'])"),
        ["a", "b", "c", "d"]
    );
    assert_eq!(named("status == 'active' and state not in ['x']"), ["x"]);
    let none: [&str; 0] = [];
    assert_eq!(named("state < 'm' and 'rev' in state"), none);
    assert_eq!(named("token == 'review' and ctx['state'] == 'x'"), none);
}

#[test]
fn the_workflows_a_filter_names_are_those_compared_with_workflow() {
    let named = |text: &str| {
        let filter = parse_filter(text).unwrap();
        filter
            .workflows_named()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(named("workflow == 'nope'"), ["nope"]);
    assert_eq!(
        named("'a' == workflow or not (workflow != 'b' and workflow not in ['c'])"),
        ["a", "b", "c"]
    );
    let none: [&str; 0] = [];
    assert_eq!(named("state == 'desk' and workflow < 'm'"), none);
    assert_eq!(named("ctx['workflow'] == 'x' or token == 'desk'"), none);
}

#[test]
fn moved_is_whole_seconds_rounded_down() {
    assert_eq!(moved_seconds(0, 1_999_999), 1);
    assert_eq!(moved_seconds(0, 2_000_000), 2);
    assert_eq!(moved_seconds(5_000_000, 0), -5);
    assert_eq!(moved_seconds(1, 0), -1);
}

#[test]
fn the_pushdown_names_state_status_and_moved_conditions() {
    let pushed = |text: &str| parse_filter(text).unwrap().pushdown();
    let found = pushed("state == 'review' and status in ['active', 'paused'] and moved > 600");
    assert_eq!(found.states, Some(vec!["review".to_string()]));
    assert_eq!(
        found.statuses,
        Some(vec!["active".to_string(), "paused".to_string()])
    );
    assert_eq!(found.moved_at_least, Some(601));
    assert!(found.exact);

    let found = pushed("state != 'done' and ctx['customer'] == 'ACME' and 60 >= moved");
    assert_eq!(found.not_states, vec!["done".to_string()]);
    assert_eq!(found.moved_below, Some(61));
    assert!(!found.exact, "the context is read row by row");

    let found = pushed("state == 'a' or state == 'b'");
    assert_eq!(found, Pushdown::default(), "an `or` is left to the rows");

    let found = pushed("state == 'a' and state in ['a', 'b'] and state == 5");
    assert_eq!(found.states, Some(Vec::new()), "no state is both");
    assert!(found.exact);
    assert!(pushed("moved == 2.5").states == Some(Vec::new()));
}

/// One generated filter condition on the pushed fields, or on another.
fn condition() -> impl Strategy<Value = String> {
    let state = prop::sample::select(vec!["a", "b", "c"]);
    let status = prop::sample::select(vec!["active", "paused", "failed"]);
    let op = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]);
    let number = prop::sample::select(vec!["-1", "0", "1", "1.5", "2", "3", "true", "null"]);
    prop_oneof![
        (state.clone(), prop::bool::ANY)
            .prop_map(|(s, eq)| { format!("state {} '{s}'", if eq { "==" } else { "!=" }) }),
        (state, prop::bool::ANY).prop_map(|(s, within)| {
            format!(
                "state {} ['{s}', 'b', 7]",
                if within { "in" } else { "not in" }
            )
        }),
        (status, prop::bool::ANY)
            .prop_map(|(s, eq)| { format!("status {} '{s}'", if eq { "==" } else { "!=" }) }),
        (op.clone(), number.clone()).prop_map(|(op, n)| format!("moved {op} {n}")),
        (op, number).prop_map(|(op, n)| format!("{n} {op} moved")),
        Just("visit > 1".to_string()),
        Just("ctx['n'] == 1".to_string()),
    ]
}

proptest! {
    /// A token that matches always meets the pushdown; with `exact`, a token that
    /// meets the pushdown always matches.
    #[test]
    fn the_pushdown_never_loses_a_token(
        conditions in prop::collection::vec(condition(), 1..4),
        or in prop::bool::ANY,
        state in prop::sample::select(vec!["a", "b", "c"]),
        status in prop::sample::select(vec!["active", "paused", "failed"]),
        moved in -3i64..5,
        visit in 1i64..3,
    ) {
        let text = conditions.join(if or { " or " } else { " and " });
        let filter = parse_filter(&text).unwrap();
        let context = object(json!({"n": 1}));
        let facts = TokenFacts {
            token: "T", state, status, visit, workflow: "w", parent: None, moved,
            graph: "", context: &context,
        };
        let pushed = filter.pushdown();
        let admitted = pushed.admits(state, status, moved);
        if filter.matches(&facts) {
            prop_assert!(admitted, "{} lost a token: {:?}", text, pushed);
        }
        if pushed.exact {
            prop_assert_eq!(admitted, filter.matches(&facts), "{} {:?}", text, pushed);
        }
    }
}

#[test]
fn graph_is_compared_by_a_prefix_of_its_checksum() {
    let usual = Token::usual();
    assert!(usual.matches("graph == 'sha256:3f2a'"));
    assert!(usual.matches("graph == '3f2a9c'"));
    assert!(usual.matches("'3f' == graph"));
    assert!(usual.matches("graph in ['sha256:00', '3f2']"));
    assert!(usual.matches("graph != 'sha256:00'"));
    assert!(usual.matches("graph not in ['00', '11']"));
    assert!(!usual.matches("graph == 'sha256:3f2b'"));
    assert!(!usual.matches("graph == ''"));
    assert!(!usual.matches("graph != '3f'"));
}
