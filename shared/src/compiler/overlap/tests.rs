//! The overlap check's tests: the reference's own cases of its overlap check (with
//! its models written as JSON Schema), the exact
//! compile lines, and a property: whenever some data makes two guards both true,
//! the check refuses them.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::guards::parse_guard;

fn ticket() -> Value {
    json!({"properties": {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
        "brief": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
    }})
}

fn verdict() -> Value {
    json!({
        "properties": {
            "score": {"type": "integer"},
            "severity": {"enum": ["high", "low"], "type": "string"},
            "ok": {"type": "boolean"},
        },
        "required": ["score", "severity", "ok"],
    })
}

fn counter() -> Value {
    json!({"properties": {
        "n": {"type": "integer", "default": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "delta": {"type": "integer", "default": 0},
        "meta": {"type": "object", "additionalProperties": {"type": "integer"}, "default": {}},
    }})
}

fn alarm() -> Value {
    json!({
        "$defs": {"Sev": {"enum": ["high", "low"], "type": "string"}},
        "properties": {
            "sev": {"$ref": "#/$defs/Sev"},
            "maybe": {"anyOf": [{"$ref": "#/$defs/Sev"}, {"type": "null"}], "default": null},
        },
        "required": ["sev"],
    })
}

/// The problems of `judge` leaving on `event` along one transition per guard.
fn problems(guards: &[&str], event: &str, context: &Value, payload: &Value) -> Vec<String> {
    let parsed: Vec<Guard> = guards
        .iter()
        .map(|g| parse_guard(g).expect("a valid guard"))
        .collect();
    let refs: Vec<&Guard> = parsed.iter().collect();
    let place = Where {
        event,
        context: Some(context),
        payload: Some(payload),
        schemas: None,
    };
    check_group("judge", &refs, &place)
}

fn judged(guards: &[&str]) -> Vec<String> {
    problems(guards, "verdict", &ticket(), &verdict())
}

fn alarmed(guards: &[&str]) -> Vec<String> {
    problems(guards, "alarm", &counter(), &alarm())
}

fn one(found: Vec<String>) -> String {
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().expect("one problem")
}

#[test]
fn guards_that_can_never_both_be_true_pass() {
    for pair in [
        ["payload.score > 5", "payload.score <= 5"],
        ["payload.score > 5", "not (payload.score > 5)"],
        ["payload.severity == 'high'", "payload.severity == 'low'"],
        ["payload.ok == true", "payload.ok == false"],
        ["ctx['brief'] == null", "ctx['brief'] != null"],
        ["count('verdict') < 3", "count('verdict') >= 3"],
        [
            "payload.score < 0 or payload.score > 10",
            "payload.score >= 0 and payload.score <= 10",
        ],
        ["payload.score in [1, 2]", "payload.score in [3, 4]"],
        // Any other string would do for both, but severity is only 'high' or 'low'.
        ["payload.severity != 'high'", "payload.severity != 'low'"],
    ] {
        assert_eq!(judged(&pair), Vec::<String>::new(), "{pair:?}");
    }
    assert!(judged(&["payload.score > 5"]).is_empty());
}

#[test]
fn an_overlap_is_refused_with_the_reference_line() {
    let line = one(judged(&["payload.score > 5", "payload.score > 3"]));
    assert_eq!(
        line,
        "'verdict' from 'judge': the guards 'payload.score > 5' and 'payload.score > 3' \
         can both be true, e.g. when payload.score = 6; make them exclusive, or make one \
         the fallback (otherwise: true)"
    );
}

#[test]
fn the_documented_example_reads_as_documented() {
    let context = json!({"properties": {"amount": {"type": "integer"}}, "required": ["amount"]});
    let guards = [
        parse_guard("ctx['amount'] > 100").expect("valid"),
        parse_guard("ctx['amount'] > 50").expect("valid"),
    ];
    let place = Where {
        event: "reviewed",
        context: Some(&context),
        payload: None,
        schemas: None,
    };
    assert_eq!(
        one(check_group("review", &[&guards[0], &guards[1]], &place)),
        "'reviewed' from 'review': the guards \"ctx['amount'] > 100\" and \"ctx['amount'] > 50\" \
         can both be true, e.g. when ctx['amount'] = 101; make them exclusive, or make one the \
         fallback (otherwise: true)"
    );
    let approved = json!({"properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
                          "required": ["approved", "note"]});
    let found = problems(
        &["payload.approved == true", "payload.note != ''"],
        "reviewed",
        &json!({}),
        &approved,
    );
    assert!(one(found).contains(
        "the guards 'payload.approved == true' and \"payload.note != ''\" can both be true, \
         e.g. when payload.approved = true, payload.note = '\\x00'; "
    ));
}

#[test]
fn examples_name_every_value_and_respect_counts() {
    let line = one(judged(&["ctx['a'] == 1", "ctx['b'] == 2"]));
    assert!(
        line.contains("e.g. when ctx['a'] = 1, ctx['b'] = 2;"),
        "{line}"
    );
    let line = one(judged(&["count('verdict') < 3", "count('verdict') > 1"]));
    assert!(line.contains("count('verdict') = 2"), "{line}");
    let line = one(judged(&[
        "ctx['a'] == true or ctx['a'] == 1",
        "ctx['a'] == 1",
    ]));
    assert!(line.contains("ctx['a'] = 1;"), "{line}");
}

#[test]
fn every_overlapping_pair_is_reported() {
    let found = judged(&[
        "payload.score > 5",
        "payload.score > 3",
        "payload.score > 1",
    ]);
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|p| p.contains("can both be true")));
}

