//! Limits on claims (`docs/limits.md`) as a state machine: proptest draws random
//! sequences of starts, claims, reports (events, `waiting`, failures), lease ends,
//! cancels, limit changes and restarts of the control plane, run against a real
//! SQLite file and the real Postgres server. After every request (each one
//! commit) the database is read from outside: every pool's and key's claimed
//! attempts are at most its `max` (or, after a limit was set below the running
//! count, at most what ran then, and never more since), and the slots counted are
//! exactly the live attempts the pool covers (no leak, no slot without an attempt).

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{Backend, Db};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};
use stateous_daemon::control::Control;
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::claim_limits::LimitInput;
use stateous_daemon::validated::{ClaimInput, ReportInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::wire::Grant;

/// One request of the machine.
#[derive(Debug, Clone)]
enum Op {
    /// Start a token of repo `0..3`.
    Start(u8),
    /// A claim of `coding` by supervisor `0..2`.
    Claim(u8),
    /// Report the `n`-th held grant: 0 `done`, 1 `waiting`, 2 failed.
    Report(usize, u8),
    /// Every lease ends (the clock moves past them, then ticks).
    LeasesEnd,
    /// Cancel the `n`-th token started.
    Cancel(usize),
    /// Set the limit `pool`: `max`, per repo or not.
    Set(u8, i64, bool),
    /// Remove the limit `pool`.
    Remove(u8),
    /// Stop the control plane and open it again on the same database.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3).prop_map(Op::Start),
        5 => (0u8..2).prop_map(Op::Claim),
        3 => (0usize..6, 0u8..3).prop_map(|(n, how)| Op::Report(n, how)),
        1 => Just(Op::LeasesEnd),
        1 => (0usize..12).prop_map(Op::Cancel),
        2 => (0u8..2, 1i64..4, any::<bool>()).prop_map(|(p, max, per)| Op::Set(p, max, per)),
        1 => (0u8..2).prop_map(Op::Remove),
        1 => Just(Op::Restart),
    ]
}

fn sdlc() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/sdlc.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn object(value: Value) -> stateous_shared::wire::Object {
    value.as_object().cloned().unwrap()
}

/// The live rows of `slots` a pool has with `running` attempts of its states: one
/// each with `per` (the row keeps the key), none without (each attempt claimed of
/// its states is a slot).
fn rows_of(per: bool, running: i64) -> i64 {
    if per {
        running
    } else {
        0
    }
}

/// A limit as the test knows it.
#[derive(Debug, Clone, Copy)]
struct Limit {
    max: i64,
    per: bool,
}

/// The machine: the control plane, the model of the limits, and the most each
/// key may hold (`max`, or what ran when the limit was set below it, which only
/// falls from there).
struct Machine {
    db: Db,
    clock: Clock,
    control: Option<Control>,
    tokens: Vec<String>,
    held: Vec<Grant>,
    limits: HashMap<String, Limit>,
    allowed: HashMap<(String, String), i64>,
}

const LEASE: Duration = Duration::from_secs(5);

impl Machine {
    async fn open(db: Db) -> Machine {
        let clock = Clock::manual(1_800_000_000_000_000);
        let mut machine = Machine {
            db,
            clock,
            control: None,
            tokens: Vec::new(),
            held: Vec::new(),
            limits: HashMap::new(),
            allowed: HashMap::new(),
        };
        machine.restart().await;
        machine
    }

    async fn restart(&mut self) {
        if let Some(control) = self.control.take() {
            control.shutdown().await.unwrap();
        }
        let mut options = self.db.options();
        options.clock = self.clock.clone();
        options.lease = LEASE;
        self.control = Some(Control::open(sdlc(), options).await.unwrap());
    }

    fn control(&self) -> &Control {
        self.control.as_ref().unwrap()
    }

