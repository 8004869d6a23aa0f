//! Tests of the compiler: the starter and the example compile to the reference's
//! checksums, and each kind of mistake is reported with its exact line.

use serde_json::json;

use super::*;
use crate::graph::checksum;

fn asset(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join("assets").join(path)).expect("asset file")
}

fn problems(text: &str) -> Vec<String> {
    match compile_text(text, "flow.yaml") {
        Err(CompileError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

/// A flow without guards, to which each test adds one mistake.
const BASE: &str = r#"
workflow: shop
context: Cart
states:
  filling: {timeout: 1h}
  paying: {retries: 2}
events:
  checkout: {}
  paid: {payload: Receipt}
transitions:
  - {from: START, to: filling}
  - {from: filling, to: paying, on: checkout}
  - {from: paying, to: END, on: paid}
schemas:
  Cart: {type: object, properties: {items: {type: array}}, required: [items]}
  Receipt: {type: object, properties: {amount: {type: number}}}
"#;

#[test]
fn a_flow_without_guards_compiles_in_the_reference_layout() {
    let compiled = compile_text(BASE, "flow.yaml").unwrap();
    assert_eq!(compiled.workflow, "shop");
    let expected = json!({
        "stateous": 1, "workflow": "shop", "context": "Cart",
        "states": {
            "filling": {"timeout": "1h", "emits": ["checkout"]},
            "paying": {"retries": 2, "emits": ["paid"]}
        },
        "events": {"checkout": {}, "paid": {"payload": "Receipt"}},
        "transitions": [
            {"from": "__start__", "to": "filling"},
            {"from": "filling", "to": "paying", "on": "checkout"},
            {"from": "paying", "to": "__end__", "on": "paid"}
        ],
        "schemas": {
            "Cart": {"properties": {"items": {"type": "array"}}, "required": ["items"], "type": "object"},
            "Receipt": {"properties": {"amount": {"type": "number"}}, "type": "object"}
        }
    });
    assert_eq!(
        crate::graph::pretty(&compiled.document),
        crate::graph::pretty(&expected)
    );
    // The graph it writes loads.
    crate::graph::Graph::load(&crate::graph::pretty(&compiled.document)).unwrap();
}

#[test]
fn sdlc_compiles_to_the_reference_checksum() {
    let compiled = compile_text(&asset("sdlc/flow.yaml"), "flow.yaml").unwrap();
    assert_eq!(
        checksum(&compiled.document),
        "sha256:ce35bf077678e6aa975cf404a1417ecdb9f5283b037a34d00d5418cbc9123881"
    );
    assert_eq!(
        crate::graph::pretty(&compiled.document),
        asset("sdlc/build/sdlc.json")
    );
}

#[test]
fn orders_starter_compiles_to_the_reference_checksum() {
    assert_eq!(asset("orders/flow.yaml"), starter_flow("orders"));
    let compiled = compile_text(&starter_flow("orders"), "flow.yaml").unwrap();
    assert_eq!(
        checksum(&compiled.document),
        "sha256:77510d7465e1e6d8061c1018f6f152e6136aa15304b08e92be3efa62174d7851"
    );
    assert_eq!(
        crate::graph::pretty(&compiled.document),
        asset("orders/build/orders.json")
    );
}

#[test]
fn yaml_mistakes_name_their_line() {
    let err = compile_text("workflow: a\nstates:\n  x: {timeout: 1h\n", "f.yaml").unwrap_err();
    assert!(err.to_string().starts_with("f.yaml, line "), "{err}");
    let err = compile_text("workflow: a\nstates:\n  x: {colour: red}\n", "f.yaml").unwrap_err();
    assert!(err.to_string().starts_with("f.yaml, line 3: "), "{err}");
    assert!(err.to_string().contains("unknown field `colour`"), "{err}");
    let err = compile_text("workflow: a\nstates:\n  x: {}\n  x: {}\n", "f.yaml").unwrap_err();
    assert!(err.to_string().contains("'x' is written twice"), "{err}");
    let err = compile_text("states: {}\n", "f.yaml").unwrap_err();
    assert!(
        err.to_string().contains("missing field `workflow`"),
        "{err}"
    );
}

#[test]
fn all_problems_are_listed_under_one_header() {
    let text = BASE
        .replace("timeout: 1h", "timeout: 90x")
        .replace("retries: 2", "retries: -1");
    let err = compile_text(&text, "flow.yaml").unwrap_err().to_string();
    assert_eq!(
        err,
        "workflow 'shop' is not valid:\n  - state 'filling': '90x' is not a duration; write e.g. \
         '30s', '10m', '2h', '1d'\n  - state 'paying': retries is a whole number, 0 or more, not -1"
    );
}

/// A bad duration is a mistake of one state's settings: the whole-graph checks
/// still run, so an unreachable state and overlapping guards are listed with it
/// (before, only the duration was).
#[test]
fn a_bad_duration_an_unreachable_state_and_overlapping_guards_are_all_listed() {
    let text = BASE
        .replace("timeout: 1h", "timeout: 1 hour")
        .replace(
            "  paying: {retries: 2}",
            "  paying: {retries: 2}\n  lost: {}",
        )
        .replace(
            "  - {from: paying, to: END, on: paid}\n",
            "  - {from: paying, to: END, on: paid, when: \"payload.amount > 1\"}\n  \
             - {from: paying, to: filling, on: paid, when: \"payload.amount < 5\"}\n",
        );
    assert_eq!(
        problems(&text),
        vec![
            "state 'filling': '1 hour' is not a duration; write e.g. '30s', '10m', '2h', '1d'",
            "state 'lost' cannot be reached from START",
            "'paid' from 'paying': the guards 'payload.amount > 1' and 'payload.amount < 5' \
             can both be true, e.g. when payload.amount = 3.0; make them exclusive, or make \
             one the fallback (otherwise: true)",
        ]
    );
}

/// A transition dropped for a wrong end is the one mistake said: the states only
/// it reached are not also called unreachable.
#[test]
fn a_dropped_transition_does_not_make_its_target_unreachable_too() {
    let text = BASE.replace("to: paying, on: checkout", "to: payng, on: checkout");
    assert_eq!(
        problems(&text),
        vec![
            "transition 2 (filling -> payng): 'payng' is not a state of workflow 'shop' \
             (write START and END in capitals)"
        ]
    );
}

/// A transition left out for its own mistake hides none of the file's other
/// problems: a misspelt target, an undeclared event and a guard that does not parse
/// are each listed with an unreachable state and a schema that is not JSON Schema.
#[test]
fn a_transition_left_out_hides_no_other_problem() {
    let lost = BASE
        .replace(
            "  paying: {retries: 2}",
            "  paying: {retries: 2}\n  lost: {}",
        )
        .replace("Receipt: {type: object", "Receipt: {type: 12");
    let unreachable = "state 'lost' cannot be reached from START";
    let schema =
        "the model 'Receipt' is not valid JSON Schema: 12 is not of types \"array\", \"string\"";
    let cases = [
        (
            lost.replace("to: paying, on: checkout", "to: payng, on: checkout"),
            "transition 2 (filling -> payng): 'payng' is not a state of workflow 'shop' \
             (write START and END in capitals)",
        ),
        (
            lost.replace("to: paying, on: checkout", "to: paying, on: chekout"),
            "transition 2 (filling -> paying): event 'chekout' is not declared in workflow 'shop'",
        ),
        (
            lost.replace(
                "to: paying, on: checkout",
                "to: paying, on: checkout, when: \"ctx[\"",
            ),
            "",
        ),
    ];
    for (text, first) in cases {
        let found = problems(&text);
        assert_eq!(found.len(), 3, "three problems, no follow-on: {found:?}");
        if !first.is_empty() {
            assert_eq!(found[0], first);
        } else {
            assert!(
                found[0].starts_with("transition 2 (filling -> paying): "),
                "{found:?}"
            );
        }
        assert_eq!(found[1], unreachable);
        assert_eq!(found[2], schema);
    }
}

/// A target too far from every state to guess may have meant any of them: no
/// state is then called unreachable, and every other check still runs.
#[test]
fn a_target_that_cannot_be_guessed_calls_no_state_unreachable() {
    let text = BASE
        .replace("to: paying, on: checkout", "to: elsewhere, on: checkout")
        .replace("timeout: 1h", "timeout: 1 hour");
    assert_eq!(
        problems(&text),
        vec![
            "state 'filling': '1 hour' is not a duration; write e.g. '30s', '10m', '2h', '1d'",
            "transition 2 (filling -> elsewhere): 'elsewhere' is not a state of workflow 'shop' \
             (write START and END in capitals)",
        ]
    );
}

/// A payload or context that names no schema is the one mistake said: the guards
/// that read its fields are not also told that it lacks them.
#[test]
fn an_unknown_schema_makes_no_follow_on_problem() {
    let text = BASE
        .replace("{payload: Receipt}", "{payload: Bill}")
        .replace("context: Cart", "context: Basket")
        .replace(
            "{from: paying, to: END, on: paid}",
            "{from: paying, to: END, on: paid, when: \"payload.amount > 1 and ctx['items'] != null\"}\n  \
             - {from: paying, to: filling, on: paid, otherwise: true}",
        );
    assert_eq!(
        problems(&text),
        vec![
            "the context 'Basket' is not a schema under 'schemas'",
            "event 'paid': the payload 'Bill' is not a schema under 'schemas'",
        ]
    );
}

/// Each mistake, and the exact line that reports it.
#[test]
fn each_mistake_has_its_line() {
    let cases: Vec<(String, &str)> = vec![
        (BASE.replace("workflow: shop", "workflow: Shop"),
         "the workflow name 'Shop' is not a name: a letter a-z first, then a-z, 0-9, '_' or '-', 64 characters at most"),
        (BASE.replace("context: Cart", "context: Basket"),
         "the context 'Basket' is not a schema under 'schemas'"),
        (BASE.replace("  paying: {retries: 2}", "  paying: {retries: 2}\n  9lives: {}"),
         "the state name '9lives' is not a name: a letter a-z first, then a-z, 0-9, '_' or '-', 64 characters at most"),
        (BASE.replace("  paying: {retries: 2}", "  paying: {retries: 2}\n  END: {}"),
         "state 'END' is Stateous's own: transitions name START and END without declaring them"),
        (BASE.replace("timeout: 1h", "timeout: 9999d"),
         "state 'filling': '9999d' is too long; a duration is at most 3650d"),
        (BASE.replace("{retries: 2}", "{join: any}"),
         "state 'paying': join and inputs belong to a parallel state; add parallel: [...]"),
        (BASE.replace("{retries: 2}", "{parallel: [ghost]}"),
         "state 'paying': it runs 'ghost', which is not a workflow under 'workflows'"),
        (BASE.replace("{retries: 2}", "{parallel: [shop]}"),
         "state 'paying': it runs 'shop': a workflow cannot run itself"),
        (BASE.replace("  checkout: {}", "  checkout: {}\n  timeout: {}"),
         "event 'timeout' is Stateous's own: transitions name it without declaring it"),
        (BASE.replace("{payload: Receipt}", "{payload: Bill}"),
         "event 'paid': the payload 'Bill' is not a schema under 'schemas'"),
        (BASE.replace("Cart: {type: object,", "Cart: {type: string,"),
         "the context 'Cart' must be a schema of an object (type: object)"),
        (BASE.replace("Receipt: {type: object,", "Receipt: {type: [integer, 'null'],"),
         "event 'paid': the payload 'Receipt' must be a schema of an object (type: object)"),
        (BASE.replace("{from: START, to: filling}", "{from: START, to: filling, on: checkout}"),
         "transition 1 (START -> filling): a transition from START has no 'on': the engine takes it as the token starts; choose among several with 'when' and 'otherwise: true'"),
        (BASE.replace("{from: START, to: filling}", "{from: START, to: END}"),
         "transition 1 (START -> END): a token cannot go from START straight to END; it needs a state to be in"),
        (BASE.replace("{from: filling, to: paying, on: checkout}", "{from: filling, to: START, on: checkout}"),
         "transition 2 (filling -> START): nothing may lead into START; a token is there only as it starts"),
        (BASE.replace("{from: paying, to: END, on: paid}", "{from: END, to: paying, on: paid}"),
         "transition 3 (END -> paying): nothing may leave END; entering it completes the token"),
        (BASE.replace("to: paying, on: checkout", "to: payng, on: checkout"),
         "transition 2 (filling -> payng): 'payng' is not a state of workflow 'shop' (write START and END in capitals)"),
        (BASE.replace("to: paying, on: checkout", "to: paying"),
         "transition 2 (filling -> paying): a transition from 'filling' needs 'on': the event that takes it"),
        (BASE.replace("to: paying, on: checkout", "to: paying, on: chekout"),
         "transition 2 (filling -> paying): event 'chekout' is not declared in workflow 'shop'"),
        (BASE.replace("to: paying, on: checkout", "to: paying, on: __started__"),
         "transition 2 (filling -> paying): '__started__' is Stateous's own; only START's transitions are taken on it"),
        (BASE.replace("to: paying, on: checkout", "to: paying, on: joined"),
         "transition 2 (filling -> paying): only a parallel state is left on 'joined', and 'filling' has no parallel: [...]"),
        (with_transitions("  - {from: paying, to: filling, on: paid}\n"),
         "'paid' from 'paying' is ambiguous: two transitions have no guard; give one a 'when', and mark the fallback otherwise: true"),
    ];
    for (text, line) in cases {
        let found = problems(&text);
        assert!(
            found.iter().any(|p| p == line),
            "expected {line:?} in {found:?}"
        );
    }
}

/// A flow appended with transitions after `transitions:`.
fn with_transitions(extra: &str) -> String {
    BASE.replace("schemas:", &format!("{extra}schemas:"))
}

#[test]
fn whole_graph_mistakes_have_their_line() {
    let cases: Vec<(String, &str)> = vec![
        (with_transitions("").replace("  - {from: START, to: filling}\n", "  - {from: paying, to: filling, on: checkout}\n"),
         "workflow 'shop' has no transition from START; add one to the state each token begins in, e.g. {from: START, to: <state>}"),
        (with_transitions("").replace("{from: paying, to: END, on: paid}", "{from: paying, to: filling, on: paid}"),
         "workflow 'shop' has no transition into END, so none of its tokens can complete; add one, e.g. {from: <state>, to: END, on: <event>}"),
        (BASE.replace("  paying: {retries: 2}", "  paying: {retries: 2}\n  lost: {}"),
         "state 'lost' cannot be reached from START"),
        (BASE.replace("context: Cart\n", "context: Cart\nworkflows:\n  spare: {states: {a: {}}, transitions: [{from: START, to: a}, {from: a, to: END, on: error}]}\n"),
         "the workflow 'spare' under 'workflows' is run by no parallel state; run it or remove it"),
        (BASE.replace("Receipt: {type: object", "Receipt: {type: 12"),
         "the model 'Receipt' is not valid JSON Schema: 12 is not of types \"array\", \"string\""),
        (BASE.replace("amount: {type: number}", "amount: {type: numbr}"),
         "the model 'Receipt' is not valid JSON Schema: properties.amount.type is 'numbr', which is not a type (array, boolean, integer, null, number, object or string)"),
    ];
    for (text, line) in cases {
        let found = problems(&text);
        assert!(
            found.iter().any(|p| p == line),
            "expected {line:?} in {found:?}"
        );
    }
}

const PARALLEL: &str = r#"
workflow: release
context: Build
states:
  prepare: {}
  reviews: {parallel: [review], join: all, inputs: [repo]}
events:
  ready: {}
transitions:
  - {from: START, to: prepare}
  - {from: prepare, to: reviews, on: ready}
  - {from: reviews, to: END, on: joined}
schemas:
  Build: {type: object, properties: {repo: {type: string}}, required: [repo]}
  Review: {type: object, properties: {repo: {type: string}, depth: {type: integer}}, required: [repo, depth]}
workflows:
  review:
    context: Review
    states: {look: {timeout: 1h}}
    events: {ok: {}}
    transitions:
      - {from: START, to: look}
      - {from: look, to: END, on: ok}
"#;

#[test]
fn parallel_states_and_child_workflows() {
    let found = problems(PARALLEL);
    assert_eq!(
        found,
        ["state 'reviews' does not hand on 'depth', which 'review' requires; add it to inputs"]
    );
    let fixed = PARALLEL.replace("required: [repo, depth]", "required: [repo]");
    let compiled = compile_text(&fixed, "flow.yaml").unwrap();
    let doc = &compiled.document;
    assert_eq!(
        doc["states"]["reviews"],
        json!({"parallel": ["review"], "join": "all", "inputs": ["repo"]})
    );
    assert_eq!(doc["workflows"]["review"]["context"], "Review");
    assert_eq!(
        doc["workflows"]["review"]["states"]["look"],
        json!({"timeout": "1h", "emits": ["ok"]})
    );
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "stateous",
            "workflow",
            "context",
            "states",
            "events",
            "transitions",
            "workflows",
            "schemas"
        ]
    );
    crate::graph::Graph::load(&crate::graph::pretty(doc)).unwrap();

    let no_join = fixed.replace("on: joined", "on: ready");
    assert!(problems(&no_join)
        .contains(&"parallel state 'reviews' needs a transition on 'joined'".to_owned()));
    let on_error = fixed.replace(
        "  - {from: reviews, to: END, on: joined}",
        "  - {from: reviews, to: END, on: joined}\n  - {from: reviews, to: prepare, on: error}",
    );
    assert!(problems(&on_error).contains(&"parallel state 'reviews' has no task, so 'error' can never fire; check 'branches' on 'joined'".to_owned()));
    let bad_input = fixed.replace("inputs: [repo]", "inputs: [repo, nope]");
    assert!(problems(&bad_input)
        .contains(&"state 'reviews' hands on 'nope', which Build does not have".to_owned()));
    let child_problem = fixed.replace(
        "      - {from: look, to: END, on: ok}\n",
        "      - {from: look, to: look, on: ok}\n",
    );
    assert!(problems(&child_problem).contains(&"in child workflow 'review': workflow 'review' has no transition into END, so none of its tokens can complete; add one, e.g. {from: <state>, to: END, on: <event>}".to_owned()));
    let cycle = fixed.replace(
        "states: {look: {timeout: 1h}}",
        "states: {look: {timeout: 1h}, again: {parallel: [review]}}",
    );
    assert!(
        problems(&cycle)
            .iter()
            .any(|p| p.contains("a workflow cannot run itself")),
        "{:?}",
        problems(&cycle)
    );
    let long = fixed.replace("review", &"r".repeat(60));
    assert!(problems(&long)
        .iter()
        .any(|p| p.starts_with("the child token ids can be ")));
}

#[test]
fn python_names_are_checked_for_the_reference_supervisor() {
    let found = problems(&BASE.replace(
        "  checkout: {}",
        "  checkout: {}\n  check-out: {}\n  check_out: {}",
    ));
    assert!(
        found.contains(
            &"the events 'check-out' and 'check_out' are both 'check_out' in Python; rename one"
                .to_owned()
        ),
        "{found:?}"
    );
    let found = problems(&BASE.replace("Receipt", "Literal"));
    assert!(
        found.contains(
            &"a schema is named 'Literal', which contract.py uses itself; rename the schema"
                .to_owned()
        ),
        "{found:?}"
    );
    let found = problems(&BASE.replace(
        "Receipt: {type: object",
        "Receipt: {items: {$ref: \"#/schemas/Receipt\"}, type: object",
    ));
    assert!(
        found.contains(&"the schema 'Receipt' refers to itself; that is not supported".to_owned()),
        "{found:?}"
    );
}

#[test]
fn guard_mistakes_have_their_line() {
    let guarded = |when: &str| {
        with_transitions(&format!(
            "  - {{from: paying, to: filling, on: paid, when: \"{when}\"}}\n  - {{from: paying, to: filling, on: paid, otherwise: true}}\n"
        ))
        .replace("  - {from: paying, to: END, on: paid}\n", "  - {from: filling, to: END, on: checkout, when: \"ctx['items'] == []\"}\n  - {from: filling, to: paying, on: checkout, otherwise: true}\n")
        .replace("  - {from: filling, to: paying, on: checkout}\n", "")
    };
    let cases: Vec<(String, &str)> = vec![
        (guarded("payload.amont > 3"),
         "guard 'payload.amont > 3': the payload of 'paid' has no field 'amont'"),
        (guarded("ctx['total'] > 3"),
         "transition 'paying' --paid--> 'filling' reads ctx['total'], which Cart does not have"),
        (guarded("count('refund') > 1"),
         "guard \"count('refund') > 1\" counts 'refund', which is not an event"),
        (guarded("branches.all(status == 'completed')"),
         "guard \"branches.all(status == 'completed')\": branches.all() and branches.any() belong to transitions on 'joined'"),
        (guarded("payload.amount >"),
         "transition 4 (paying -> filling): guard 'payload.amount >': not a valid expression: it ends where a value is expected"),
        (BASE.replace("{from: START, to: filling}", "{from: START, to: filling, when: \"payload.amount > 1\"}\n  - {from: START, to: paying, otherwise: true}"),
         "guard 'payload.amount > 1': START's guards read the context only; a starting token has no event, and so no payload"),
        (BASE.replace("{from: START, to: filling}", "{from: START, to: filling, when: \"count('paid') > 1\"}\n  - {from: START, to: paying, otherwise: true}"),
         "guard \"count('paid') > 1\": START's guards cannot count events; nothing has happened yet"),
        (BASE.replace("{from: paying, to: END, on: paid}", "{from: paying, to: END, on: paid, when: \"payload.amount > 1\", otherwise: true}"),
         "transition 3 (paying -> END): a fallback (otherwise: true) has no guard; drop 'when'"),
        (with_transitions("  - {from: paying, to: filling, on: paid, when: \"payload.amount > 1\"}\n  - {from: paying, to: paying, on: paid, when: \"payload.amount < 5\"}\n"),
         "'paid' from 'paying': the guards 'payload.amount > 1' and 'payload.amount < 5' can both be true, e.g. when payload.amount = 3.0; make them exclusive, or make one the fallback (otherwise: true)"),
        (with_transitions("  - {from: paying, to: filling, on: paid, when: \"payload.amount > 1\"}\n"),
         "'paid' from 'paying' has guarded transitions and an unguarded one; mark the unguarded one otherwise: true"),
    ];
    for (text, line) in cases {
        let found = problems(&text);
        assert!(
            found.iter().any(|p| p == line),
            "expected {line:?} in {found:?}"
        );
    }
    // The same guards, right, compile.
    compile_text(
        &guarded("payload.amount > 3 and ctx['items'] != []"),
        "flow.yaml",
    )
    .unwrap();
}

#[test]
fn a_child_workflow_starts_without_fail() {
    let fixed = PARALLEL.replace("required: [repo, depth]", "required: [repo]");
    let guarded = fixed.replace(
        "      - {from: START, to: look}\n",
        "      - {from: START, to: look, when: \"ctx['repo'] == 'x'\"}\n",
    );
    let found = problems(&guarded);
    assert!(found.contains(&"in child workflow 'review': START has no fallback: the parent's state starts a child workflow, and no one hears when no guard holds; leave one transition from START without a guard, or mark one otherwise: true".to_owned()), "{found:?}");
    let branches = fixed.replace(
        "{from: reviews, to: END, on: joined}",
        "{from: reviews, to: END, on: joined, when: \"branches.all(status == 'completed')\"}\n  - {from: reviews, to: prepare, on: joined, otherwise: true}",
    );
    compile_text(&branches, "flow.yaml").unwrap();
}

#[test]
fn parallel_settings_and_names_have_their_line() {
    let fixed = PARALLEL.replace("required: [repo, depth]", "required: [repo]");
    let cases: Vec<(String, &str)> = vec![
        (fixed.replace("join: all, inputs: [repo]", "join: all, inputs: [repo], retries: 1"),
         "state 'reviews': a parallel state has no task, and so no retries"),
        (fixed.replace("parallel: [review]", "parallel: [review, review]"),
         "state 'reviews': it runs the workflow 'review' twice; each child needs a workflow of its own"),
        (fixed.replace("join: all", "join: most"),
         "state 'reviews': join is 'all' or 'any', not 'most'"),
        (fixed.replace("inputs: [repo]", "inputs: [repo, \"\"]"),
         "state 'reviews': inputs is a list of context keys, e.g. inputs: [repo]"),
        (fixed.replace("workflows:\n", "workflows:\n  release: {states: {}}\n"),
         "in child workflow 'release': two different workflows are named 'release'; give the child its own name"),
        (fixed.replace("  ready: {}", "  ready: {}\n  review: {}"),
         "the child workflow 'review' and 'review' of workflow 'release' are both 'review' in Python; rename one"),
        (fixed.replace("repo: {type: string}, depth", "repo: {type: string}, class: {type: string}, depth"),
         "the field 'class' of Review cannot be a Python name in contract.py"),
        (fixed.replace("Review", "Build-Review"),
         "the schema name 'Build-Review' cannot be a Python name in contract.py; rename it"),
        (fixed.replace("Review", "BuildContext"),
         "a schema is named 'BuildContext', which contract.py uses for the context of Build; rename the schema"),
        (fixed.replace("prepare", "if"),
         "the state 'if' cannot be a Python name in contract.py; rename it"),
    ];
    for (text, line) in cases {
        let found = problems(&text);
        assert!(
            found.iter().any(|p| p == line),
            "expected {line:?} in {found:?}"
        );
    }
}

#[test]
fn a_flow_yaml_is_told_from_a_graph_file_that_failed_to_load() {
    assert_eq!(
        flow_workflow(&asset("orders/flow.yaml")).as_deref(),
        Some("orders")
    );
    let graph = asset("orders/build/orders.json");
    assert_eq!(flow_workflow(&graph), None);
    // A trailing comma breaks JSON but not YAML: still a graph file.
    assert_eq!(flow_workflow(r#"{"stateous": 1, "workflow": "x",}"#), None);
    for other in ["", "[1]", "workflow: [a]", "url: http://x", "{"] {
        assert_eq!(flow_workflow(other), None, "{other}");
    }
}
