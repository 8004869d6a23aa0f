//! The slots' lock between transactions of one store that run side by side: the
//! slot book the writer keeps from one batch to the next (`slot_book.rs`), which
//! a transaction of its own between two batches makes the next batch read again;
//! and the first limit set beside a claim that judged while none was set.

use std::sync::Arc;

use super::*;
use crate::control::Options;
use crate::store::backend::Database;
use crate::store::claim_switch::ClaimFact;
use crate::store::{LimitRow, SlotRow, TaskStatus, TokenRow, TokenStatus, Tx};
use crate::testing::PgTestDb;

/// Not a multiple of `READ_AGAIN_EVERY`: no batch reads the slots again by lot.
const NOW: i64 = 1_800_000_000_000_001;

fn open(db: &PgTestDb) -> PgStore {
    let options = Options::on(Database::Postgres(db.url().to_string()));
    let options = StoreOptions {
        database: options.database.clone(),
        clock: Clock::manual(NOW),
        holder: "test:1:1".into(),
        busy_timeout: options.busy_timeout,
        postgres: options.postgres.clone(),
        standby: None,
        subscribed: Default::default(),
    };
    PgStore::open(db.url(), &options).unwrap()
}

fn token(id: &str) -> TokenRow {
    TokenRow {
        token: id.into(),
        state: "coding".into(),
        status: TokenStatus::Active,
        visit: 1,
        context: Arc::new(Default::default()),
        entered_at: NOW,
        parent: None,
        workflow: None,
        graph: None,
        trace: None,
    }
}

/// Tokens A and B in `coding`, with a queued task each: the tasks' ids.
fn queue_two(tx: &dyn Tx) -> Vec<i64> {
    ["A", "B"]
        .into_iter()
        .map(|id| {
            tx.insert_token(&token(id)).unwrap();
            tx.queue_task(id, "coding", 1).unwrap()
        })
        .collect()
}

/// Claim `task` with its next attempt and a slot of `pool`.
fn claim(tx: &dyn Tx, task: i64) {
    let mut row = tx.task(task).unwrap().unwrap();
    row.status = TaskStatus::Claimed;
    row.attempt += 1;
    row.claimed_by = Some("box-1".into());
    row.lease_until = Some(NOW + 60_000_000);
    tx.update_task(&row).unwrap();
    tx.take_slot(&SlotRow {
        task,
        attempt: row.attempt,
        pool: "pool".into(),
        key: String::new(),
    })
    .unwrap();
}

fn end(tx: &dyn Tx, task: i64) {
    let mut row = tx.task(task).unwrap().unwrap();
    row.status = TaskStatus::Done;
    (row.claimed_by, row.lease_until) = (None, None);
    tx.update_task(&row).unwrap();
}

/// The rules of `tickets` (its state `coding`), with a lease of a minute.
fn rules() -> crate::engine::Rules {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/tickets.json");
    let graph = stateous_shared::graph::Graph::load(&std::fs::read_to_string(path).unwrap());
    crate::engine::Rules::new(Arc::new(graph.unwrap()), std::time::Duration::from_secs(60))
}

/// A limit `name` of 1 at once of `coding` per `ctx['repo']`.
fn keyed(name: &str) -> crate::validated::claim_limits::LimitInput {
    crate::validated::claim_limits::LimitInput {
        name: name.into(),
        states: vec!["coding".into()],
        max: 1,
        per: Some(stateous_shared::guards::parse_guard("ctx['repo']").unwrap()),
        rate: None,
    }
}

/// What the control plane does before it sets the first limit with `per`: its
/// facts on (kept on while the guard lives), then wait for the write
/// transactions that began before.
async fn first_limit_ahead(store: &PgStore) -> crate::store::claim_switch::Turned<'_> {
    let turned = store.claim_switch().turned();
    turned.turn_on(ClaimFact::Limits);
    turned.turn_on(ClaimFact::Keys);
    let inner = Arc::clone(&store.inner);
    tokio::task::spawn_blocking(move || inner.settle_writes())
        .await
        .unwrap()
        .unwrap();
    turned
}

/// A runtime whose blocking threads run transactions of their own.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The limit "pool": 1 at once of `coding`.
fn pool() -> LimitRow {
    LimitRow {
        name: "pool".into(),
        states: vec!["coding".into()],
        max: 1,
        per: None,
        rate_count: None,
        rate_period: None,
        bucket: 0.0,
        bucket_at: NOW,
        set_at: NOW,
    }
}