    async fn run(&mut self, op: &Op) {
        let control = self.control().clone();
        match op {
            Op::Start(repo) => {
                let id = format!("T-{}", self.tokens.len());
                let context = object(json!({"repo": format!("r{repo}")}));
                control
                    .start(StartInput::new(id.clone(), context).unwrap())
                    .await
                    .unwrap();
                self.tokens.push(id);
            }
            Op::Claim(box_) => {
                let input =
                    ClaimInput::new(format!("box-{box_}"), vec!["coding".into()], None).unwrap();
                if let Some(grant) = control.claim(input).await.unwrap() {
                    self.held.push(grant);
                }
            }
            Op::Report(n, how) => {
                if self.held.is_empty() {
                    return;
                }
                let grant = self.held.remove(n % self.held.len());
                let outcome = match how {
                    0 => json!({"kind": "event", "event": "done"}),
                    1 => json!({"kind": "waiting"}),
                    _ => json!({"kind": "failed", "error": "no"}),
                };
                let outcome = serde_json::from_value(outcome).unwrap();
                // An attempt that ended meanwhile (a lease, a cancel) is refused.
                let _ = control
                    .report(ReportInput::new(grant.task, outcome).unwrap())
                    .await;
            }
            Op::LeasesEnd => {
                self.clock.advance(LEASE + Duration::from_secs(1));
                control.tick().await.unwrap();
                self.held.clear();
            }
            Op::Cancel(n) => {
                if let Some(token) = self.tokens.get(n % self.tokens.len().max(1)) {
                    let _ = control.cancel(token.clone()).await;
                }
            }
            Op::Set(pool, max, per) => {
                let name = format!("pool-{pool}");
                let mut body = json!({"states": ["coding"], "max": max});
                if *per {
                    body["per"] = json!("ctx['repo']");
                }
                let input = LimitInput::parse(&name, &object(body)).unwrap();
                control.set_limit(input).await.unwrap();
                self.allowed.retain(|(pool, _), _| *pool != name);
                self.limits.insert(
                    name.clone(),
                    Limit {
                        max: *max,
                        per: *per,
                    },
                );
                for (key, count) in self.claimed(*per) {
                    self.allowed.insert((name.clone(), key), count.max(*max));
                }
            }
            Op::Remove(pool) => {
                let name = format!("pool-{pool}");
                let _ = control.remove_limit(name.clone()).await;
                self.limits.remove(&name);
                self.allowed.retain(|(pool, _), _| *pool != name);
            }
            Op::Restart => self.restart().await,
        }
    }

    /// The rows of `slots` of `pool` whose attempt is claimed now, read from
    /// outside the control plane.
    fn live_rows(&self, pool: &str) -> i64 {
        let live = self.db.rows(&format!(
            "SELECT count(*) FROM slots s JOIN tasks t ON t.id = s.task
             WHERE s.pool = '{pool}' AND t.status = 'claimed' AND t.attempt = s.attempt"
        ));
        live[0][0].as_deref().unwrap().parse().unwrap()
    }

