//! Black-box: schedules (`docs/schedules.md`). With the dev clock started at a chosen
//! moment (`serve --dev-clock-at`), occurrences fire with the documented ids, once
//! each through a SIGKILL at their instant, an outage and a standby's takeover; the
//! overlap and catch-up policies and the daylight-saving rule hold; bad settings
//! are refused at add time and change nothing.

use std::time::Duration;

use crate::harness;

use harness::{eventually, run, test_graph, Backend, Daemon, Setup, KEEPALIVES};
use serde_json::{json, Value};

/// A daemon serving `tickets` (its context needs `repo`) on a dev clock that starts
/// at `at`, with `args` after the defaults.
fn at_moment(at: &str, args: &[&str]) -> Daemon {
    Setup::new(test_graph("tickets"))
        .args(&["--dev-clock-at", at])
        .args(args)
        .start()
}

/// Add a schedule over HTTP; its view.
fn add(daemon: &Daemon, body: Value) -> Value {
    daemon.post("/schedules", &body).expect(201)
}

/// Move the dev clock by `by`, ticking at each due moment inside it.
fn advance(daemon: &Daemon, by: &str) {
    daemon
        .post("/clock/advance", &json!({"by": by}))
        .expect(200);
}

/// The ids of the tokens whose id starts with `prefix`, in order.
fn tokens(daemon: &Daemon, prefix: &str) -> Vec<String> {
    daemon
        .rows(&format!(
            "SELECT token FROM tokens WHERE token LIKE '{prefix}%' ORDER BY token"
        ))
        .into_iter()
        .map(|row| row[0].clone().unwrap_or_default())
        .collect()
}

/// The journal entries of the schedule `name`, oldest first.
fn journal(daemon: &Daemon, name: &str) -> Vec<Value> {
    let page = daemon
        .get(&format!("/journal?subject=schedule&name={name}&limit=1000"))
        .expect(200);
    page["entries"].as_array().cloned().unwrap_or_default()
}