fn held(tx: &dyn Tx) -> i64 {
    tx.slot_counts(&pool())
        .unwrap()
        .iter()
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn a_transaction_of_its_own_between_batches_makes_the_next_read_the_slots() {
    let Some(db) = PgTestDb::create() else {
        return;
    };
    let runtime = runtime();
    let store = open(&db);
    // A transaction of its own, on a thread that may block.
    let alone = |work: fn(&dyn Tx, i64), task: i64| {
        let inner = Arc::clone(&store.inner);
        tokio::task::spawn_blocking(move || {
            inner.write(&move |tx: &dyn Tx| {
                work(tx, task);
                (true, ())
            })
        })
    };
    runtime.block_on(async {
        let tasks = store
            .write(|tx| {
                tx.put_limit(&pool()).unwrap();
                (true, queue_two(tx))
            })
            .await
            .unwrap();
        let (a, b) = (tasks[0], tasks[1]);
        // A batch claims A: it reads the slots, and leaves its book for the next.
        let before = store
            .write(move |tx| {
                let before = held(tx);
                claim(tx, a);
                (true, before)
            })
            .await
            .unwrap();
        assert_eq!(before, 0);
        assert!(store
            .inner
            .books
            .take(store.inner.solo.quiet().unwrap())
            .is_some());
        store.write(|tx| (true, held(tx))).await.unwrap();
        // The next batch starts from that book and counts A's slot.
        assert_eq!(store.write(|tx| (true, held(tx))).await.unwrap(), 1);
        // A transaction of its own ends A's attempt: the next batch reads the
        // slots again, and B's claim gets the slot A gave back.
        alone(end, a).await.unwrap().unwrap();
        let now = store.write(|tx| (true, held(tx))).await.unwrap();
        assert_eq!(
            now, 0,
            "A's slot was given back by a transaction of its own"
        );
        store
            .write(move |tx| {
                claim(tx, b);
                (true, ())
            })
            .await
            .unwrap();
        // A transaction of its own takes a slot (A again, its next attempt): the
        // next batch sees two held, and no book of its own says fewer.
        let again = |tx: &dyn Tx, task: i64| {
            let mut row = tx.task(task).unwrap().unwrap();
            row.status = TaskStatus::Queued;
            (row.claimed_by, row.lease_until) = (None, None);
            tx.update_task(&row).unwrap();
            claim(tx, task);
        };
        alone(again, a).await.unwrap().unwrap();
        assert_eq!(store.write(|tx| (true, held(tx))).await.unwrap(), 2);
        store.write(|tx| (true, held(tx))).await.unwrap();
        assert_eq!(store.write(|tx| (true, held(tx))).await.unwrap(), 2);
    });
    drop(runtime);
    drop(store);
}

/// The first limit set while a claim that judged with none set (it read no limit
/// and took no lock) has not committed: the set, once its fact is on, waits for
/// the transactions that began before it (`settle_writes`, as the control plane
/// does), and its rows count the claim's attempt. Before, the set wrote the rows
/// of the attempts claimed then, without this one, which held no slot: the key
/// admitted one more than `max`. A limit with `per`, whose slots are rows.
#[test]
fn the_first_limit_set_beside_a_claim_counts_its_attempt() {
    use crate::engine::{claim, claim_limits};
    use crate::validated::ClaimInput;
    use std::sync::mpsc;
    use std::time::Duration;

    let Some(db) = PgTestDb::create() else {
        return;
    };
    let runtime = runtime();
    let rules = rules();
    let store = open(&db);
    let limit = keyed;
    runtime.block_on(async {
        let tasks = store.write(|tx| (true, queue_two(tx))).await.unwrap();
        // A claim in a transaction of its own, then one in the writer's batch;
        // each waits 0.3 s before its commit for the limit's set, which runs
        // alone beside it.
        // The second limit counts the first claim's attempt too.
        let rounds = [("first", tasks[0], true, 1), ("second", tasks[1], false, 2)];
        for (pool, task, alone, claimed_now) in rounds {
            assert!(!store.claim_switch().applies(ClaimFact::Limits));
            let (claimed, told) = (mpsc::channel(), mpsc::channel::<()>());
            let (rules_c, told_rx) = (rules.clone(), std::sync::Mutex::new(told.1));
            let claimed_tx = claimed.0.clone();
            let work = move |tx: &dyn Tx| {
                let input = ClaimInput::new("box-1".into(), vec!["coding".into()], None).unwrap();
                let grant = claim::claim(&rules_c, tx, &input).unwrap().unwrap();
                let _ = claimed_tx.send(grant.task);
                let _ = told_rx
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_millis(300));
                (true, ())
            };
            let claiming = if alone {
                let inner = Arc::clone(&store.inner);
                tokio::task::spawn_blocking(move || inner.write(&work).unwrap())
            } else {
                let write = store.write(work);
                tokio::spawn(async move { write.await.unwrap() })
            };
            let claimed_id = tokio::task::spawn_blocking(move || claimed.1.recv().unwrap())
                .await
                .unwrap();
            assert_eq!(claimed_id, task);
            let turned = first_limit_ahead(&store).await;
            let inner = Arc::clone(&store.inner);
            let (rules_s, input) = (rules.clone(), limit(pool));
            tokio::task::spawn_blocking(move || {
                inner.write(&|tx: &dyn Tx| {
                    claim_limits::set_limit(&rules_s, tx, &input).unwrap();
                    (true, ())
                })
            })
            .await
            .unwrap()
            .unwrap();
            drop(turned);
            let _ = told.0.send(());
            claiming.await.unwrap();
            let held = store
                .write(move |tx| {
                    let limits = tx.limits().unwrap();
                    let limit = limits.iter().find(|l| l.name == pool).unwrap();
                    (true, tx.slot_counts(limit).unwrap())
                })
                .await
                .unwrap();
            // Each token's context has no repo: one key, `null`.
            assert_eq!(
                held,
                vec![("null".to_string(), claimed_now)],
                "{pool}: the claimed attempt holds a slot of the limit set beside it"
            );
            store
                .write(move |tx| (true, claim_limits::remove_limit(tx, pool).unwrap()))
                .await
                .unwrap();
            // The clock's tick turns the switch off once no limit is left.
            let mark = store.claim_switch().mark().unwrap();
            store.claim_switch().turn_off(mark, [false; 4]);
        }
    });
    drop(runtime);
    drop(store);
}

