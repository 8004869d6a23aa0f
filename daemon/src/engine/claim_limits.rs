//! Limits on claims (`docs/limits.md`): the control plane's pools of slots, set,
//! changed and removed at runtime (each change on the journal, subject `limit`),
//! and the admission of a claim into them.
//!
//! A claim of a state that a limit covers takes a slot of that limit's pool (of
//! the key its token's context gives, with `per`) in the claim's own transaction,
//! under the slots' lock ([`Limits::lock_slots`]). A slot is a row naming the task
//! and its attempt, and it counts only while that task is claimed with that
//! attempt (`store/claim_limits.rs`): whatever ends the attempt (a report, a
//! `waiting` outcome, a lease end, a cancel, a lost task, a budget's pause) gives
//! the slot back in the commit that ends it. So at every commit a pool's (or a
//! key's) claimed attempts are at most its `max`, and no slot outlives its
//! attempt, through crashes of supervisors and of the control plane alike: the
//! count is read from the database under the lock, never kept in memory past the
//! transaction that holds it (on Postgres a transaction reads it once and counts
//! its own writes on top, `store/postgres/slot_book.rs`).

use std::collections::HashMap;

use serde_json::{json, Value};
use stateous_shared::claim_limits::{KeyUse, LimitView, Rate};
use stateous_shared::guards::{parse_guard, Guard};
use stateous_shared::pyrepr::repr_json;
use stateous_shared::refusal::Code;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::Object;

use super::{refuse, Rules, Step};
use crate::store::{task_keys, HeldSlot, LimitRow, SlotRow, TaskRow, TokenRow, Tx};
use crate::validated::claim_limits::LimitInput;

/// The journal's subject of limits (`GET /journal?subject=limit`).
pub const JOURNAL_SUBJECT: &str = "limit";

/// How many queued tasks of each state a claim looks at in queue order (besides
/// the heads of the keys, [`KEYS`]).
pub const LOOK_PAST: i64 = 500;

/// How many keys of each pool with `per` a claim looks at for the first queued
/// task of each (`task_keys`), those that are not full, whose turn is oldest
/// first, among the first keys in the order of their values
/// (`docs/limits.md`, "No head-of-line blocking").
pub const KEYS: i64 = 500;

/// One claim in this many (by its moment in microseconds) deletes its pools'
/// rows of ended attempts.
const SWEEP_EVERY: i64 = 16;

/// A limit as a claim uses it: its row, its key expression and its rate.
#[derive(Debug, Clone)]
pub struct Pool {
    /// The row.
    pub row: LimitRow,
    /// `per`, parsed.
    pub per: Option<Guard>,
    /// The rate, if any.
    pub rate: Option<Rate>,
}

impl Pool {
    /// The pool of a limit's row.
    pub fn of(row: LimitRow) -> Pool {
        let per = row.per.as_deref().and_then(|text| parse_guard(text).ok());
        let rate = match (row.rate_count, row.rate_period) {
            (Some(count), Some(period)) => Some(Rate { count, period }),
            _ => None,
        };
        Pool { row, per, rate }
    }

    /// Whether the pool covers the state of a token of `workflow` (`None`: the
    /// main one).
    pub fn covers(&self, workflow: Option<&str>, state: &str) -> bool {
        crate::store::task_keys::covers(&self.row.states, workflow, state)
    }

    /// The key of a token's context: the value of `per` as JSON text; empty
    /// without `per`.
    pub fn key_of(&self, context: &Object) -> String {
        match &self.per {
            None => String::new(),
            Some(per) => crate::store::task_keys::key_of(per, context),
        }
    }

    /// The claims the rate's bucket holds at `now` (a full bucket holds `count`).
    fn bucket_at(&self, now: i64) -> f64 {
        let Some(rate) = self.rate else {
            return f64::INFINITY;
        };
        let elapsed = now.saturating_sub(self.row.bucket_at).max(0) as f64;
        let filled = elapsed * rate.count as f64 / rate.period_micros() as f64;
        (self.row.bucket + filled).min(rate.count as f64)
    }

