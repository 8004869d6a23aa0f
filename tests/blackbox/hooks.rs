//! Black-box: webhooks in (`serve --hooks FILE`, `docs/reference/http.md`, "Hooks").
//! Deliveries are signed here with the `hmac` crate, as GitHub and a Standard
//! Webhooks sender sign them, and sent to the real binary: the delivery id is the
//! event's idempotency key, through a restart and a pause; a bad signature answers
//! 401 and changes nothing.

use crate::harness;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use harness::{run, test_graph, Daemon, Reply, Setup};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

const GITHUB_SECRET: &str = "It's a Secret to Everybody";
/// `whsec_` and the base64 of `current-key`, and of `previous-key`.
const BILLING_SECRET: &str = "whsec_Y3VycmVudC1rZXk=";
const BILLING_PREVIOUS: &str = "whsec_cHJldmlvdXMta2V5";

const HOOKS: &str = r#"
github:
  verify: github
  secret_env: TEST_GITHUB_SECRET
  token: "T-{body.pull_request.number}"
  event: "{body.action}"
  events: {closed: done, labeled: null}
  start: {context: {repo: "{body.repository.full_name}"}}
billing:
  verify: standard
  secret_env: TEST_BILLING_SECRET
  secret_env_previous: TEST_BILLING_SECRET_OLD
  token: "{body.data.order}"
  event: "{body.type}"
  payload: "{body.data.result}"
"#;

/// The hooks file in a folder of its own, which the test keeps.
fn hooks_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hooks.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn serve_hooks(path: &Path) -> Daemon {
    Setup::new(test_graph("tickets"))
        .args(&["--hooks", &path.display().to_string()])
        .env("TEST_GITHUB_SECRET", GITHUB_SECRET)
        .env("TEST_BILLING_SECRET", BILLING_SECRET)
        .env("TEST_BILLING_SECRET_OLD", BILLING_PREVIOUS)
        .start()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// A GitHub delivery of `body` with the delivery id `id`.
fn github(daemon: &Daemon, id: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let signature = format!(
        "sha256={}",
        hex::encode(hmac(GITHUB_SECRET.as_bytes(), &[body.as_bytes()]))
    );
    let headers = [
        ("content-type", "application/json"),
        ("X-GitHub-Event", "pull_request"),
        ("X-GitHub-Delivery", id),
        ("X-Hub-Signature-256", signature.as_str()),
    ];
    daemon.request("POST", "/hooks/github", &headers, body.as_bytes())
}

/// The `webhook-signature` of a Standard Webhooks delivery, with the key that
/// `secret` (whsec_ and base64) holds.
fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let key = BASE64
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let signed = hmac(
        &key,
        &[
            id.as_bytes(),
            b".",
            timestamp.to_string().as_bytes(),
            b".",
            body.as_bytes(),
        ],
    );
    format!("v1,{}", BASE64.encode(signed))
}

/// A Standard Webhooks delivery with these signatures.
fn billing_signed(
    daemon: &Daemon,
    id: &str,
    timestamp: i64,
    body: &str,
    signatures: &str,
) -> Reply {
    let timestamp = timestamp.to_string();
    let headers = [
        ("content-type", "application/json"),
        ("webhook-id", id),
        ("webhook-timestamp", timestamp.as_str()),
        ("webhook-signature", signatures),
    ];
    daemon.request("POST", "/hooks/billing", &headers, body.as_bytes())
}

/// A Standard Webhooks delivery signed with the current secret, now.
fn billing(daemon: &Daemon, id: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let at = now();
    let signature = standard_signature(BILLING_SECRET, id, at, &body);
    billing_signed(daemon, id, at, &body, &signature)
}

/// Start an order of the `billing` hook's deliveries.
fn start_order(daemon: &Daemon, token: &str) {
    let body = json!({"token": token, "context": {"repo": "acme/shop"}});
    daemon.post("/tokens", &body).expect(201);
}

fn history(daemon: &Daemon, token: &str) -> Vec<Value> {
    let answer = daemon.get(&format!("/tokens/{token}/history")).expect(200);
    answer.as_array().cloned().unwrap_or_default()
}