/// The first limit with `per` set while a transaction of its own that queued a
/// task (with none set, the task got no row of `task_keys`) has not committed:
/// the set waits for it (`settle_writes`), and its rows include the task's.
/// Before, the task kept no row, and a claim found it only once it was within
/// the first 20 tasks of its queue.
#[test]
fn a_task_queued_beside_the_first_limit_with_per_gets_its_key() {
    use crate::engine::claim_limits;
    use std::sync::mpsc;
    use std::time::Duration;

    let Some(db) = PgTestDb::create() else {
        return;
    };
    let runtime = runtime();
    let rules = rules();
    let store = open(&db);
    runtime.block_on(async {
        let (queued, told) = (mpsc::channel(), mpsc::channel::<()>());
        let (queued_tx, told_rx) = (queued.0, std::sync::Mutex::new(told.1));
        let inner = Arc::clone(&store.inner);
        let queueing = tokio::task::spawn_blocking(move || {
            inner.write(&|tx: &dyn Tx| {
                tx.insert_token(&token("C")).unwrap();
                let task = tx.queue_task("C", "coding", 1).unwrap();
                let _ = queued_tx.send(task);
                let _ = told_rx
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_millis(300));
                (true, ())
            })
        });
        tokio::task::spawn_blocking(move || queued.1.recv().unwrap())
            .await
            .unwrap();
        let turned = first_limit_ahead(&store).await;
        let inner = Arc::clone(&store.inner);
        tokio::task::spawn_blocking(move || {
            let input = keyed("keyed");
            inner.write(&|tx: &dyn Tx| {
                claim_limits::set_limit(&rules, tx, &input).unwrap();
                (true, ())
            })
        })
        .await
        .unwrap()
        .unwrap();
        drop(turned);
        let _ = told.0.send(());
        queueing.await.unwrap().unwrap();
        let has_rows = store
            .write(|tx| (true, tx.has_task_keys("keyed").unwrap()))
            .await
            .unwrap();
        assert!(
            has_rows,
            "the task queued beside the limit's set has its key"
        );
    });
    drop(runtime);
    drop(store);
}