    /// The claimed attempts of `coding` now, by key (the repo, or "" for all),
    /// read from outside the control plane.
    fn claimed(&self, per: bool) -> HashMap<String, i64> {
        let rows = self.db.rows(
            "SELECT k.context FROM tasks t JOIN tokens k ON k.token = t.token
             WHERE t.status = 'claimed' AND t.state = 'coding'",
        );
        let mut counts = HashMap::new();
        for row in rows {
            let key = if per {
                let context: Value = serde_json::from_str(row[0].as_deref().unwrap()).unwrap();
                context["repo"].to_string()
            } else {
                String::new()
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }

    /// The invariants at this commit; then the most each key may hold from here.
    fn check(&mut self, after: &Op) {
        for (name, limit) in self.limits.clone() {
            let claimed = self.claimed(limit.per);
            for (key, count) in &claimed {
                let at = (name.clone(), key.clone());
                let allowed = self.allowed.get(&at).copied().unwrap_or(limit.max);
                assert!(
                    *count <= allowed,
                    "{name} key {key:?}: {count} claimed, at most {allowed} (after {after:?})"
                );
                self.allowed.insert(at, (*count).max(limit.max));
            }
            for ((pool, key), allowed) in self.allowed.iter_mut() {
                if *pool == name && !claimed.contains_key(key) {
                    *allowed = limit.max;
                }
            }
            // No leak: the slots counted are exactly the live attempts covered.
            let running: i64 = claimed.values().sum();
            assert_eq!(
                self.live_rows(&name),
                rows_of(limit.per, running),
                "{name}: slots vs attempts (after {after:?})"
            );
        }
    }
}

fn machine_holds_its_limits(backend: Backend, cases: u32) {
    if backend == Backend::Postgres && stateous_shared::testing::postgres_server().is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let ops = proptest::collection::vec(op(), 10..40);
    runner
        .run(&ops, |ops| {
            runtime.block_on(async {
                let db = Db::new(backend).unwrap();
                let mut machine = Machine::open(db).await;
                for op in &ops {
                    machine.run(op).await;
                    machine.check(op);
                }
                if let Some(control) = machine.control.take() {
                    control.shutdown().await.unwrap();
                }
            });
            Ok(())
        })
        .unwrap();
}

#[test]
fn claimed_attempts_never_exceed_a_limit_and_no_slot_leaks_on_sqlite() {
    machine_holds_its_limits(Backend::Sqlite, 12);
}

#[test]
fn claimed_attempts_never_exceed_a_limit_and_no_slot_leaks_on_postgres() {
    machine_holds_its_limits(Backend::Postgres, 6);
}

/// Many claims and reports at once, so that one commit (the Postgres writer's
/// batch) holds several: each claim counts the slots the claims before it in the
/// commit took and the slots its reports gave back. A pool of 3 and 1 per repo,
/// 4 repos: 16 claims at once get exactly 3 grants; then, round after round,
/// the reports of every held grant go with 16 more claims, and the database read
/// from outside never shows more than 3 claimed, nor 2 of one repo, nor a slot
/// counted without its attempt.
fn claims_at_once_hold_a_limit(backend: Backend) {
    if backend == Backend::Postgres && stateous_shared::testing::postgres_server().is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut machine = Machine::open(Db::new(backend).unwrap()).await;
        let control = machine.control().clone();
        for (name, max, per) in [("pool-0", 3, false), ("pool-1", 1, true)] {
            let mut body = json!({"states": ["coding"], "max": max});
            if per {
                body["per"] = json!("ctx['repo']");
            }
            let input = LimitInput::parse(name, &object(body)).unwrap();
            control.set_limit(input).await.unwrap();
        }
        for n in 0..40 {
            let context = object(json!({"repo": format!("r{}", n % 4)}));
            let input = StartInput::new(format!("T-{n}"), context).unwrap();
            control.start(input).await.unwrap();
        }
        let mut held: Vec<Grant> = Vec::new();
        for round in 0..8 {
            let claims = (0..16).map(|n| {
                let control = control.clone();
                let input =
                    ClaimInput::new(format!("box-{}", n % 4), vec!["coding".into()], None).unwrap();
                async move { control.claim(input).await.unwrap() }
            });
            let reports = held.drain(..).map(|grant| {
                let control = control.clone();
                let outcome = json!({"kind": "event", "event": "done"});
                let outcome = serde_json::from_value(outcome).unwrap();
                let input = ReportInput::new(grant.task, outcome).unwrap();
                async move { control.report(input).await.unwrap() }
            });
            let (grants, _) = tokio::join!(
                futures_util::future::join_all(claims),
                futures_util::future::join_all(reports)
            );
            held = grants.into_iter().flatten().collect();
            if round == 0 {
                assert_eq!(held.len(), 3, "16 claims at once, a pool of 3");
            }
            assert!(held.len() <= 3, "round {round}: {} granted", held.len());
            let by_repo = machine.claimed(true);
            let claimed: i64 = by_repo.values().sum();
            assert!(claimed <= 3, "round {round}: {claimed} claimed");
            assert!(
                by_repo.values().all(|n| *n <= 1),
                "round {round}: {by_repo:?}"
            );
            for (pool, per) in [("pool-0", false), ("pool-1", true)] {
                assert_eq!(
                    machine.live_rows(pool),
                    rows_of(per, claimed),
                    "round {round}: {pool}'s slots vs attempts"
                );
            }
        }
        if let Some(control) = machine.control.take() {
            control.shutdown().await.unwrap();
        }
    });
}