/// The entries of `kind` in the token's history.
fn entries(daemon: &Daemon, token: &str, kind: &str) -> Vec<Value> {
    history(daemon, token)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

fn closed(number: u64) -> Value {
    json!({"action": "closed", "pull_request": {"number": number},
           "repository": {"full_name": "acme/api"}})
}

fn a_github_delivery_starts_its_token_fires_once_and_a_redelivery_is_a_duplicate() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    let first = github(&daemon, "gh-delivery-1", &closed(7)).expect(200);
    assert_eq!(
        (&first["token"], &first["state"]),
        (&json!("T-7"), &json!("testing"))
    );
    let again = github(&daemon, "gh-delivery-1", &closed(7)).expect(200);
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["token"]["state"], "testing");
    assert_eq!(entries(&daemon, "T-7", "started").len(), 1);
    let accepted = entries(&daemon, "T-7", "event_accepted");
    let done: Vec<&Value> = accepted
        .iter()
        .filter(|e| e["data"]["event"] == "done")
        .collect();
    assert_eq!(done.len(), 1, "{accepted:?}");
    assert_eq!(
        done[0]["data"]["hook"],
        json!({"name": "github", "delivery": "gh-delivery-1"})
    );
    let context = daemon.get("/tokens/T-7").expect(200)["context"].clone();
    assert_eq!(context, json!({"repo": "acme/api"}));
    let shown = run(
        daemon.dir.path(),
        &["token", "show", "T-7", "--url", &daemon.url],
    );
    assert_eq!(shown.code(), 0, "{shown}");
    assert!(
        shown
            .stdout
            .contains("done in coding (via hook github, delivery gh-delivery-1)"),
        "{shown}"
    );
}

fn a_redelivery_after_a_restart_is_a_duplicate() {
    let (_dir, path) = hooks_file(HOOKS);
    let mut daemon = serve_hooks(&path);
    github(&daemon, "gh-restart-1", &closed(8)).expect(200);
    daemon.crash_and_restart();
    let again = github(&daemon, "gh-restart-1", &closed(8)).expect(200);
    assert_eq!(again["duplicate"], true, "{again}");
    let done = entries(&daemon, "T-8", "event_accepted")
        .into_iter()
        .filter(|e| e["data"]["event"] == "done")
        .count();
    assert_eq!(done, 1);
}

fn a_delivery_held_while_paused_applies_once_on_resume() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    start_order(&daemon, "ORD-1");
    daemon.post_empty("/tokens/ORD-1/pause").expect(200);
    let body = json!({"type": "done", "data": {"order": "ORD-1", "result": null}});
    let held = billing(&daemon, "msg-paused-1", &body).expect(200);
    assert_eq!(held["status"], "paused");
    assert_eq!(
        billing(&daemon, "msg-paused-1", &body).expect(200)["duplicate"],
        true
    );
    let resumed = daemon.post_empty("/tokens/ORD-1/resume").expect(200);
    assert_eq!(resumed["state"], "testing");
    assert_eq!(
        billing(&daemon, "msg-paused-1", &body).expect(200)["duplicate"],
        true
    );
    let deferred = entries(&daemon, "ORD-1", "event_deferred");
    assert_eq!(deferred.len(), 1);
    let mark = json!({"name": "billing", "delivery": "msg-paused-1"});
    assert_eq!(deferred[0]["data"]["hook"], mark);
    let accepted = entries(&daemon, "ORD-1", "event_accepted");
    let done: Vec<&Value> = accepted
        .iter()
        .filter(|e| e["data"]["event"] == "done")
        .collect();
    assert_eq!(done.len(), 1, "{accepted:?}");
    assert_eq!(done[0]["data"]["hook"], mark);
}

/// `start:` is for a missing token: a delivery for a token that exists is fired
/// even when the start's context template finds nothing in its body, and one for
/// a missing token is refused 422 and starts nothing.
fn a_delivery_for_a_token_that_exists_needs_no_start_context() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    start_order(&daemon, "T-9");
    // No `repository` in the body: the start's `{body.repository.full_name}`
    // finds nothing, and the token exists.
    let bare = json!({"action": "closed", "pull_request": {"number": 9}});
    let fired = github(&daemon, "gh-exists-1", &bare).expect(200);
    assert_eq!(
        (&fired["token"], &fired["state"]),
        (&json!("T-9"), &json!("testing"))
    );
    let again = github(&daemon, "gh-exists-1", &bare).expect(200);
    assert_eq!(again["duplicate"], true, "{again}");
    let context = daemon.get("/tokens/T-9").expect(200)["context"].clone();
    assert_eq!(context, json!({"repo": "acme/shop"}));
    let missing = json!({"action": "closed", "pull_request": {"number": 10}});
    let sentence = github(&daemon, "gh-missing-1", &missing).refused(422, "invalid_body");
    assert!(
        sentence.contains("start.context") && sentence.contains("{body.repository.full_name}"),
        "{sentence}"
    );
    daemon.get("/tokens/T-10").refused(404, "token_not_found");
}

both!(
    a_delivery_for_a_token_that_exists_needs_no_start_context,
    a_github_delivery_starts_its_token_fires_once_and_a_redelivery_is_a_duplicate,
    a_redelivery_after_a_restart_is_a_duplicate,
    a_delivery_held_while_paused_applies_once_on_resume,
);

