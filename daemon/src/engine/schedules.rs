//! A schedule's settings (`docs/schedules.md`): add or change, pause, resume and
//! remove, each one transaction that writes the schedule and its journal entry
//! (with the access key that asked); and what the API says of a schedule.

use serde_json::json;
use stateous_shared::refusal::Code;
use stateous_shared::schedules::{Coming, ScheduleView, Skipped};
use stateous_shared::time::{from_micros, iso as iso_moment};
use stateous_shared::wire::Object;

use super::occurrence::{compiled, journal, not_found, SUBJECT};
use super::start::start_transition;
use super::{refuse, Rules, Step};
use crate::schedule::{iso, Compiled, ScheduleInput};
use crate::store::{ScheduleRow, ScheduleStatus, TokenStatus, Tx};

/// How many coming occurrences a view shows.
const COMING: usize = 3;

/// How many of the latest skipped occurrences a view shows.
const SKIPPED: i64 = 5;

/// `POST /schedules`: add the schedule, or with `replace` change the one of that
/// name (it keeps its status, last token and waiting occurrence; its next
/// occurrence is counted again from now). The context is checked against the
/// workflow's model, written for the next occurrence.
pub fn add(rules: &Rules, tx: &dyn Tx, input: &ScheduleInput) -> Step<(ScheduleRow, bool)> {
    let now = tx.now();
    let compiled = &input.compiled;
    let Some(next_at) = compiled.calendar.next_after(now) else {
        return refuse(
            Code::InvalidSchedule,
            format!("'{}' has no occurrence from now on", input.spec),
        );
    };
    check_context(rules, compiled, &input.context, next_at)?;
    let existing = tx.lock_schedule(&input.name)?;
    if existing.is_some() && !input.replace {
        return refuse(
            Code::ScheduleExists,
            format!(
                "a schedule named {} exists already; give replace (stateous schedule add \
                 --replace) to change it",
                input.name
            ),
        );
    }
    let mut row = ScheduleRow {
        name: input.name.clone(),
        spec: input.spec.clone(),
        zone: input.zone.clone(),
        token: input.token.clone(),
        context: serde_json::Value::Object(input.context.clone()).to_string(),
        jitter: input.jitter,
        overlap: input.overlap,
        catch_up: input.catch_up,
        window: input.window,
        cap: input.cap,
        status: ScheduleStatus::Active,
        next_at: Some(next_at),
        next_due: Some(compiled.due(next_at)),
        last_token: None,
        last_at: None,
        buffered: None,
        created_at: now,
        changed_at: now,
    };
    let kind = match &existing {
        Some(old) => {
            row.status = old.status;
            row.last_token.clone_from(&old.last_token);
            row.last_at = old.last_at;
            row.buffered = old.buffered;
            row.created_at = old.created_at;
            tx.put_schedule(&row)?;
            "changed"
        }
        None => {
            tx.put_schedule(&row)?;
            "added"
        }
    };
    let mut data = settings(&row);
    data["next"] = iso(next_at).into();
    journal(tx, &row.name, kind, data)?;
    Ok((row, existing.is_none()))
}

/// The context template written for the occurrence at `at`, checked as a start
/// would check it: the workflow's model (`invalid_context`) and a transition from
/// START that holds.
fn check_context(rules: &Rules, compiled: &Compiled, context: &Object, at: i64) -> Step<()> {
    let workflow = &rules.graph.main;
    let values = workflow.with_defaults(&compiled.context(context, at));
    let errors = workflow.context_errors(&values);
    if !errors.is_empty() {
        return refuse(
            Code::InvalidContext,
            format!(
                "the context template, written for the next occurrence, does not fit the \
                 workflow {}: {}",
                workflow.name,
                errors.join("; ")
            ),
        );
    }
    start_transition(workflow, &values)?;
    Ok(())
}

/// The settings of a schedule, as its journal entries record them.
fn settings(row: &ScheduleRow) -> serde_json::Value {
    json!({
        "spec": row.spec,
        "zone": row.zone,
        "token": row.token,
        "context": serde_json::from_str::<serde_json::Value>(&row.context).unwrap_or_default(),
        "jitter_seconds": seconds(row.jitter),
        "overlap": row.overlap.as_str(),
        "catch_up": row.catch_up.as_str(),
        "window_seconds": seconds(row.window),
        "cap": row.cap,
    })
}

fn seconds(micros: i64) -> f64 {
    micros as f64 / 1e6
}

