//! The serving record (reference `docs/inside/workflows.md`, "Serve"): the
//! `control_plane` row says which control plane holds the database, and since when;
//! the structure check puts the served graph on record.

use chrono::Timelike;
use stateous_shared::graph::Graph;
use stateous_shared::time::from_micros;

use super::Step;
use crate::store::Tx;

/// Whether the row lets `holder` take the database: no one holds it, `holder`
/// does, or the hold is older than `stale` microseconds.
fn free(serving: Option<&str>, since: Option<i64>, holder: &str, now: i64, stale: i64) -> bool {
    match (serving, since) {
        (None, _) | (_, None) => true,
        (Some(who), _) if who == holder => true,
        (_, Some(since)) => since.saturating_add(stale) < now,
    }
}

/// Take the database for `holder`, or say in one sentence who holds it.
///
/// `gone(who)` tells whether the holder named in the record is known to be dead
/// (the caller checks the process table of this host): then its record is taken at
/// once instead of after `stale`, so a daemon killed with SIGKILL restarts without
/// waiting. The reference always waits; this is ours.
pub fn take_hold<T: Tx>(
    tx: &T,
    holder: &str,
    stale: i64,
    gone: &dyn Fn(&str) -> bool,
) -> Step<Result<(), String>> {
    let row = tx.control_plane()?;
    let now = tx.now();
    let dead = row.serving.as_deref().is_some_and(gone);
    if !dead && !free(row.serving.as_deref(), row.since, holder, now, stale) {
        let who = row.serving.unwrap_or_default();
        let seen = from_micros(row.since.unwrap_or(0));
        let at = format!(
            "{:02}:{:02}:{:02}",
            seen.hour(),
            seen.minute(),
            seen.second()
        );
        return Ok(Err(format!(
            "another control plane serves this database ({who}, last seen at {at} UTC); \
             stop it first"
        )));
    }
    tx.set_serving(Some(holder), Some(now))?;
    Ok(Ok(()))
}

/// Check the hold again and renew `since` when it is older than `renew_every`. A
/// lapsed hold that no one else took is taken back. False: another control plane
/// took the database, and this one must stop.
pub fn keep_hold<T: Tx>(tx: &T, holder: &str, renew_every: i64, stale: i64) -> Step<bool> {
    let row = tx.control_plane()?;
    let now = tx.now();
    if row.serving.as_deref() == Some(holder) {
        if let Some(since) = row.since {
            if now - since >= renew_every {
                tx.set_serving(Some(holder), Some(now))?;
            }
            return Ok(true);
        }
    }
    if !free(row.serving.as_deref(), row.since, holder, now, stale) {
        return Ok(false);
    }
    tracing::warn!("this control plane took its hold on the database again");
    tx.set_serving(Some(holder), Some(now))?;
    Ok(true)
}

/// Give up the hold, if `holder` has it.
pub fn release<T: Tx>(tx: &T, holder: &str) -> Step<()> {
    if tx.control_plane()?.serving.as_deref() == Some(holder) {
        tx.set_serving(None, None)?;
    }
    Ok(())
}

/// Refuse a new structure while tokens are active or paused (the reference's
/// sentence); else put the graph on record when it is not there yet.
pub fn check_structure<T: Tx>(tx: &T, graph: &Graph) -> Step<Result<(), String>> {
    let row = tx.control_plane()?;
    if let (Some(structure), Some(_)) = (&row.structure, &row.checksum) {
        if *structure != graph.structure {
            let live = tx.count_live()?;
            if live > 0 {
                return Ok(Err(format!(
                    "refusing to serve: {live} token(s) are active or paused on another \
                     structure of the workflow {}; serve the graph file they started on \
                     until they end, or cancel them",
                    super::py(&graph.main.name)
                )));
            }
        }
    }
    if row.structure.as_deref() != Some(graph.structure.as_str())
        || row.checksum.as_deref() != Some(graph.checksum.as_str())
    {
        tx.record_graph(&graph.structure, &graph.checksum)?;
    }
    Ok(Ok(()))
}