#[test]
fn a_standard_delivery_is_accepted_with_either_secret_while_it_rotates() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    start_order(&daemon, "ORD-1");
    start_order(&daemon, "ORD-2");
    let body = json!({"type": "done", "data": {"order": "ORD-1", "result": null}}).to_string();
    let at = now();
    // A sender that signs with the new and the old secret, the new one unknown
    // here: the second signature matches.
    let unknown = standard_signature("whsec_bmV4dC1rZXk=", "msg-1", at, &body);
    let current = standard_signature(BILLING_SECRET, "msg-1", at, &body);
    let both = format!("{unknown} {current}");
    let first = billing_signed(&daemon, "msg-1", at, &body, &both).expect(200);
    assert_eq!(first["state"], "testing");
    let body = json!({"type": "done", "data": {"order": "ORD-2", "result": null}}).to_string();
    let previous = standard_signature(BILLING_PREVIOUS, "msg-2", at, &body);
    let second = billing_signed(&daemon, "msg-2", at, &body, &previous).expect(200);
    assert_eq!(second["state"], "testing");
}

#[test]
fn a_bad_signature_is_401_changes_nothing_and_is_counted_by_hook_and_reason() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    start_order(&daemon, "ORD-1");
    let body = json!({"type": "done", "data": {"order": "ORD-1", "result": null},
                      "marker": "BODY-MARKER-NEVER-LOGGED"})
    .to_string();
    let stale = now() - 301;
    let signature = standard_signature(BILLING_SECRET, "msg-1", stale, &body);
    let sentence =
        billing_signed(&daemon, "msg-1", stale, &body, &signature).refused(401, "bad_signature");
    assert!(sentence.contains("5 minutes"), "{sentence}");
    let forged = standard_signature("whsec_Zm9yZ2Vk", "msg-1", now(), &body);
    billing_signed(&daemon, "msg-1", now(), &body, &forged).refused(401, "bad_signature");
    let unsigned = [("content-type", "application/json")];
    daemon
        .request(
            "POST",
            "/hooks/github",
            &unsigned,
            closed(9).to_string().as_bytes(),
        )
        .refused(401, "bad_signature");
    // The body changed after signing: GitHub's signature covers the raw bytes.
    let signature = format!(
        "sha256={}",
        hex::encode(hmac(
            GITHUB_SECRET.as_bytes(),
            &[closed(9).to_string().as_bytes()]
        ))
    );
    let tampered = closed(10).to_string();
    let headers = [
        ("X-GitHub-Delivery", "gh-9"),
        ("X-Hub-Signature-256", signature.as_str()),
    ];
    daemon
        .request("POST", "/hooks/github", &headers, tampered.as_bytes())
        .refused(401, "bad_signature");
    assert_eq!(daemon.get("/tokens/ORD-1").expect(200)["state"], "coding");
    assert_eq!(daemon.get("/tokens/T-9").status, 404);
    assert_eq!(daemon.get("/tokens/T-10").status, 404);
    let scraped = daemon.get("/metrics");
    assert_eq!(scraped.status, 200, "{scraped}");
    let metrics = String::from_utf8(scraped.body).unwrap();
    for line in [
        r#"stateous_hook_bad_signatures_total{hook="billing",reason="stale_timestamp"} 1"#,
        r#"stateous_hook_bad_signatures_total{hook="billing",reason="mismatch"} 1"#,
        r#"stateous_hook_bad_signatures_total{hook="github",reason="missing_header"} 1"#,
        r#"stateous_hook_bad_signatures_total{hook="github",reason="mismatch"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }
    let log = daemon.stderr();
    let refused = log
        .lines()
        .filter(|l| l.contains("a delivery was refused"))
        .count();
    assert_eq!(refused, 4, "{log}");
    assert!(!log.contains("BODY-MARKER"), "{log}");
    let listed = daemon.get("/hooks").expect(200);
    assert_eq!(listed[1]["name"], "billing");
    assert_eq!(listed[1]["counts"]["bad_signature"], 2);
    assert!(!listed.to_string().contains("whsec_"), "{listed}");
}