#[test]
fn claims_at_once_hold_a_limit_on_sqlite() {
    claims_at_once_hold_a_limit(Backend::Sqlite);
}

#[test]
fn claims_at_once_hold_a_limit_on_postgres() {
    claims_at_once_hold_a_limit(Backend::Postgres);
}

/// The claim switch belongs to one store (`store/claim_switch.rs`): a limit set in
/// one database leaves another control plane of the same process claiming as
/// without limits; removing the last limit, or the last priority other than 0,
/// turns it off at the next tick; a restart loads it from the tables; and while
/// it is on, a limit holds.
async fn the_claim_switch_is_per_store_and_turns_off(db: Db) {
    let other_db = Db::new(db.backend).unwrap();
    let clock = Clock::manual(1_800_000_000_000_000);
    let open = |db: &Db| {
        let mut options = db.options();
        options.clock = clock.clone();
        options.lease = LEASE;
        Control::open(sdlc(), options)
    };
    let (one, other) = (open(&db).await.unwrap(), open(&other_db).await.unwrap());
    assert!(!one.claims_look_at_limits() && !other.claims_look_at_limits());
    let limit = |max: i64| {
        LimitInput::parse("one", &object(json!({"states": ["coding"], "max": max}))).unwrap()
    };
    one.set_limit(limit(1)).await.unwrap();
    assert!(one.claims_look_at_limits(), "set: on");
    assert!(
        !other.claims_look_at_limits(),
        "another store's switch stays off"
    );
    for n in 0..2 {
        for control in [&one, &other] {
            let context = object(json!({"repo": "r"}));
            let input = StartInput::new(format!("T-{n}"), context).unwrap();
            control.start(input).await.unwrap();
        }
    }
    let claim = |control: &Control, box_: &str| {
        let input = ClaimInput::new(box_.to_string(), vec!["coding".into()], None).unwrap();
        let control = control.clone();
        async move { control.claim(input).await.unwrap() }
    };
    assert!(claim(&one, "a").await.is_some());
    assert!(claim(&one, "b").await.is_none(), "a limit of 1 holds");
    assert!(claim(&other, "a").await.is_some());
    assert!(claim(&other, "b").await.is_some(), "no limit in the other");
    // Still on while the limit is there, whatever the ticks.
    one.tick().await.unwrap();
    assert!(one.claims_look_at_limits());
    one.remove_limit("one".into()).await.unwrap();
    one.tick().await.unwrap();
    assert!(
        !one.claims_look_at_limits(),
        "the last limit gone: off at the tick"
    );
    assert!(
        claim(&one, "b").await.is_some(),
        "nothing holds the claim now"
    );
    // A priority other than 0 turns it on; back to 0, off at the tick.
    let input = StartInput::new("T-9".to_string(), object(json!({"repo": "r"}))).unwrap();
    one.start(input).await.unwrap();
    one.set_token_priority("T-9".into(), 5).await.unwrap();
    assert!(one.claims_look_at_limits());
    one.tick().await.unwrap();
    assert!(one.claims_look_at_limits(), "a priority is set");
    one.set_token_priority("T-9".into(), 0).await.unwrap();
    one.tick().await.unwrap();
    assert!(!one.claims_look_at_limits(), "the last priority gone");
    // A restart loads it from the tables.
    one.set_limit(limit(1)).await.unwrap();
    one.shutdown().await.unwrap();
    let one = open(&db).await.unwrap();
    assert!(
        one.claims_look_at_limits(),
        "opened on a database with a limit"
    );
    assert!(claim(&one, "c").await.is_none(), "a limit of 1, held");
    one.remove_limit("one".into()).await.unwrap();
    one.shutdown().await.unwrap();
    let one = open(&db).await.unwrap();
    assert!(
        !one.claims_look_at_limits(),
        "opened on a database without one"
    );
    one.shutdown().await.unwrap();
    other.shutdown().await.unwrap();
}

both!(the_claim_switch_is_per_store_and_turns_off);
