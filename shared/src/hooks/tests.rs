//! Tests of reading a hooks file and checking it against a graph and the
//! environment.

use super::*;

const FILE: &str = r#"
github:
  verify: github
  secret_env: GITHUB_WEBHOOK_SECRET
  token: "PR-{body.pull_request.number}"
  event: "{body.action}"
  events: {closed: done, labeled: null}
  payload: "{body.review}"
  start: {context: {repo: "{body.repository.full_name}", n: 1}}
billing:
  verify: standard
  secret_env: BILLING_WEBHOOK_SECRET
  secret_env_previous: BILLING_WEBHOOK_SECRET_OLD
  token: "{body.data.order}"
  event: "{body.type}"
"#;

#[test]
fn a_hooks_file_is_read_with_defaults_for_the_delivery_id() {
    let hooks = parse(FILE, "hooks.yaml").unwrap();
    assert_eq!(hooks.len(), 2);
    let github = &hooks[0];
    assert_eq!(github.verify, Verify::Github);
    assert_eq!(
        github.key,
        Template::parse("{header.X-GitHub-Delivery}").unwrap()
    );
    assert_eq!(github.mapped("closed"), Some("done"));
    assert_eq!(github.mapped("labeled"), None);
    assert_eq!(github.mapped("opened"), Some("opened"));
    assert!(github.start.is_some());
    assert_eq!(
        hooks[1].key,
        Template::parse("{header.webhook-id}").unwrap()
    );
}

#[test]
fn every_problem_of_a_hooks_file_is_listed_at_once() {
    let bad = r#"
"bad name":
  verify: gitlab
  token: "{cookie.x}"
  evnt: x
none:
  verify: none
  token: "T"
  event: "done"
  events: {a: 3}
"#;
    let problems = parse(bad, "h.yaml").unwrap_err();
    let joined = problems.join("\n");
    for expected in [
        "a hook's name has",
        "verify: \"gitlab\" is not github",
        "token: {cookie.x}",
        "unknown field \"evnt\"",
        "event: missing",
        "hook \"none\": key: missing",
        "events.a: must be an event's name",
    ] {
        assert!(joined.contains(expected), "{expected} in:\n{joined}");
    }
    let yaml = parse("a: [", "h.yaml").unwrap_err();
    assert!(yaml[0].starts_with("h.yaml, line"), "{yaml:?}");
}

#[test]
fn unset_variables_and_verify_none_are_refused_naming_the_variable() {
    let hooks = parse(FILE, "hooks.yaml").unwrap();
    let problems = keys(&hooks, |_| None, false).unwrap_err();
    assert_eq!(
        problems,
        [
            "hook \"github\": the variable GITHUB_WEBHOOK_SECRET is not set",
            "hook \"billing\": the variable BILLING_WEBHOOK_SECRET is not set",
        ]
    );
    let env = |name: &str| match name {
        "GITHUB_WEBHOOK_SECRET" => Some("s3cret".to_string()),
        "BILLING_WEBHOOK_SECRET" => Some("whsec_c2VjcmV0".to_string()),
        _ => None,
    };
    let found = keys(&hooks, env, false).unwrap();
    assert_eq!(found, [vec![b"s3cret".to_vec()], vec![b"secret".to_vec()]]);
    let none = parse("n: {verify: none, key: k, token: t, event: e}", "h").unwrap();
    assert!(keys(&none, env, false).unwrap_err()[0].contains("--insecure"));
    assert!(keys(&none, env, true).is_ok());
}

#[test]
fn a_hook_written_twice_is_refused_at_its_line() {
    let twice = "pr:\n  event: opened\n  secret_env: S\npr:\n  event: closed\n  secret_env: S\n";
    let problems = parse(twice, "hooks.yaml").unwrap_err();
    assert!(
        format!("{problems:?}").contains("hooks.yaml, line 1: 'pr' is written twice"),
        "{problems:?}"
    );
}
