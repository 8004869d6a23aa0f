//! The slot book the writer keeps from one batch to the next (`slot_book.rs`):
//! a transaction of its own between two batches makes the next batch read the
//! slots held again.

use std::sync::Arc;

use super::*;
use crate::control::Options;
use crate::store::backend::Database;
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

fn held(tx: &dyn Tx) -> i64 {
    tx.slot_counts("pool").unwrap().iter().map(|(_, n)| n).sum()
}

#[test]
fn a_transaction_of_its_own_between_batches_makes_the_next_read_the_slots() {
    let Some(db) = PgTestDb::create() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
                tx.put_limit(&LimitRow {
                    name: "pool".into(),
                    states: vec!["coding".into()],
                    max: 1,
                    per: None,
                    rate_count: None,
                    rate_period: None,
                    bucket: 0.0,
                    bucket_at: NOW,
                    set_at: NOW,
                })
                .unwrap();
                let mut tasks = Vec::new();
                for id in ["A", "B"] {
                    tx.insert_token(&token(id)).unwrap();
                    tasks.push(tx.queue_task(id, "coding", 1).unwrap());
                }
                (true, tasks)
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
