//! Black-box: what `stateous notify` says of input it refuses, and that such
//! input changes nothing (`docs/notifications.md`, "What a subscription is";
//! `docs/reference/cli.md`, "notify"). A name no subscription can have (one
//! with a `/`) is said to be no subscription's, in one line, before a request
//! whose path would reach no route; `--states` and `--kinds` keep each item
//! once, in the order first given; a `--no-move-for` under the 1 s floor is
//! said to be under it, and a negative one gets our sentence, not a parser's
//! hint.

use crate::harness;

use harness::{asset_graph, run, Daemon, Finished, Setup};
use serde_json::{json, Value};

/// A daemon serving `orders`, with the subscription `ops` (to a port nothing
/// listens on: no test here sends a notification).
fn with_ops() -> Daemon {
    let daemon = Setup::new(asset_graph("orders")).start();
    daemon
        .post(
            "/notify",
            &json!({"name": "ops", "url": "http://127.0.0.1:9/x", "states": ["review"]}),
        )
        .expect(201);
    daemon
}

/// `stateous notify --url URL ARGS`.
fn notify(daemon: &Daemon, args: &[&str]) -> Finished {
    let mut all = vec!["notify", "--url", &daemon.url];
    all.extend_from_slice(args);
    run(daemon.dir.path(), &all)
}

/// The subscriptions as `GET /notify` lists them, with what changes by itself
/// (the moments, the counts) left out.
fn subscriptions(daemon: &Daemon) -> Value {
    let mut listed = daemon.get("/notify").expect(200);
    if let Some(all) = listed["subscriptions"].as_array_mut() {
        for one in all {
            if let Some(one) = one.as_object_mut() {
                one.remove("counts");
                one.remove("unreachable");
            }
        }
    }
    listed
}

/// `done` failed with exit code 1 and one line on stderr, `error: ` and a
/// sentence that contains `part`; nothing on stdout.
fn refused_in_one_line(done: &Finished, part: &str) {
    assert_eq!(done.code(), 1, "{done}");
    assert!(done.stdout.is_empty(), "{done}");
    let lines: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{done}");
    assert!(lines[0].starts_with("error: "), "{done}");
    assert!(lines[0].contains(part), "{done}");
}

fn a_name_no_subscription_can_have_is_said_so_and_changes_nothing() {
    let daemon = with_ops();
    let before = subscriptions(&daemon);
    let rule = "a subscription's name is a letter or digit, then up to 63 letters";
    // `ops/pause` went as `/notify/ops%2Fpause`, decoded to `/notify/ops/pause`:
    // "this API has no path", or a 405 for `show` and `remove`.
    for name in ["a/b", "ops/pause"] {
        for command in [
            "show",
            "pause",
            "resume",
            "remove",
            "test",
            "rotate",
            "redeliver",
        ] {
            let done = notify(&daemon, &[command, name]);
            refused_in_one_line(&done, &format!("no subscription is named {name}: {rule}"));
        }
    }
    // `add` refuses such a name, so none is ever stored.
    let done = notify(&daemon, &["add", "a/b", "http://127.0.0.1:9/x"]);
    refused_in_one_line(&done, "\"a/b\" is not a subscription's name");
    // A name outside the rule that reaches the control plane in one segment
    // gets the same sentence there.
    let sentence = daemon
        .get("/notify/a%20b")
        .refused(404, "subscription_not_found");
    assert_eq!(
        sentence,
        format!("no subscription is named a b: {rule}, digits, '.', '_' or '-'")
    );
    // A name that could be one, and is not, is refused as before.
    let done = notify(&daemon, &["show", "nope"]);
    refused_in_one_line(&done, "no subscription is named nope");
    assert_eq!(subscriptions(&daemon), before);
    assert_eq!(before["subscriptions"][0]["status"], "active", "{before}");
}

fn each_state_and_kind_is_kept_once_in_the_order_first_given() {
    let daemon = with_ops();
    let done = notify(
        &daemon,
        &[
            "add",
            "twice",
            "http://127.0.0.1:9/x",
            "--states",
            "review,draft,review",
            "--kinds",
            "entered,completed,entered",
        ],
    );
    assert_eq!(done.code(), 0, "{done}");
    let shown = &daemon.get("/notify/twice").expect(200)["subscription"];
    assert_eq!(shown["states"], json!(["review", "draft"]), "{shown}");
    assert_eq!(shown["kinds"], json!(["entered", "completed"]), "{shown}");
    let done = notify(&daemon, &["show", "twice"]);
    assert_eq!(done.code(), 0, "{done}");
    assert!(
        done.stdout.contains("\n  states: review, draft\n"),
        "{done}"
    );
}

fn a_no_move_for_under_the_floor_or_negative_is_refused_and_changes_nothing() {
    let daemon = with_ops();
    let before = subscriptions(&daemon);
    let url = "http://127.0.0.1:9/x";
    let cases = [
        (
            "999ms",
            "no_move_for \"999ms\" is under 1 second; the shortest is 1 second",
        ),
        (
            "-1s",
            "no_move_for \"-1s\" is negative; the shortest is 1 second",
        ),
        (
            "-500ms",
            "no_move_for \"-500ms\" is negative; the shortest is 1 second",
        ),
    ];
    for (given, sentence) in cases {
        for extra in [&[][..], &["--states", "review"][..]] {
            let mut args = vec!["add", "late", url, "--no-move-for", given];
            args.extend_from_slice(extra);
            let done = notify(&daemon, &args);
            refused_in_one_line(&done, sentence);
            assert!(!done.stderr.contains("-- -1"), "{done}");
        }
    }
    // `=` was the way round clap's hint; it reaches the same sentence.
    let done = notify(&daemon, &["add", "late", url, "--no-move-for=-1s"]);
    refused_in_one_line(&done, "is negative; the shortest is 1 second");
    assert_eq!(subscriptions(&daemon), before);
    // At the floor it is taken.
    let done = notify(&daemon, &["add", "late", url, "--no-move-for", "1s"]);
    assert_eq!(done.code(), 0, "{done}");
}

both!(
    a_name_no_subscription_can_have_is_said_so_and_changes_nothing,
    each_state_and_kind_is_kept_once_in_the_order_first_given,
    a_no_move_for_under_the_floor_or_negative_is_refused_and_changes_nothing,
);