#[test]
fn templates_ignored_events_and_refusals_answer_as_documented() {
    let (_dir, path) = hooks_file(HOOKS);
    let daemon = serve_hooks(&path);
    github(&daemon, "nowhere", &closed(1)).expect(200);
    daemon
        .request("POST", "/hooks/gitlab", &[], b"{}")
        .refused(404, "not_found");
    // No pull request in the body: the token's template finds nothing.
    let sentence =
        github(&daemon, "gh-2", &json!({"action": "closed"})).refused(422, "invalid_body");
    assert!(
        sentence.contains("{body.pull_request.number}"),
        "{sentence}"
    );
    let ignored = github(&daemon, "gh-3", &json!({"action": "labeled"})).expect(202);
    assert_eq!(ignored["ignored"], true);
    assert!(
        ignored["reason"].as_str().unwrap().contains("labeled"),
        "{ignored}"
    );
    // The workflow has no event `reopened`: the fire's 409 passes through.
    let refused = github(
        &daemon,
        "gh-4",
        &json!({"action": "reopened", "pull_request": {"number": 1}, "repository": {"full_name": "acme/api"}}),
    );
    refused.refused(409, "event_not_allowed");
    // A token the hook started keeps its start when the event is refused (409):
    // the start and the `event_rejected` entry commit together.
    let started = json!({"action": "reopened", "pull_request": {"number": 2},
                         "repository": {"full_name": "acme/api"}});
    github(&daemon, "gh-5", &started).refused(409, "event_not_allowed");
    assert_eq!(daemon.get("/tokens/T-2").expect(200)["state"], "coding");
    assert_eq!(entries(&daemon, "T-2", "event_rejected").len(), 1);
    let listed = daemon.get("/hooks").expect(200);
    let counts = &listed[0]["counts"];
    assert_eq!(
        (&counts["accepted"], &counts["ignored"], &counts["refused"]),
        (&json!(1), &json!(1), &json!(3)),
        "{listed}"
    );
}

#[test]
fn serve_refuses_a_hooks_file_whose_secret_is_unset_or_unchecked() {
    // `serve` with the hooks file `text`, in a folder of its own; it must not start.
    let refused = |text: &str| {
        let (dir, path) = hooks_file(text);
        let socket = dir.path().join("s.sock").display().to_string();
        let graph = test_graph("tickets").display().to_string();
        let hooks = path.display().to_string();
        let args = [
            "serve",
            &graph,
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
            "--hooks",
            &hooks,
        ];
        let finished = run(dir.path(), &args);
        assert_eq!(finished.code(), 1, "{finished}");
        finished
    };
    let unset = refused(HOOKS);
    for variable in ["TEST_GITHUB_SECRET", "TEST_BILLING_SECRET"] {
        let sentence = format!("the variable {variable} is not set");
        assert!(unset.stderr.contains(&sentence), "{unset}");
    }
    let unchecked = refused("open: {verify: none, key: \"{body.id}\", token: t, event: done}\n");
    assert!(unchecked.stderr.contains("--insecure"), "{unchecked}");
}

#[test]
fn hooks_check_lists_every_problem_and_sign_prints_headers_the_daemon_accepts() {
    let (dir, path) = hooks_file(
        "bad:\n  verify: github\n  secret_env: UNSET_SECRET_OF_THE_TEST\n  token: \"{cookie.x}\"\n  \
         event: \"{body.action}\"\n  events: {closed: merged}\n",
    );
    let graph = test_graph("tickets").display().to_string();
    let checked = run(
        dir.path(),
        &[
            "hooks",
            "check",
            &path.display().to_string(),
            "--graph",
            &graph,
        ],
    );
    assert_eq!(checked.code(), 1, "{checked}");
    for problem in [
        "{cookie.x}",
        "\"merged\"",
        "UNSET_SECRET_OF_THE_TEST is not set",
    ] {
        assert!(checked.stderr.contains(problem), "{problem}: {checked}");
    }
    let (_hooks_dir, hooks) = hooks_file(HOOKS);
    let daemon = serve_hooks(&hooks);
    let body = dir.path().join("body.json");
    std::fs::write(&body, closed(5).to_string()).unwrap();
    let signed = std::process::Command::new(harness::binary())
        .args(["hooks", "sign", "github", &body.display().to_string()])
        .args([
            "--hooks",
            &hooks.display().to_string(),
            "--id",
            "gh-signed-1",
        ])
        .env("TEST_GITHUB_SECRET", GITHUB_SECRET)
        .env("TEST_BILLING_SECRET", BILLING_SECRET)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&signed.stdout).into_owned();
    assert!(
        signed.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let headers: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|line| line.split_once(": "))
        .collect();
    let sent = std::fs::read(&body).unwrap();
    let answer = daemon
        .request("POST", "/hooks/github", &headers, &sent)
        .expect(200);
    assert_eq!(answer["token"], "T-5");
    let checked = std::process::Command::new(harness::binary())
        .args([
            "hooks",
            "check",
            &hooks.display().to_string(),
            "--graph",
            &graph,
        ])
        .env("TEST_GITHUB_SECRET", GITHUB_SECRET)
        .env("TEST_BILLING_SECRET", BILLING_SECRET)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}
