//! The guard language's unit tests: what it accepts, what it refuses and why, what
//! a guard reads, and how it evaluates (cases after the reference's own tests of
//! its guards, plus Python's semantics at the edges: `docs/concepts/guards.md`).

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::wire::Object;

fn object(value: Value) -> Object {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A token's data: the context, the payload, counts and the children of a join.
struct Data {
    ctx: Object,
    payload: Option<Object>,
    counts: Vec<(&'static str, i64)>,
    branches: Option<Vec<Value>>,
}

impl Data {
    fn usual() -> Data {
        Data {
            ctx: object(json!({"brief": null, "repo": "acme/api", "rejected": 0})),
            payload: Some(object(json!({"severity": "high"}))),
            counts: vec![("failed", 2), ("timeout", 1), ("review_done", 2)],
            branches: None,
        }
    }

    fn holds(&self, text: &str) -> bool {
        let guard = parse_guard(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let count = |event: &str| {
            self.counts
                .iter()
                .find(|(name, _)| *name == event)
                .map_or(0, |(_, n)| *n)
        };
        let input = GuardInput {
            ctx: &self.ctx,
            payload: self.payload.as_ref(),
            count: &count,
            branches: self.branches.as_deref(),
        };
        evaluate(&guard, &input)
    }
}

fn refusal(text: &str) -> String {
    match parse_guard(text) {
        Ok(guard) => panic!("{text} was accepted: {guard:?}"),
        Err(GuardError(reason)) => reason,
    }
}

#[test]
fn the_grammar_accepts_the_documented_forms() {
    for text in [
        "count('failed') < 3",
        "ctx['brief'] == null",
        "payload.severity in ['high', 'critical']",
        "not (ctx['points'] >= 2)",
        "ctx['pr_number'] != null or true",
        "count('review_done') >= 2 and ctx['rejected'] == 0",
        "1 < count('failed') < 3",
        "ctx['delta'] > -5",
        "ctx['delta'] in [-1, 2.5]",
        "payload.severity in ctx['levels']",
        "branches.all(final == 'approved')",
        "branches.any(status == 'failed' and payload.count > 0)",
        "branches.all(workflow in ['security', 'design']) and ctx['repo'] != null",
        "ctx[\"double\"] == \"quotes\"",
        "  ctx['padded'] == 1  ",
        "ctx['a']==1",
        "(ctx)['a'] == (1)",
        "-(5) < ctx['a']",
        "[1, 2,] == ctx['a']",
        "count('a',) == 1",
        "'sub' in ctx['text']",
        "ctx['a'] == 1 # a comment",
        "(ctx['a'] == 1 or\n ctx['b'] == 2)",
        "true",
        "ctx['flag']",
        "branches.any(status in [final, 'x'])",
        "branches.all(ctx['k'] == 1 and count('e') > 0)",
    ] {
        assert!(parse_guard(text).is_ok(), "{text}: {:?}", parse_guard(text));
    }
}

#[test]
fn the_grammar_refuses_with_a_reason() {
    let cases = [
        ("__import__('os')", "only count('event'), branches.all(...)"),
        ("final == 'approved'", "'final' is a field of a child"),
        (
            "branches.all(branches.any(final == 'x'))",
            "cannot be nested",
        ),
        ("branches.all()", "exactly one condition"),
        ("branches.all(a == 1, b == 2)", "exactly one condition"),
        (
            "branches.some(final == 'x')",
            "only count('event'), branches.all(...)",
        ),
        ("branches == 1", "unknown name 'branches'"),
        (
            "branches.all == 1",
            "only the payload can be read with a dot",
        ),
        ("ctx.brief", "the context is read as ctx['key']"),
        (
            "count('a') + 1 < 3",
            "arithmetic is not part of the guard language",
        ),
        (
            "count(name) < 3",
            "count() needs the event's name as a string",
        ),
        (
            "count('a', 'b') < 3",
            "count() needs the event's name as a string",
        ),
        (
            "count('a', state='s') < 3",
            "count() takes the event's name and nothing else",
        ),
        ("payload", "read one field of the payload"),
        ("ctx", "read one key of the context"),
        ("x == 1", "unknown name 'x'"),
        ("visit > 1", "unknown name 'visit'"),
        ("tenant['team'] == 'x'", "only the context can be indexed"),
        ("ctx['a']['b'] == 1", "only the context can be indexed"),
        ("ctx[0] == 1", "only the context can be indexed"),
        (
            "payload.a.b == 1",
            "only the payload can be read with a dot",
        ),
        ("count('a') <", "not a valid expression"),
        ("", "not a valid expression"),
        ("lambda: 1", "lambdas are not part of the guard language"),
        ("ctx['a'] == [ctx['b']]", "a list may hold only literals"),
        ("ctx['a'] == [[1]]", "a list may hold only literals"),
        (
            "payload.s in 'abc'",
            "`in` must search a list literal or a value",
        ),
        (
            "payload.s not in 'abc'",
            "`in` must search a list literal or a value",
        ),
        ("1 in 3", "`in` must search a list literal or a value"),
        (
            "-ctx['a'] < 3",
            "a minus sign may stand only before a number",
        ),
        (
            "-'a' == ctx['a']",
            "a minus sign may stand only before a number",
        ),
        (
            "--5 == ctx['a']",
            "a minus sign may stand only before a number",
        ),
        ("+5 == ctx['a']", "only a minus sign"),
        ("ctx['a'] is None", "not with `is`"),
        (
            "ctx['a'] == True",
            "True is not a literal of the guard language; write true",
        ),
        ("ctx['a'] == None", "write null"),
        ("ctx['a'] == b'x'", "a bytes literal is not a literal"),
        ("ctx['a'] == 1j", "a complex number is not a literal"),
        ("ctx['a'] == f'x'", "f-strings"),
        ("1 if ctx['a'] else 2", "conditional expressions"),
        ("(1, 2)", "a tuple"),
        ("ctx['a'], 1", "a tuple"),
        ("{'a': 1}", "dictionaries and sets"),
        ("ctx['a'][1:2]", "slices"),
        ("ctx['a'] == 1\nctx['b'] == 2", "one expression on one line"),
        ("1 == not ctx['a']", "not a valid expression"),
        ("ctx['a'] == 012", "not a number"),
        ("payload.if == 1", "a dot must be followed by a name"),
        ("'unclosed", "a string is not closed"),
    ];
    for (text, reason) in cases {
        let found = refusal(text);
        assert!(found.contains(reason), "{text}: {found}");
    }
}

#[test]
fn a_refusal_names_the_guard_as_python_quotes_it() {
    assert!(refusal("x == 1").starts_with("guard 'x == 1': "));
    assert!(refusal("ctx.key").starts_with("guard 'ctx.key': "));
    assert!(refusal("ctx['a'] + 1").starts_with("guard \"ctx['a'] + 1\": "));
}

#[test]
fn nesting_too_deep_is_refused_not_a_crash() {
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(refusal(&deep).contains("levels deep"));
    let nots = format!("{}true", "not ".repeat(5000));
    assert!(refusal(&nots).contains("levels deep"));
    let dots = format!("payload{}", ".a".repeat(5000));
    assert!(refusal(&dots).contains("levels deep"));
}

#[test]
fn a_guard_records_what_it_reads() {
    let text = "ctx['brief'] == null and payload.severity == 'high' and count('failed') < 3";
    let guard = parse_guard(text).expect("valid");
    assert_eq!(guard.text, text);
    let set = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(guard.reads.context_keys, set(&["brief"]));
    assert_eq!(guard.reads.payload_fields, set(&["severity"]));
    assert_eq!(guard.reads.events, set(&["failed"]));
    assert!(!guard.reads.branches);

    let joined = parse_guard("branches.any(payload.count > 2) and payload.severity == 'high'")
        .expect("valid");
    assert!(joined.reads.branches);
    assert_eq!(joined.reads.payload_fields, set(&["severity"]));
}

#[test]
fn guards_evaluate_against_what_a_token_knows() {
    let data = Data::usual();
    let cases = [
        ("count('failed') < 3", true),
        ("count('failed') >= 3", false),
        ("count('timeout') < 2", true),
        ("count('never_happened') == 0", true),
        ("ctx['brief'] == null", true),
        ("ctx['repo'] == 'acme/api'", true),
        ("payload.severity in ['high', 'critical']", true),
        ("payload.severity not in ['high', 'critical']", false),
        ("not (count('failed') > 1) or ctx['repo'] != null", true),
        ("1 < count('failed') < 3", true),
        ("3 > count('failed') > 2", false),
        ("count('review_done') >= 2 and ctx['rejected'] == 0", true),
        ("ctx['rejected'] > -5", true),
        ("ctx['rejected'] < -5", false),
        ("ctx['rejected'] not in [-1, -2]", true),
        ("not ctx['rejected'] > -1", false),
        ("ctx['nothing_here'] == null", true),
        ("payload.missing == null", true),
    ];
    for (text, expected) in cases {
        assert_eq!(data.holds(text), expected, "{text}");
    }
}

#[test]
fn null_compared_with_a_number_is_false_not_an_error() {
    let data = Data::usual();
    assert!(!data.holds("ctx['brief'] > 3"));
    assert!(!data.holds("ctx['brief'] <= 3"));
    assert!(data.holds("ctx['brief'] != 3"));
    assert!(!data.holds("'x' in ctx['brief']"));
    assert!(!data.holds("'x' not in ctx['brief']"));
}

#[test]
fn values_compare_as_python_compares_them() {
    let data = Data {
        ctx: object(json!({
            "one": 1, "float": 1.0, "yes": true, "no": false, "big": 9007199254740993_u64,
            "text": "hello", "tags": ["a", "b"], "meta": {"k": 1}, "empty": [], "zero": 0,
            "nums": [1, 2.5], "huge": 18446744073709551615_u64,
        })),
        payload: None,
        counts: vec![],
        branches: None,
    };
    let cases = [
        ("ctx['one'] == ctx['float']", true),
        ("ctx['yes'] == 1", true),
        ("ctx['yes'] == true", true),
        ("ctx['no'] == 0", true),
        ("ctx['yes'] > ctx['no']", true),
        ("ctx['yes'] < 2", true),
        ("ctx['big'] > 9007199254740992.0", true),
        ("ctx['huge'] > 1", true),
        ("ctx['text'] > 'hell'", true),
        ("ctx['text'] < 1", false),
        ("ctx['text'] != 1", true),
        ("'ell' in ctx['text']", true),
        ("'a' in ctx['tags']", true),
        ("ctx['tags'] == ['a', 'b']", true),
        ("ctx['tags'] < ['a', 'c']", true),
        ("ctx['tags'] < ['a', 1]", false),
        ("ctx['tags'] > ['a']", true),
        ("'k' in ctx['meta']", true),
        ("1 in ctx['meta']", false),
        ("1 not in ctx['meta']", true),
        ("[1] in ctx['meta']", false),
        ("[1] not in ctx['meta']", false),
        ("1 in ctx['one']", false),
        ("1 not in ctx['one']", false),
        ("true in ctx['nums']", true),
        ("2.5 in ctx['nums']", true),
        ("ctx['meta'] > 1", false),
        ("ctx['empty']", false),
        ("ctx['tags']", true),
        ("ctx['zero']", false),
        ("ctx['meta']", true),
        ("'x'", true),
        ("''", false),
        ("[]", false),
        ("(ctx['one'] == 1) == 1", true),
        ("ctx['missing'] == ctx['also_missing']", true),
        ("ctx['one'] == 1e999", false),
        ("ctx['one'] < 1e999", true),
        ("0x10 == 16 and 1_0 == 10.0 and 'a' 'b' == 'ab'", true),
    ];
    for (text, expected) in cases {
        assert_eq!(data.holds(text), expected, "{text}");
    }
}

fn joined_data() -> Data {
    let mut data = Data::usual();
    data.branches = Some(vec![
        json!({"workflow": "security", "token": "T-1.reviews.1.security",
               "status": "completed", "final": "approved", "payload": null}),
        json!({"workflow": "design", "token": "T-1.reviews.1.design",
               "status": "failed", "final": "rejected", "payload": {"count": 2}}),
    ]);
    data
}

#[test]
fn branches_all_and_any_look_at_each_ended_child() {
    let data = joined_data();
    let cases = [
        ("branches.all(final == 'approved')", false),
        ("branches.any(final == 'rejected')", true),
        ("branches.any(payload.count == 2)", true),
        ("branches.all(payload.count == null)", false),
        (
            "branches.any(status == 'failed' and workflow == 'design')",
            true,
        ),
        ("branches.all(token != null)", true),
        (
            "branches.any(final == 'approved') and ctx['repo'] == 'acme/api'",
            true,
        ),
        ("branches.any(payload.severity == 'high')", false),
    ];
    for (text, expected) in cases {
        assert_eq!(data.holds(text), expected, "{text}");
    }
}

#[test]
fn with_no_children_all_holds_and_any_does_not() {
    let data = Data::usual();
    assert!(data.holds("branches.all(final == 'x')"));
    assert!(!data.holds("branches.any(final == 'x')"));
}

#[test]
fn a_missing_payload_reads_every_field_as_null() {
    let mut data = Data::usual();
    data.payload = None;
    assert!(data.holds("payload.severity == null"));
    assert!(!data.holds("payload.severity"));
}

#[test]
fn the_tree_can_be_walked() {
    let guard = parse_guard("not (ctx['a'] in [1, 2]) or count('e') > 0").expect("valid");
    let mut seen = Vec::new();
    guard.tree.walk(&mut |node| {
        if let Expr::Context(key) | Expr::Count(key) = node {
            seen.push(key.clone());
        }
    });
    assert_eq!(seen, ["a", "e"]);
}

proptest! {
    #[test]
    fn the_parser_never_panics_on_any_text(text in ".{0,80}") {
        let _ = parse_guard(&text);
    }

    #[test]
    fn the_parser_never_panics_on_guard_like_text(
        text in "[ctxpayloadcount()\\[\\]'\"<>=!.,a-z0-9 _-]{0,60}|(ctx|payload|count|branches|not|and|or|in|true|null|[0-9.e_x-]+|'[a-z]*'|[\\[\\]().,<>=!+ ]){0,20}"
    ) {
        let _ = parse_guard(&text);
    }
}