#[test]
fn what_cannot_be_proven_is_refused_with_advice() {
    let line = one(judged(&["payload.score > ctx['a']", "payload.score < 3"]));
    assert_eq!(
        line,
        "'verdict' from 'judge': cannot prove the guards \"payload.score > ctx['a']\" and \
         'payload.score < 3' are never both true: a guard compares two values with each other; \
         compare values with literals, or make one the fallback (otherwise: true)"
    );
    let line = one(judged(&["1 in payload.score", "payload.score > 3"]));
    assert!(
        line.contains("`in` searches payload.score, which is not a list"),
        "{line}"
    );
    let line = one(alarmed(&["ctx['tags'] < ['b']", "ctx['tags'] > ['a']"]));
    assert!(
        line.contains("cannot prove") && line.contains("orders a list"),
        "{line}"
    );
}

#[test]
fn enums_lists_and_negative_literals() {
    let line = one(alarmed(&["payload.sev == 'high'", "payload.sev == 'high'"]));
    assert!(line.contains("payload.sev = 'high'"), "{line}");
    let line = one(alarmed(&[
        "payload.maybe == 'low'",
        "payload.maybe != 'high'",
    ]));
    assert!(line.contains("payload.maybe = 'low'"), "{line}");
    assert!(alarmed(&["payload.sev != 'high'", "payload.sev != 'low'"]).is_empty());
    let line = one(alarmed(&["ctx['n'] < 1", "ctx['n']"]));
    assert!(line.contains("ctx['n'] = -1"), "{line}");
    let line = one(alarmed(&["ctx['tags'] == ['a']", "ctx['tags'] == ['a']"]));
    assert!(line.contains("ctx['tags'] = ['a']"), "{line}");
    for pair in [
        ["ctx['tags'] != ['a']", "'a' in ctx['tags']"],
        ["['a'] in ctx['tags']", "['a'] in ctx['tags']"],
        ["ctx['tags']", "'a' not in ctx['tags']"],
        ["ctx['tags']", "ctx['tags'] != ['a']"],
        ["not ctx['meta']", "ctx['meta'] != null"],
    ] {
        assert!(one(alarmed(&pair)).contains("can both be true"), "{pair:?}");
    }
    assert!(alarmed(&["ctx['tags'] == []", "ctx['tags'] != []"]).is_empty());
    assert!(alarmed(&["ctx['delta'] > -5", "ctx['delta'] <= -5"]).is_empty());
    let line = one(alarmed(&["ctx['delta'] > -5", "ctx['delta'] < -3"]));
    assert!(line.contains("ctx['delta'] = -4"), "{line}");
    let line = one(alarmed(&["ctx['delta'] in [-1, -2]", "ctx['delta'] < 0"]));
    assert!(line.contains("ctx['delta'] = -2"), "{line}");
}

#[test]
fn branches_cannot_be_proven() {
    let found = problems(
        &[
            "branches.all(final == 'waiting')",
            "branches.any(final == 'x')",
        ],
        "joined",
        &ticket(),
        &json!({}),
    );
    let line = one(found);
    assert!(
        line.starts_with("'joined' from 'judge': cannot prove the guards"),
        "{line}"
    );
    assert!(line.contains(BRANCHES), "{line}");
    let found = problems(
        &["branches.all(final == 'waiting') == true", "ctx['a'] == 1"],
        "joined",
        &ticket(),
        &json!({}),
    );
    assert!(one(found).contains(BRANCHES));
}