/// `(occurrence, token)` of each `started` entry of the schedule `name`.
fn started(daemon: &Daemon, name: &str) -> Vec<(String, String)> {
    journal(daemon, name)
        .iter()
        .filter(|entry| entry["kind"] == "started")
        .map(|entry| {
            let data = &entry["data"];
            (
                data["occurrence"].as_str().unwrap_or_default().to_string(),
                data["token"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The entries of `kind` of the schedule `name`.
fn of_kind(daemon: &Daemon, name: &str, kind: &str) -> Vec<Value> {
    journal(daemon, name)
        .into_iter()
        .filter(|entry| entry["kind"] == kind)
        .collect()
}

/// `stateous schedule ARGS --url URL`, which must succeed; its stdout.
fn schedule_command(daemon: &Daemon, args: &[&str]) -> String {
    let mut all = vec!["schedule"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    let finished = run(daemon.dir.path(), &all);
    assert_eq!(finished.code(), 0, "{finished}");
    finished.stdout
}

fn every_10m_over_an_hour_of_the_dev_clock_starts_6_tokens_with_the_documented_ids() {
    let daemon = at_moment("2027-01-04T08:03:00Z", &[]);
    let added = schedule_command(
        &daemon,
        &[
            "add",
            "sweep",
            "every 10m",
            "--token",
            "sweep-{date}-{time}",
            "--context",
            r#"{"repo": "{schedule}", "at": "{at}"}"#,
            "--overlap",
            "allow",
        ],
    );
    assert!(
        added.contains(
            "  next  2027-01-04 08:10 +00:00  (2027-01-04 08:10Z)  sweep-2027-01-04-0810"
        ),
        "{added}"
    );
    advance(&daemon, "1h");
    let ids: Vec<String> = ["0810", "0820", "0830", "0840", "0850", "0900"]
        .iter()
        .map(|time| format!("sweep-2027-01-04-{time}"))
        .collect();
    assert_eq!(tokens(&daemon, "sweep-"), ids);
    let first = daemon.get("/tokens/sweep-2027-01-04-0810").expect(200);
    assert_eq!(
        first["context"],
        json!({"repo": "sweep", "at": "2027-01-04T08:10:00Z"})
    );
    assert_eq!(started(&daemon, "sweep").len(), 6);
    // The list shows the next three, the last token and its status.
    let listed = schedule_command(&daemon, &["list"]);
    for line in [
        "sweep  every 10m  UTC  active  overlap allow, catch-up latest",
        "  next  2027-01-04 09:10 +00:00  (2027-01-04 09:10Z)  sweep-2027-01-04-0910",
        "        2027-01-04 09:30 +00:00  (2027-01-04 09:30Z)  sweep-2027-01-04-0930",
        "  last  sweep-2027-01-04-0900 (active)",
    ] {
        assert!(listed.contains(line), "{line:?} in\n{listed}");
    }
}

fn a_sigkill_in_the_instant_of_an_occurrence_gives_it_exactly_one_token() {
    let mut daemon = at_moment("2027-01-04T08:00:58Z", &[]);
    add(
        &daemon,
        json!({"name": "minutely", "spec": "every 1m", "token": "k-{utc_date}-{utc_time}",
               "context": {"repo": "r"}, "overlap": "allow"}),
    );
    // Each round the clock stands 2 s before an occurrence; the kill lands before,
    // during or after its write, and the restart comes 58 s after it (a catch-up).
    for (round, kill_after) in [1500u64, 2000, 2300].into_iter().enumerate() {
        std::thread::sleep(Duration::from_millis(kill_after));
        daemon.signal(libc::SIGKILL);
        daemon.wait(Duration::from_secs(10));
        let restart = format!("2027-01-04T08:0{}:58Z", round + 1);
        daemon.set_arg("--dev-clock-at", &restart);
        daemon.start_again();
    }
    eventually(
        Duration::from_secs(20),
        "the three occurrences' tokens",
        || daemon.report(),
        || tokens(&daemon, "k-").len() == 3,
    );
    assert_eq!(
        tokens(&daemon, "k-"),
        [
            "k-2027-01-04-0801",
            "k-2027-01-04-0802",
            "k-2027-01-04-0803"
        ]
    );
    let mut once: Vec<String> = started(&daemon, "minutely")
        .into_iter()
        .map(|(_, token)| token)
        .collect();
    once.sort();
    assert_eq!(
        once,
        [
            "k-2027-01-04-0801",
            "k-2027-01-04-0802",
            "k-2027-01-04-0803"
        ],
        "one start each"
    );
    assert!(of_kind(&daemon, "minutely", "skipped").is_empty());
}

fn an_outage_of_a_day_starts_one_with_latest_the_cap_with_all_and_none_with_none() {
    let mut daemon = at_moment("2027-01-04T00:00:30Z", &[]);
    for (name, catch_up) in [("l", "latest"), ("a", "all"), ("n", "none")] {
        add(
            &daemon,
            json!({"name": name, "spec": "0 * * * *", "token": format!("{name}-{{utc_date}}-{{utc_time}}"),
                   "context": {"repo": "r"}, "overlap": "allow", "catch_up": catch_up, "cap": 3}),
        );
    }
    daemon.signal(libc::SIGKILL);
    daemon.wait(Duration::from_secs(10));
    daemon.set_arg("--dev-clock-at", "2027-01-05T00:00:30Z");
    daemon.start_again();
    eventually(
        Duration::from_secs(20),
        "the catch-up",
        || daemon.report(),
        || tokens(&daemon, "a-").len() == 3 && tokens(&daemon, "l-").len() == 1,
    );
    assert_eq!(tokens(&daemon, "l-"), ["l-2027-01-05-0000"]);
    assert_eq!(
        tokens(&daemon, "a-"),
        [
            "a-2027-01-04-2200",
            "a-2027-01-04-2300",
            "a-2027-01-05-0000"
        ]
    );
    assert!(tokens(&daemon, "n-").is_empty());
    let missed = |name: &str| -> i64 {
        of_kind(&daemon, name, "skipped")
            .iter()
            .map(|entry| entry["data"]["count"].as_i64().unwrap_or(0))
            .sum()
    };
    assert_eq!((missed("l"), missed("a"), missed("n")), (23, 21, 24));
    assert_eq!(of_kind(&daemon, "l", "started")[0]["data"]["late"], true);
    let metrics = String::from_utf8_lossy(&daemon.get("/metrics").body).into_owned();
    for line in [
        "stateous_schedule_occurrences_total{outcome=\"fired\"} 4",
        "stateous_schedule_occurrences_total{outcome=\"skipped\"} 68",
        "stateous_schedule_late_total 4",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
}

fn skip_records_a_skip_while_a_token_is_live_and_buffer_one_starts_the_last_when_it_ends() {
    let daemon = at_moment("2027-01-04T08:00:30Z", &[]);
    for (name, overlap) in [("skipper", "skip"), ("buffered", "buffer_one")] {
        add(
            &daemon,
            json!({"name": name, "spec": "every 10m", "context": {"repo": "r"},
                   "token": format!("{}-{{utc_date}}-{{utc_time}}", &name[..1]), "overlap": overlap}),
        );
    }
    advance(&daemon, "10m");
    assert_eq!(tokens(&daemon, "s-"), ["s-2027-01-04-0810"]);
    assert_eq!(tokens(&daemon, "b-"), ["b-2027-01-04-0810"]);
    advance(&daemon, "20m");
    assert_eq!(
        tokens(&daemon, "s-"),
        ["s-2027-01-04-0810"],
        "skipped while s-2027-01-04-0810 is live"
    );
    let skips = of_kind(&daemon, "skipper", "skipped");
    assert_eq!(skips.len(), 2, "{skips:?}");
    assert_eq!(
        skips[0]["data"]["reason"],
        "the token s-2027-01-04-0810 of an earlier occurrence is still live (overlap skip)"
    );
    // buffer_one: 08:20 waited, then 08:30 took its place.
    assert_eq!(of_kind(&daemon, "buffered", "buffered").len(), 2);
    let replaced = of_kind(&daemon, "buffered", "skipped");
    assert_eq!(replaced[0]["data"]["occurrence"], "2027-01-04T08:20:00Z");
    let listed = schedule_command(&daemon, &["show", "skipper"]);
    for line in [
        "  last  s-2027-01-04-0810 (active)",
        "  skipped 2027-01-04 08:30Z: the token s-2027-01-04-0810 of an earlier occurrence is still live \
         (overlap skip)",
    ] {
        assert!(listed.contains(line), "{line:?} in\n{listed}");
    }
    // The live token ends: the waiting occurrence starts at the next tick.
    daemon
        .post("/tokens/b-2027-01-04-0810/events/stuck", &json!({}))
        .expect(200);
    eventually(
        Duration::from_secs(10),
        "the waiting occurrence started",
        || daemon.report(),
        || tokens(&daemon, "b-") == ["b-2027-01-04-0810", "b-2027-01-04-0830"],
    );
    assert_eq!(
        daemon.get("/schedules/buffered").expect(200)["buffered"],
        Value::Null
    );
}

fn the_daylight_saving_days_fire_as_documented() {
    let daemon = at_moment("2027-03-13T12:00:00Z", &[]);
    let (berlin, new_york) = ("Europe/Berlin", "America/New_York");
    for (name, spec, zone) in [("b", "30 2 * * *", berlin), ("n", "30 1,2 * * *", new_york)] {
        add(
            &daemon,
            json!({"name": name, "spec": spec, "zone": zone, "overlap": "allow",
                   "token": format!("{name}-{{date}}-{{time}}"), "context": {"repo": "r"}}),
        );
    }
    let pause = |name: &str, pause: bool| {
        let what = if pause { "pause" } else { "resume" };
        daemon
            .post_empty(&format!("/schedules/{name}/{what}"))
            .expect(200);
    };
    // New York, 2027-03-14: 02:30 does not exist and fires at 03:00 EDT.
    advance(&daemon, "2d");
    let occurred = |name: &str, day: &str| -> Vec<(String, String)> {
        started(&daemon, name)
            .into_iter()
            .filter(|(_, token)| token.contains(day))
            .collect()
    };
    assert_eq!(
        occurred("n", "2027-03-14"),
        [
            ("2027-03-14T06:30:00Z".into(), "n-2027-03-14-0130".into()),
            ("2027-03-14T07:00:00Z".into(), "n-2027-03-14-0300".into()),
        ]
    );
    // Berlin, 2027-03-28: 02:30 does not exist and fires at 03:00 CEST.
    pause("n", true);
    advance(&daemon, "13d");
    assert_eq!(
        occurred("b", "2027-03-28"),
        [("2027-03-28T01:00:00Z".into(), "b-2027-03-28-0300".into())]
    );
    // Berlin, 2027-10-31: 02:30 happens twice and fires once, at the first.
    pause("b", true);
    advance(&daemon, "200d");
    advance(&daemon, "16d");
    pause("b", false);
    advance(&daemon, "2d");
    assert_eq!(
        occurred("b", "2027-10-31"),
        [("2027-10-31T00:30:00Z".into(), "b-2027-10-31-0230".into())]
    );
    assert_eq!(
        occurred("b", "2027-11-01"),
        [("2027-11-01T01:30:00Z".into(), "b-2027-11-01-0230".into())]
    );
    // New York, 2027-11-07: 01:30 happens twice and fires once, at the first.
    pause("b", true);
    advance(&daemon, "5d");
    pause("n", false);
    advance(&daemon, "2d");
    assert_eq!(
        occurred("n", "2027-11-07"),
        [
            ("2027-11-07T05:30:00Z".into(), "n-2027-11-07-0130".into()),
            ("2027-11-07T07:30:00Z".into(), "n-2027-11-07-0230".into()),
        ]
    );
}

fn bad_settings_are_refused_at_add_time_each_with_its_code_and_nothing_changes() {
    let daemon = at_moment("2027-01-04T08:00:00Z", &[]);
    let base = json!({"name": "triage", "spec": "0 9 * * 1-5", "zone": "Europe/Berlin",
                      "token": "triage-{date}", "context": {"repo": "r"}});
    let with = |key: &str, value: Value| {
        let mut body = base.clone();
        body[key] = value;
        body
    };
    let cases = [
        (
            with("spec", json!("0 25 * * *")),
            "invalid_schedule",
            "not a cron expression",
        ),
        (
            with("zone", json!("Europe/Berln")),
            "invalid_schedule",
            "not a time zone",
        ),
        (
            with("spec", json!("every 500ms")),
            "invalid_schedule",
            "at least 'every 1s'",
        ),
        (
            with("token", json!("triage-{day}")),
            "invalid_schedule",
            "{day}",
        ),
        (
            with("token", json!("triage {date}")),
            "invalid_token_id",
            "no token id",
        ),
        (
            with("token", json!("triage")),
            "invalid_schedule",
            "the same id",
        ),
        (
            with("context", json!({"repo": 7})),
            "invalid_context",
            "repo",
        ),
        (with("context", json!({})), "invalid_context", "repo"),
        (
            with("overlap", json!("queue")),
            "invalid_schedule",
            "skip, buffer_one, allow",
        ),
        (
            with("catchup", json!("all")),
            "invalid_body",
            "no field \"catchup\"",
        ),
    ];
    for (body, code, words) in cases {
        let sentence = daemon.post("/schedules", &body).refused(422, code);
        assert!(sentence.contains(words), "{body}: {sentence}");
        assert!(!sentence.contains('\n'), "{sentence}");
    }
    assert_eq!(
        daemon.get("/schedules").expect(200),
        json!({"schedules": []})
    );
    assert!(journal(&daemon, "triage").is_empty());
    add(&daemon, base.clone());
    daemon
        .post("/schedules", &base)
        .refused(409, "schedule_exists");
    let unknown = daemon.post_empty("/schedules/nope/pause");
    unknown.refused(404, "schedule_not_found");
    // The command line says the same, as an error: line, exit 1.
    let refused = run(
        daemon.dir.path(),
        &["schedule", "add", "x", "every 500ms", "--url", &daemon.url],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused.stderr.starts_with("error: the control plane at ")
            && refused.stderr.contains("(422 invalid_schedule)"),
        "{refused}"
    );
    // An empty name is refused before anything is sent (it named another route:
    // `remove ''` said it removed a schedule and removed none).
    for args in [
        ["schedule", "remove", ""],
        ["limit", "remove", ""],
        ["token", "why", ""],
    ] {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--url", &daemon.url]);
        let refused = run(daemon.dir.path(), &all);
        assert_eq!(refused.code(), 1, "{args:?}: {refused}");
        assert_eq!(
            refused.stderr.trim(),
            "error: the name given is empty: a name has 1 character or more",
            "{args:?}"
        );
    }
    assert_eq!(
        daemon.get("/schedules").expect(200)["schedules"][0]["name"],
        base["name"]
    );
}

fn a_standby_takeover_neither_skips_nor_doubles_an_occurrence() {
    let mut active = Setup::new(test_graph("tickets"))
        .args(&KEEPALIVES)
        .args(&["--dev-clock-at", "2027-01-04T08:00:30Z"])
        .start();
    add(
        &active,
        json!({"name": "minutely", "spec": "every 1m", "token": "m-{utc_date}-{utc_time}",
               "context": {"repo": "r"}, "overlap": "allow", "catch_up": "all"}),
    );
    advance(&active, "3m");
    assert_eq!(
        tokens(&active, "m-"),
        [
            "m-2027-01-04-0801",
            "m-2027-01-04-0802",
            "m-2027-01-04-0803"
        ]
    );
    let standby = Setup::new(test_graph("tickets"))
        .database_of(&active)
        .args(&KEEPALIVES)
        .args(&["--dev-clock-at", "2027-01-04T08:05:30Z"])
        .start_standby();
    active.signal(libc::SIGKILL);
    active.wait(Duration::from_secs(10));
    standby.wait_for_line("serving on ", Duration::from_secs(15));
    eventually(
        Duration::from_secs(15),
        "the missed occurrences caught up",
        || standby.report(),
        || tokens(&standby, "m-").len() == 5,
    );
    advance(&standby, "2m");
    let expected: Vec<String> = (1..=7).map(|m| format!("m-2027-01-04-080{m}")).collect();
    assert_eq!(tokens(&standby, "m-"), expected);
    let mut once: Vec<String> = started(&standby, "minutely")
        .into_iter()
        .map(|(_, token)| token)
        .collect();
    once.sort();
    assert_eq!(once, expected, "one start each");
}

both!(
    every_10m_over_an_hour_of_the_dev_clock_starts_6_tokens_with_the_documented_ids,
    a_sigkill_in_the_instant_of_an_occurrence_gives_it_exactly_one_token,
    an_outage_of_a_day_starts_one_with_latest_the_cap_with_all_and_none_with_none,
    skip_records_a_skip_while_a_token_is_live_and_buffer_one_starts_the_last_when_it_ends,
    the_daylight_saving_days_fire_as_documented,
    bad_settings_are_refused_at_add_time_each_with_its_code_and_nothing_changes,
);

#[test]
fn a_standby_takeover_on_postgres_neither_skips_nor_doubles_an_occurrence() {
    harness::on(
        Backend::Postgres,
        a_standby_takeover_neither_skips_nor_doubles_an_occurrence,
    );
}