    /// When the rate lets the next claim through, if not now.
    pub fn rate_opens_at(&self, now: i64) -> Option<i64> {
        let rate = self.rate?;
        let bucket = self.bucket_at(now);
        if bucket >= 1.0 {
            return None;
        }
        let wait = (1.0 - bucket) * rate.period_micros() as f64 / rate.count as f64;
        Some(now.saturating_add(wait.ceil() as i64))
    }
}

/// A key as people read it: `'acme/api'` (Python's spelling of the value).
pub fn key_words(key: &str) -> String {
    serde_json::from_str::<Value>(key).map_or_else(|_| key.to_string(), |v| repr_json(&v))
}

/// Every limit, as pools.
pub fn pools(tx: &dyn Tx) -> Step<Vec<Pool>> {
    Ok(tx.limits()?.into_iter().map(Pool::of).collect())
}

/// The slots a claim takes: each pool's index in the [`Admission`] and its key.
pub type Slots = Vec<(usize, String)>;

/// What a claim knows of the pools that cover the states it asks for: the slots
/// held now by key, under the slots' lock.
#[derive(Debug)]
pub struct Admission {
    pools: Vec<Pool>,
    held: HashMap<(usize, String), i64>,
    turns: HashMap<(usize, String), i64>,
}

/// The admission of a claim of `states`, under the slots' lock; `None` when no
/// limit covers any of them (the claim goes as without limits).
pub fn admission(tx: &dyn Tx, states: &[(Option<String>, String)]) -> Step<Option<Admission>> {
    let all = pools(tx)?;
    if all.is_empty() {
        return Ok(None);
    }
    let pools: Vec<Pool> = all
        .into_iter()
        .filter(|pool| states.iter().any(|(w, s)| pool.covers(w.as_deref(), s)))
        .collect();
    if pools.is_empty() {
        return Ok(None);
    }
    tx.lock_slots()?;
    let (mut held, mut turns) = (HashMap::new(), HashMap::new());
    for (index, pool) in pools.iter().enumerate() {
        // Rows of ended attempts count for nothing (`held_slots` joins the live
        // attempts); they are deleted now and then, one claim in 16 by its moment,
        // so that the table stays small without a delete on every claim.
        if tx.now() % SWEEP_EVERY == 0 {
            tx.sweep_slots(&pool.row.name)?;
        }
        for (key, count) in tx.slot_counts(&pool.row)? {
            held.insert((index, key), count);
        }
        if pool.per.is_some() {
            for (key, at) in tx.key_turns(&pool.row.name)? {
                turns.insert((index, key), at);
            }
        }
    }
    Ok(Some(Admission { pools, held, turns }))
}