#[test]
fn start_is_named_start() {
    let guards = [
        parse_guard("ctx['a'] == 1").expect("valid"),
        parse_guard("ctx['a'] >= 1").expect("valid"),
    ];
    let context = ticket();
    let place = Where {
        event: "__started__",
        context: Some(&context),
        payload: None,
        schemas: None,
    };
    let line = one(check_group("__start__", &[&guards[0], &guards[1]], &place));
    assert!(line.starts_with("START: the guards"), "{line}");
}

#[test]
fn gaps_of_the_reference_are_closed() {
    // A comparison used as an operand: the value inside it is tried too.
    let line = one(judged(&["(ctx['a'] > 1) == true", "true"]));
    assert!(line.contains("ctx['a'] = 2"), "{line}");
    // `in` on a value that may be a string tests for a substring: not provable.
    let found = problems(
        &["'a' in ctx['x']", "ctx['x'] > 'b'"],
        "e",
        &json!({}),
        &json!({}),
    );
    assert!(one(found).contains("may be a string or an object"));
    // A field that may be left out reads as null.
    let context = json!({"properties": {"n": {"type": "integer"}}});
    let found = problems(
        &["not ctx['n'] > 1", "not ctx['n'] <= 1"],
        "e",
        &context,
        &json!({}),
    );
    assert!(one(found).contains("ctx['n'] = null"));
}

/// A case the property test found: the check accepted these two though both are
/// true for `x = 2.5` (`2.5 >= True` and `2.5 not in [True, 'b']`).
#[test]
fn a_boolean_literal_compared_as_a_number_is_tried_past_one() {
    let first =
        parse_guard("(ctx['x'] >= true) and ((ctx['x'] not in [true, 'b']) and (ctx['t'] != []))")
            .expect("valid");
    let second = parse_guard("not (ctx['s'] in [])").expect("valid");
    let (context, payload) = (property_context(), property_payload());
    let place = Where {
        event: "e",
        context: Some(&context),
        payload: Some(&payload),
        schemas: None,
    };
    let data = json!({"a": 0, "s": "x", "f": 0.0, "t": ["a"], "o": null, "x": 2.5});
    let no_payload = json!({"p": "", "b": false});
    assert!(holds(&first, &data, &no_payload, 1, 0));
    assert!(holds(&second, &data, &no_payload, 1, 0));
    // The example printed is one for which both hold.
    let line = one(check_group("judge", &[&first, &second], &place));
    assert!(
        line.contains("e.g. when ctx['s'] = 'x', ctx['t'] = ['~'], ctx['x'] = 2;"),
        "{line}"
    );
    let example = json!({"a": 0, "s": "x", "f": 0.0, "t": ["~"], "o": null, "x": 2});
    assert!(holds(&first, &example, &no_payload, 1, 0));
    assert!(holds(&second, &example, &no_payload, 1, 0));
}

#[test]
fn numbers_on_both_sides_of_a_boolean_literal_are_tried() {
    // `score` is an integer: 2 is `>= True` and `!= 1`; -1 is `!= False`.
    let line = one(judged(&["payload.score >= true", "payload.score != 1"]));
    assert!(line.contains("payload.score = 2"), "{line}");
    let line = one(judged(&[
        "payload.score != false",
        "payload.score != false",
    ]));
    assert!(line.contains("payload.score = -1"), "{line}");
    // A count, and a boolean operation compared with a number.
    let line = one(judged(&["count('verdict') > true", "count('verdict') < 3"]));
    assert!(line.contains("count('verdict') = 2"), "{line}");
    let line = one(judged(&[
        "payload.score == (ctx['a'] > 1)",
        "payload.score > 0",
    ]));
    assert!(line.contains("payload.score = 1"), "{line}");
    // Still exclusive where no number lies between.
    assert!(judged(&["payload.score > false", "payload.score < true"]).is_empty());
    assert!(judged(&["payload.score >= true", "payload.score < 1"]).is_empty());
}