/// `POST /schedules/{name}/pause`: no occurrence starts until it resumes (a
/// paused one stays paused, and writes nothing).
pub fn pause(tx: &dyn Tx, name: &str) -> Step<ScheduleRow> {
    let mut row = locked(tx, name)?;
    if row.status == ScheduleStatus::Paused {
        return Ok(row);
    }
    row.status = ScheduleStatus::Paused;
    row.changed_at = tx.now();
    tx.put_schedule(&row)?;
    journal(tx, name, "paused", json!({}))?;
    Ok(row)
}

/// `POST /schedules/{name}/resume`: occurrences start again, from the first one
/// after now; those that fell in the pause do not start (a running one writes
/// nothing).
pub fn resume(tx: &dyn Tx, name: &str) -> Step<ScheduleRow> {
    let mut row = locked(tx, name)?;
    if row.status == ScheduleStatus::Active {
        return Ok(row);
    }
    let compiled = compiled(&row)?;
    let now = tx.now();
    row.status = ScheduleStatus::Active;
    row.next_at = compiled.calendar.next_after(now);
    row.next_due = row.next_at.map(|at| compiled.due(at));
    row.changed_at = now;
    tx.put_schedule(&row)?;
    let next = row.next_at.map(iso);
    journal(tx, name, "resumed", json!({"next": next}))?;
    Ok(row)
}

/// `DELETE /schedules/{name}`: the schedule is gone; the tokens it started stay,
/// and so does its journal.
pub fn remove(tx: &dyn Tx, name: &str) -> Step<()> {
    let row = locked(tx, name)?;
    tx.delete_schedule(&row.name)?;
    journal(tx, name, "removed", settings(&row))?;
    Ok(())
}

fn locked(tx: &dyn Tx, name: &str) -> Step<ScheduleRow> {
    tx.lock_schedule(name)?
        .ok_or_else(|| not_found(name).into())
}

/// `GET /schedules`: every schedule by name (at most `limit`, after `after`).
pub fn list(tx: &dyn Tx, after: Option<&str>, limit: i64) -> Step<Vec<ScheduleView>> {
    let rows = tx.schedules(after, limit)?;
    rows.into_iter()
        .map(|(row, status)| view(tx, &row, status))
        .collect()
}

/// `GET /schedules/{name}`.
pub fn show(tx: &dyn Tx, name: &str) -> Step<ScheduleView> {
    let (row, status) = tx
        .schedule(name)?
        .ok_or_else(|| -> super::Fail { not_found(name).into() })?;
    view(tx, &row, status)
}

/// What the API says of a schedule whose last token has `status`.
fn view(tx: &dyn Tx, row: &ScheduleRow, status: Option<TokenStatus>) -> Step<ScheduleView> {
    let compiled = compiled(row)?;
    let mut next = Vec::new();
    if row.status == ScheduleStatus::Active {
        let mut at = row.next_at;
        while let Some(moment) = at.filter(|_| next.len() < COMING) {
            next.push(Coming {
                at: iso(moment),
                local: crate::schedule::calendar::utc(moment)
                    .with_timezone(&compiled.calendar.zone())
                    .format("%Y-%m-%dT%H:%M:%S%:z")
                    .to_string(),
                token: compiled.token_id(moment),
            });
            at = compiled.calendar.next_after(moment);
        }
    }
    let skipped = tx
        .journal_latest(SUBJECT, &row.name, "skipped", SKIPPED)?
        .into_iter()
        .map(|entry| Skipped {
            occurrence: text(&entry.data, "occurrence"),
            count: entry
                .data
                .get("count")
                .and_then(|c| c.as_i64())
                .unwrap_or(1),
            reason: text(&entry.data, "reason"),
        })
        .collect();
    let context = serde_json::from_str(&row.context).unwrap_or_default();
    Ok(ScheduleView {
        name: row.name.clone(),
        spec: row.spec.clone(),
        zone: row.zone.clone(),
        token: row.token.clone(),
        context,
        jitter_seconds: seconds(row.jitter),
        overlap: row.overlap.as_str().to_string(),
        catch_up: row.catch_up.as_str().to_string(),
        window_seconds: seconds(row.window),
        cap: row.cap,
        status: row.status.as_str().to_string(),
        next,
        last_token: row.last_token.clone(),
        last_status: row
            .last_token
            .as_ref()
            .map(|_| status.map_or("pruned".to_string(), |s| s.as_str().to_string())),
        buffered: row.buffered.map(iso),
        skipped,
        created: iso_moment(from_micros(row.created_at)),
        changed: iso_moment(from_micros(row.changed_at)),
    })
}

fn text(data: &Object, key: &str) -> String {
    data.get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}