impl Admission {
    fn used(&self, index: usize, key: &str) -> i64 {
        self.held
            .get(&(index, key.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The states of `states` that a claim may still take a task of: none of
    /// their pools without `per` is full, and none of their pools' rates is spent.
    pub fn open_states(
        &self,
        now: i64,
        states: &[(Option<String>, String)],
    ) -> Vec<(Option<String>, String)> {
        states
            .iter()
            .filter(|(workflow, state)| {
                self.pools.iter().enumerate().all(|(index, pool)| {
                    if !pool.covers(workflow.as_deref(), state) {
                        return true;
                    }
                    let full = pool.per.is_none() && self.used(index, "") >= pool.row.max;
                    !full && pool.rate_opens_at(now).is_none()
                })
            })
            .cloned()
            .collect()
    }

    /// The first queued task of each key of each pool with `per` that covers
    /// one of `states` and is not full, up to [`KEYS`] keys a pool, read from
    /// `task_keys` without reading the full keys' tasks: a full key never hides
    /// another key's tasks behind its own.
    pub fn key_heads(
        &self,
        tx: &dyn Tx,
        states: &[(Option<String>, String)],
        prioritized: bool,
    ) -> Step<Vec<crate::store::Candidate>> {
        let mut heads = Vec::new();
        for (index, pool) in self.pools.iter().enumerate() {
            if pool.per.is_none() {
                continue;
            }
            let names: Vec<String> = states
                .iter()
                .filter(|(w, s)| pool.covers(w.as_deref(), s))
                .map(|(_, s)| s.clone())
                .collect();
            if names.is_empty() {
                continue;
            }
            let full: Vec<String> = self
                .held
                .iter()
                .filter(|((at, _), used)| *at == index && **used >= pool.row.max)
                .map(|((_, key), _)| key.clone())
                .collect();
            heads.extend(tx.key_heads(&crate::store::task_keys::HeadsAsked {
                pool: &pool.row.name,
                states: &names,
                full: &full,
                keys: KEYS,
                prioritized,
            })?);
        }
        Ok(heads)
    }

    /// Whether a pool with `per` covers one of `states`: then each task's key is
    /// judged on its own.
    pub fn keyed(&self, states: &[(Option<String>, String)]) -> bool {
        self.pools.iter().any(|pool| {
            pool.per.is_some() && states.iter().any(|(w, s)| pool.covers(w.as_deref(), s))
        })
    }

    /// The slots a claim of `task` (of the token `row`) takes, or `None` when one
    /// of its keys is full.
    pub fn slots_for(&self, task: &TaskRow, row: &TokenRow) -> Option<Slots> {
        self.slots_of(row.workflow.as_deref(), &task.state, &row.context)
    }

    /// The slots a claim of a task of `state` (of a token of `workflow` with
    /// `context`) takes, or `None` when one of its keys is full.
    pub fn slots_of(&self, workflow: Option<&str>, state: &str, context: &Object) -> Option<Slots> {
        let mut slots = Vec::new();
        for (index, pool) in self.pools.iter().enumerate() {
            if !pool.covers(workflow, state) {
                continue;
            }
            let key = pool.key_of(context);
            if self.used(index, &key) >= pool.row.max {
                return None;
            }
            slots.push((index, key));
        }
        Some(slots)
    }

    /// How many slots the keys of `slots` hold now (pools with `per` only): of
    /// two tasks of one priority, the one whose keys hold fewer goes first, so
    /// keys with queued tasks take turns.
    pub fn load(&self, slots: &Slots) -> i64 {
        slots
            .iter()
            .filter(|(index, _)| self.pools.get(*index).is_some_and(|p| p.per.is_some()))
            .map(|(index, key)| self.used(*index, key))
            .sum()
    }

    /// When the keys of `slots` last took a slot (pools with `per` only; 0 for
    /// never): of two tasks of one priority and load, the one whose keys waited
    /// longest goes first.
    pub fn last_turn(&self, slots: &Slots) -> i64 {
        slots
            .iter()
            .filter_map(|slot| self.turns.get(slot))
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// Take the slots of a claimed `task` (its attempt already counted), and
    /// spend a claim of each rate.
    pub fn take(&mut self, tx: &dyn Tx, task: &TaskRow, slots: Slots) -> Step<()> {
        let now = tx.now();
        for (index, key) in slots {
            let Some(pool) = self.pools.get_mut(index) else {
                continue;
            };
            tx.take_slot(&SlotRow {
                task: task.id,
                attempt: task.attempt,
                pool: pool.row.name.clone(),
                key: key.clone(),
            })?;
            if pool.per.is_some() {
                tx.take_turn(&pool.row.name, &key, now)?;
                self.turns.insert((index, key.clone()), now);
            }
            if pool.rate.is_some() {
                let bucket = pool.bucket_at(now) - 1.0;
                tx.set_bucket(&pool.row.name, bucket, now)?;
                pool.row.bucket = bucket;
                pool.row.bucket_at = now;
            }
            *self.held.entry((index, key)).or_insert(0) += 1;
        }
        Ok(())
    }
}

/// Set a limit whole; the change goes on the journal (subject `limit`, kind
/// `set`). 422 `invalid_limit` for a state no workflow of the served graph has.
pub fn set_limit(rules: &Rules, tx: &dyn Tx, input: &LimitInput) -> Step<LimitView> {
    known_states(&rules.graph, input)?;
    let now = tx.now();
    let before = tx.limits()?.into_iter().find(|row| row.name == input.name);
    let rate = input.rate;
    // A bucket carries over while the rate stays; a new rate starts full.
    let (bucket, bucket_at) = match &before {
        Some(row)
            if rate.is_some()
                && row.rate_count == rate.map(|r| r.count)
                && row.rate_period == rate.map(|r| r.period) =>
        {
            (row.bucket, row.bucket_at)
        }
        _ => (rate.map_or(0.0, |r| r.count as f64), now),
    };
    let row = LimitRow {
        name: input.name.clone(),
        states: input.states.clone(),
        max: input.max,
        per: input.per.as_ref().map(|guard| guard.text.clone()),
        rate_count: rate.map(|r| r.count),
        rate_period: rate.map(|r| r.period),
        bucket,
        bucket_at,
        set_at: now,
    };
    tx.put_limit(&row)?;
    adopt(tx, &Pool::of(row.clone()))?;
    // The same states and `per`: the keys of the queued tasks stay as they are.
    let same_keys = before
        .as_ref()
        .is_some_and(|b| b.states == row.states && b.per == row.per);
    if !same_keys {
        key_tasks(tx, &row)?;
    }
    let data = json!({
        "states": row.states,
        "max": row.max,
        "per": row.per,
        "rate": rate.map(|r| r.words()),
    });
    tx.journal_append(
        JOURNAL_SUBJECT,
        &row.name,
        "set",
        data.as_object().unwrap_or(&Object::new()),
    )?;
    view(tx, Pool::of(row))
}

/// Give the attempts claimed now that `pool` covers their slots, with the keys
/// their contexts give now, in place of the pool's rows: a new limit, or one whose
/// states or `per` changed, counts what runs already (a limit set below the
/// running count admits nothing until below). Under the slots' lock.
fn adopt(tx: &dyn Tx, pool: &Pool) -> Step<()> {
    tx.lock_slots()?;
    tx.clear_slots(&pool.row.name)?;
    for claimed in tx.claimed_now()? {
        if !pool.covers(claimed.workflow.as_deref(), &claimed.state) {
            continue;
        }
        let context = crate::store::json::object(&claimed.context)?;
        tx.take_slot(&SlotRow {
            task: claimed.task,
            attempt: claimed.attempt,
            pool: pool.row.name.clone(),
            key: pool.key_of(&context),
        })?;
    }
    Ok(())
}

/// Write the rows of `task_keys` of the limit `row` from the tasks queued now, in
/// place of its pool's rows: a new limit with `per`, or one whose states or `per`
/// changed, finds each key's queued tasks at its first claim (one whose `max` or
/// rate alone changed keeps its rows). Without `per`, its rows are only deleted.
fn key_tasks(tx: &dyn Tx, row: &LimitRow) -> Step<()> {
    tx.clear_task_keys(&row.name)?;
    if row.per.is_none() {
        return Ok(());
    }
    let names: Vec<String> = row
        .states
        .iter()
        .map(|state| state.rsplit('/').next().unwrap_or(state).to_string())
        .collect();
    let limits = std::slice::from_ref(row);
    let mut rows = Vec::new();
    for queued in tx.queued_now(&names)? {
        let context = crate::store::json::object(&queued.context)?;
        let workflow = queued.workflow.as_deref();
        rows.extend(task_keys::rows_of(
            limits,
            queued.task,
            workflow,
            &queued.state,
            &context,
        ));
    }
    tx.put_task_keys(&rows)?;
    Ok(())
}

/// At the control plane's open (a standby's takeover): the pools with `per` that
/// have no row in `task_keys` get theirs from the tasks queued now (a database
/// upgraded to schema 0018 with such a limit set; a pool with no queued task,
/// which finds none). Nothing while no limit with `per` may be set.
pub fn key_pools(tx: &dyn Tx) -> Step<()> {
    use crate::store::claim_switch::{switch_of, ClaimFact};
    if !switch_of(tx).applies(ClaimFact::Keys) {
        return Ok(());
    }
    for row in tx.limits()? {
        if row.per.is_some() && !tx.has_task_keys(&row.name)? {
            key_tasks(tx, &row)?;
        }
    }
    Ok(())
}

/// 422 `invalid_limit` for a state of `input` that `graph` lacks.
pub fn known_states(graph: &stateous_shared::graph::Graph, input: &LimitInput) -> Step<()> {
    input
        .states
        .iter()
        .try_for_each(|state| known_state(graph, state))
}

fn known_state(graph: &stateous_shared::graph::Graph, state: &str) -> Step<()> {
    let known = match state.split_once('/') {
        None => graph.main.states.contains_key(state),
        Some((workflow, name)) => graph
            .children
            .get(workflow)
            .is_some_and(|w| w.states.contains_key(name)),
    };
    if known {
        return Ok(());
    }
    refuse(
        Code::InvalidLimit,
        format!(
            "the served graph has no state {} (a child workflow's state is written \
             <workflow>/<state>)",
            stateous_shared::pyrepr::repr_str(state)
        ),
    )
}

/// Remove a limit: its slots are no longer counted and its queued tasks may be
/// claimed at once. The removal goes on the journal (kind `removed`). 404
/// `limit_not_found`.
pub fn remove_limit(tx: &dyn Tx, name: &str) -> Step<()> {
    if !tx.remove_limit(name)? {
        return refuse(
            Code::LimitNotFound,
            format!(
                "no limit is named {}",
                stateous_shared::pyrepr::repr_str(name)
            ),
        );
    }
    tx.journal_append(JOURNAL_SUBJECT, name, "removed", &Object::new())?;
    Ok(())
}

/// A limit with the slots it holds now.
fn view(tx: &dyn Tx, pool: Pool) -> Step<LimitView> {
    let held = tx.held_slots(&pool.row)?;
    let mut keys: Vec<KeyUse> = Vec::new();
    for slot in &held {
        let key = key_words_or_empty(&slot.slot.key);
        match keys.iter_mut().find(|k| k.key == key) {
            Some(found) => found.used += 1,
            None => keys.push(KeyUse { key, used: 1 }),
        }
    }
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    let waiting = tx
        .task_counts()?
        .into_iter()
        .filter(|(state, status, _)| {
            *status == crate::store::TaskStatus::Queued
                && pool
                    .row
                    .states
                    .iter()
                    .any(|covered| covered.rsplit('/').next() == Some(state.as_str()))
        })
        .map(|(_, _, count)| count)
        .sum();
    let row = pool.row;
    Ok(LimitView {
        waiting,
        used: held.len() as i64,
        keys,
        name: row.name,
        states: row.states,
        max: row.max,
        per: row.per,
        rate: pool.rate.map(|r| r.words()),
        set_at: iso(from_micros(row.set_at)),
    })
}

fn key_words_or_empty(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        key_words(key)
    }
}

/// Every limit with the slots it holds now, by name.
pub fn list(tx: &dyn Tx) -> Step<Vec<LimitView>> {
    pools(tx)?.into_iter().map(|pool| view(tx, pool)).collect()
}

/// The slots held now in `pool` with `key`, for `token why` (none when no limit
/// has that name).
pub fn holders(tx: &dyn Tx, pool: &str, key: &str) -> Step<Vec<HeldSlot>> {
    let Some(limit) = tx.limits()?.into_iter().find(|limit| limit.name == pool) else {
        return Ok(Vec::new());
    };
    Ok(tx
        .held_slots(&limit)?
        .into_iter()
        .filter(|held| held.slot.key == key)
        .collect())
}