#[test]
fn a_string_read_as_true_is_cut_at_the_empty_string() {
    // '\0' is true and less than 'a'.
    let payload = json!({"properties": {"p": {"type": "string"}}, "required": ["p"]});
    let found = problems(&["payload.p < 'a'", "payload.p"], "e", &json!({}), &payload);
    assert!(one(found).contains("payload.p = '\\x00'"));
    let found = problems(
        &["payload.p < 'a'", "not payload.p"],
        "e",
        &json!({}),
        &payload,
    );
    assert!(one(found).contains("payload.p = ''"));
    assert!(problems(&["payload.p <= ''", "payload.p"], "e", &json!({}), &payload).is_empty());
}

// ── the property: an accepted pair is never both true ──────────────────────

/// The models of the property test: each field's schema and the data it allows.
fn property_context() -> Value {
    json!({
        "required": ["a", "s", "f", "t", "o"],
        "properties": {
            "a": {"type": "integer"},
            "s": {"enum": ["x", "y"]},
            "f": {"type": "number"},
            "t": {"type": "array", "items": {"type": "string"}},
            "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "m": {"type": "integer"},
        },
    })
}

fn property_payload() -> Value {
    json!({
        "required": ["p", "b"],
        "properties": {"p": {"type": "string"}, "b": {"type": "boolean"}},
    })
}

/// An atom and a literal it may sensibly be compared with.
fn comparison() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        (-4i64..5).prop_map(|n| n.to_string()),
        (-8i64..9).prop_map(|n| format!("{:.1}", n as f64 / 2.0)),
    ];
    let text = prop::sample::select(vec!["''", "'a'", "'b'", "'ab'", "'x'", "'y'"]);
    let list = prop::sample::select(vec![
        "[]",
        "['a']",
        "['a', 'b']",
        "['b']",
        "[1, 2]",
        "[-1, 2.5]",
        "['x', 'y']",
    ]);
    let op = prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]);
    let eq = prop::sample::select(vec!["==", "!="]);
    let is_in = prop::sample::select(vec!["in", "not in"]);
    let numeric = prop::sample::select(vec![
        "ctx['a']",
        "ctx['f']",
        "ctx['o']",
        "ctx['m']",
        "count('e')",
        "count('g')",
    ]);
    prop_oneof![
        (numeric.clone(), op.clone(), number.clone()).prop_map(|(a, o, n)| format!("{a} {o} {n}")),
        (number.clone(), op.clone(), numeric.clone()).prop_map(|(n, o, a)| format!("{n} {o} {a}")),
        (
            number.clone(),
            op.clone(),
            numeric.clone(),
            op.clone(),
            number
        )
            .prop_map(|(n, o, a, p, m)| format!("{n} {o} {a} {p} {m}")),
        (
            prop::sample::select(vec!["ctx['s']", "payload.p"]),
            op,
            text.clone()
        )
            .prop_map(|(a, o, t)| format!("{a} {o} {t}")),
        (numeric.clone(), is_in.clone(), list.clone()).prop_map(|(a, o, l)| format!("{a} {o} {l}")),
        (
            prop::sample::select(vec!["ctx['s']", "payload.p"]),
            is_in.clone(),
            list.clone()
        )
            .prop_map(|(a, o, l)| format!("{a} {o} {l}")),
        (text, is_in).prop_map(|(t, o)| format!("{t} {o} ctx['t']")),
        (eq.clone(), list).prop_map(|(o, l)| format!("ctx['t'] {o} {l}")),
        (
            eq,
            prop::sample::select(vec!["true", "false", "null", "1", "0"])
        )
            .prop_map(|(o, v)| format!("payload.b {o} {v}")),
        // `x` has no schema: any value.
        (
            prop::sample::select(vec!["<", ">=", "==", "!=", "in", "not in"]),
            prop::sample::select(vec![
                "1", "2.5", "'a'", "'b'", "[]", "['a']", "null", "true"
            ])
        )
            .prop_map(|(o, v)| {
                if o.contains("in") && !v.starts_with('[') {
                    format!("ctx['x'] {o} [{v}, 'b']")
                } else {
                    format!("ctx['x'] {o} {v}")
                }
            }),
        prop::sample::select(vec![
            "'a' in ctx['x']",
            "'a' not in ctx['x']",
            "1 in ctx['x']"
        ])
        .prop_map(str::to_owned),
        prop::sample::select(vec![
            "ctx['t']",
            "payload.b",
            "ctx['o']",
            "payload.p",
            "ctx['a']",
            "(ctx['a'] > 1) == true",
            "ctx['a'] < ctx['f']",
        ])
        .prop_map(str::to_owned),
    ]
}

