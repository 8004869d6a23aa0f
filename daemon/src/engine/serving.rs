//! Whether a graph may serve a database: the kind of clock, the workflow of the
//! live tokens, and the structure check, against what the database has on record;
//! a start that passes puts the graph and its clock on record. Who holds the
//! database, and the record that says so, is the store's (`store/serving.rs`).

use stateous_shared::graph::Graph;

use super::{py, Step};
use crate::store::{ClockKind, GraphRow, Tx};

/// Whether `graph` may serve this database, on a clock of `kind`: the refusal's
/// sentence, else `Ok`. Reads only, so a standby checks it before it holds the
/// database (`Control::check`), and a start checks it again once it holds it
/// ([`check_and_record`]).
pub fn check(tx: &dyn Tx, graph: &Graph, kind: ClockKind) -> Step<Result<(), String>> {
    if let Err(refused) = check_clock(tx, kind)? {
        return Ok(Err(refused));
    }
    if let Err(refused) = check_workflow(tx, graph)? {
        return Ok(Err(refused));
    }
    check_structure(tx, graph)
}

/// [`check`], then, when it passes, put the graph and the clock on record. The
/// holder of the database runs it once at start.
pub fn check_and_record(tx: &dyn Tx, graph: &Graph, kind: ClockKind) -> Step<Result<(), String>> {
    let checked = check(tx, graph, kind)?;
    if checked.is_ok() {
        record_structure(tx, graph)?;
        record_clock(tx, kind)?;
    }
    Ok(checked)
}

/// Refuse a new structure only where the live tokens' graph is not kept: a
/// database upgraded from before `graphs` (schema 0010) knows the checksum of
/// the graph on record but not its document. Any kept graph serves its tokens
/// (`docs/guarantees.md`, "Workflow versions"). Writes nothing.
fn check_structure(tx: &dyn Tx, graph: &Graph) -> Step<Result<(), String>> {
    let row = tx.control_plane()?;
    let (Some(structure), Some(checksum)) = (&row.structure, &row.checksum) else {
        return Ok(Ok(()));
    };
    if *structure == graph.structure || kept(tx, checksum)? {
        return Ok(Ok(()));
    }
    let live = live_on(tx, checksum)?;
    if live > 0 {
        return Ok(Err(format!(
            "refusing to serve: {live} token(s) are active or paused on a graph of another \
             structure than this graph file's, which this database does not keep (it was \
             served before workflow versions); serve the graph file they started on once, \
             so that it is kept, then this one"
        )));
    }
    Ok(Ok(()))
}

/// Refuse a graph whose main workflow is not the workflow of the live top tokens
/// (no parent; active or paused): a database holds one workflow, in as many
/// versions as it likes, so another workflow's graph is almost surely given the
/// wrong database, and its supervisors would claim the other workflow's tasks by
/// state name. Ended tokens do not count; nor do tokens on a graph that is not
/// kept ([`check_structure`] judges those). Writes nothing.
fn check_workflow(tx: &dyn Tx, graph: &Graph) -> Step<Result<(), String>> {
    let name = &graph.main.name;
    // Most databases keep graphs of one workflow only: then no token is counted.
    if tx.graphs()?.iter().all(|row| row.workflow == *name) {
        return Ok(Ok(()));
    }
    let live = tx.live_of_other_workflows(name)?;
    if live.is_empty() {
        return Ok(Ok(()));
    }
    let held: Vec<String> = live
        .iter()
        .map(|(workflow, count)| format!("{count} live token(s) of the workflow {}", py(workflow)))
        .collect();
    let comma = if held.len() > 1 { "," } else { "" };
    Ok(Err(format!(
        "the database holds {}{comma} and this graph is the workflow {}: serve it on a \
         database of its own (--db), or end those tokens first",
        held.join(" and "),
        py(name)
    )))
}

/// Whether `graphs` keeps the graph of `checksum`.
fn kept(tx: &dyn Tx, checksum: &str) -> Step<bool> {
    Ok(tx.graphs()?.iter().any(|row| row.checksum == checksum))
}

/// How many tokens run on the graph of `checksum` and are active or paused.
fn live_on(tx: &dyn Tx, checksum: &str) -> Step<i64> {
    let counts = tx.graph_counts()?;
    Ok(counts
        .iter()
        .filter(|(graph, status, _)| graph.as_deref() == Some(checksum) && status.live())
        .map(|(_, _, count)| count)
        .sum())
}

/// Keep the graph in `graphs` (or mark it served again), and put it on record.
/// Tokens of a graph on record that is not kept (a database upgraded from before
/// schema 0010) and of the same structure are named as running on this one.
fn record_structure(tx: &dyn Tx, graph: &Graph) -> Step<()> {
    let row = tx.control_plane()?;
    if let Some(old) = &row.checksum {
        let same = row.structure.as_deref() == Some(graph.structure.as_str());
        if same && *old != graph.checksum && !kept(tx, old)? {
            tx.adopt_graph(old, &graph.checksum)?;
        }
    }
    let now = tx.now();
    tx.graph_served(&GraphRow {
        checksum: graph.checksum.clone(),
        workflow: graph.main.name.clone(),
        structure: graph.structure.clone(),
        document: graph.document.to_string(),
        first_served: now,
        last_served: now,
    })?;
    if row.structure.as_deref() != Some(graph.structure.as_str())
        || row.checksum.as_deref() != Some(graph.checksum.as_str())
    {
        tx.record_graph(&graph.structure, &graph.checksum)?;
    }
    Ok(())
}

/// The refusal of `serve --dev-clock` on a database that a control plane on the
/// real clock served (the dev clock's own guarantee: it never fires a real
/// clock's timers early).
pub const DEV_CLOCK_REFUSED: &str = "refusing --dev-clock: a control plane on the real clock \
                                     served this database, and a moved clock would fire its \
                                     timers and end its leases early; serve it without \
                                     --dev-clock, or give --dev-clock a new database";

/// Refuse a dev clock on a database that a control plane on the real clock
/// served; a real clock may serve any database. Writes nothing.
fn check_clock(tx: &dyn Tx, kind: ClockKind) -> Step<Result<(), String>> {
    if kind == ClockKind::Dev && tx.served_clock()? == Some(ClockKind::System) {
        return Ok(Err(DEV_CLOCK_REFUSED.to_string()));
    }
    Ok(Ok(()))
}

/// Record that a clock of `kind` serves the database. Once a real clock served
/// it, it stays `System`: a dev clock can never serve it again.
fn record_clock(tx: &dyn Tx, kind: ClockKind) -> Step<()> {
    let served = tx.served_clock()?;
    if served != Some(kind) && served != Some(ClockKind::System) {
        tx.record_clock(kind)?;
    }
    Ok(())
}