fn guard() -> impl Strategy<Value = String> {
    comparison().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|g| format!("not ({g})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("({a}) or ({b})")),
        ]
    })
}

/// Data that the property's models allow (the routed event is `e`, so its count
/// is at least 1; `m` may be left out).
fn data() -> impl Strategy<Value = (Value, Value, i64, i64)> {
    let tag = prop::sample::select(vec!["a", "b", "c", "~", "x"]);
    let context = (
        -6i64..7,
        prop::sample::select(vec!["x", "y"]),
        (-14i64..15).prop_map(|n| n as f64 / 4.0),
        prop::collection::vec(tag, 0..4),
        prop::option::of(-4i64..5),
        prop::option::of(-4i64..5),
        prop::sample::select(vec![
            json!(null),
            json!(0),
            json!(1),
            json!(2.5),
            json!(""),
            json!("a"),
            json!("ab"),
            json!("ba"),
            json!([]),
            json!(["a"]),
            json!([1, "b"]),
            json!({}),
            json!({"a": 1}),
            json!(true),
            json!(false),
        ]),
    )
        .prop_map(|(a, s, f, t, o, m, x)| {
            let mut ctx = json!({"a": a, "s": s, "f": f, "t": t, "o": o, "x": x});
            if let Some(m) = m {
                ctx["m"] = json!(m);
            }
            ctx
        });
    let payload = (
        prop::sample::select(vec!["", "a", "b", "ab", "ba", "x", "a\0", "c"]),
        any::<bool>(),
    )
        .prop_map(|(p, b)| json!({"p": p, "b": b}));
    (context, payload, 1i64..5, 0i64..5)
}

fn holds(guard: &Guard, ctx: &Value, payload: &Value, e: i64, g: i64) -> bool {
    let count = |event: &str| match event {
        "e" => e,
        "g" => g,
        _ => 0,
    };
    let input = GuardInput {
        ctx: ctx.as_object().expect("an object"),
        payload: payload.as_object(),
        count: &count,
        branches: None,
    };
    evaluate(guard, &input)
}

/// More comparisons, for the second property: boolean literals where numbers are
/// compared, strings near `''`, and a boolean operation compared with a number.
fn comparison_with_more_cuts() -> impl Strategy<Value = String> {
    let numeric = prop::sample::select(vec![
        "ctx['a']",
        "ctx['f']",
        "ctx['o']",
        "ctx['m']",
        "ctx['x']",
        "count('e')",
        "count('g')",
    ]);
    let op = prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]);
    let truth = prop::sample::select(vec!["true", "false"]);
    let is_in = prop::sample::select(vec!["in", "not in"]);
    let mixed = prop::sample::select(vec!["[true]", "[false, 2]", "[true, 0.5]", "[1.0, 'b']"]);
    let text = prop::sample::select(vec!["''", "'0'", "'A'", "'a'", "'b'"]);
    prop_oneof![
        (numeric.clone(), op.clone(), truth.clone()).prop_map(|(a, o, t)| format!("{a} {o} {t}")),
        (truth, op.clone(), numeric.clone()).prop_map(|(t, o, a)| format!("{t} {o} {a}")),
        (numeric.clone(), is_in, mixed).prop_map(|(a, o, l)| format!("{a} {o} {l}")),
        (op.clone(), text).prop_map(|(o, t)| format!("payload.p {o} {t}")),
        (numeric, op).prop_map(|(a, o)| format!("{a} {o} (payload.b == true)")),
        comparison(),
    ]
}

fn guard_with_more_cuts() -> impl Strategy<Value = String> {
    comparison_with_more_cuts().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|g| format!("not ({g})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("({a}) or ({b})")),
        ]
    })
}

/// [`data`] where `x` may also be a number near 0 and 1, and `p` a string between
/// `''` and `'a'`.
fn data_with_more_cuts() -> impl Strategy<Value = (Value, Value, i64, i64)> {
    let x = prop::sample::select(vec![
        json!(-1),
        json!(-0.5),
        json!(0.5),
        json!(1.0),
        json!(1.5),
        json!(2),
    ]);
    let p = prop::sample::select(vec!["0", "A", "\0", " "]);
    (data(), prop::option::of(x), prop::option::of(p)).prop_map(|(data, x, p)| {
        let (mut ctx, mut payload, e, g) = data;
        if let Some(x) = x {
            ctx["x"] = x;
        }
        if let Some(p) = p {
            payload["p"] = json!(p);
        }
        (ctx, payload, e, g)
    })
}

/// The property: if some sample makes both guards true, the check does not accept
/// them; and an example it gives makes both true.
fn never_accepted_when_both_hold(
    first: &str,
    second: &str,
    samples: &[(Value, Value, i64, i64)],
) -> Result<(), TestCaseError> {
    let first = parse_guard(first).expect("the generator writes valid guards");
    let second = parse_guard(second).expect("the generator writes valid guards");
    let (context, payload) = (property_context(), property_payload());
    let place = Where {
        event: "e",
        context: Some(&context),
        payload: Some(&payload),
        schemas: None,
    };
    let verdict = check(&first, &second, &place);
    for (ctx, payload, e, g) in samples {
        if holds(&first, ctx, payload, *e, *g) && holds(&second, ctx, payload, *e, *g) {
            prop_assert!(
                verdict != Verdict::Exclusive,
                "{:?} and {:?} both hold for {ctx} {payload} e={e} g={g}",
                first.text,
                second.text
            );
        }
    }
    if let Verdict::Overlap(example) = &verdict {
        // An example is real: both guards hold for it.
        let mut ctx = json!({});
        let mut payload = json!({});
        let (mut e, mut g) = (0, 0);
        for (atom, value) in example {
            match atom {
                Atom::Ctx(key) => ctx[key] = value.clone(),
                Atom::Payload(field) => payload[field] = value.clone(),
                Atom::Count(event) if event == "e" => e = value.as_i64().unwrap_or(0),
                Atom::Count(_) => g = value.as_i64().unwrap_or(0),
            }
        }
        prop_assert!(
            holds(&first, &ctx, &payload, e, g) && holds(&second, &ctx, &payload, e, g),
            "the example {example:?} does not make both true"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(800))]

    #[test]
    fn guards_both_true_for_some_data_are_never_accepted(
        first in guard(),
        second in guard(),
        samples in prop::collection::vec(data(), 1..8),
    ) {
        never_accepted_when_both_hold(&first, &second, &samples)?;
    }

    #[test]
    fn guards_both_true_for_some_data_are_never_accepted_with_more_cuts(
        first in guard_with_more_cuts(),
        second in guard_with_more_cuts(),
        samples in prop::collection::vec(data_with_more_cuts(), 1..8),
    ) {
        never_accepted_when_both_hold(&first, &second, &samples)?;
    }
}

// ── through the compiler ────────────────────────────────────────────────────

fn compile_problems(text: &str) -> Vec<String> {
    match crate::compiler::compile_text(text, "flow.yaml") {
        Err(crate::compiler::CompileError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

const ORDERS: &str = r##"
workflow: orders
context: Item
states: {draft: {}, review: {}}
events: {submitted: {}, reviewed: {payload: Verdict}}
transitions:
  - {from: START, to: draft}
  - {from: draft, to: review, on: submitted}
  - {from: review, to: END, on: reviewed, when: "ctx['amount'] > 100"}
  - {from: review, to: draft, on: reviewed, when: "GUARD"}
schemas:
  Item: {type: object, properties: {amount: {type: integer}, level: {$ref: "#/schemas/Level"}}, required: [amount, level]}
  Level: {enum: [gold, silver]}
  Verdict: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
"##;

#[test]
fn compile_lists_overlapping_guards_as_the_reference_does() {
    let found = compile_problems(&ORDERS.replace("GUARD", "ctx['amount'] > 50"));
    assert_eq!(
        found,
        ["'reviewed' from 'review': the guards \"ctx['amount'] > 100\" and \"ctx['amount'] > 50\" \
          can both be true, e.g. when ctx['amount'] = 101; make them exclusive, or make one the \
          fallback (otherwise: true)"]
    );
    let exclusive = ORDERS.replace(
        "- {from: review, to: END, on: reviewed, when: \"ctx['amount'] > 100\"}",
        "- {from: review, to: END, on: reviewed, when: \"ctx['level'] != 'gold'\"}",
    );
    let text = exclusive.replace("GUARD", "ctx['level'] != 'silver'");
    assert!(crate::compiler::compile_text(&text, "flow.yaml").is_ok());
}
