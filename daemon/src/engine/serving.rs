//! Whether a graph may serve a database: the structure check, and the kind of
//! clock, against what the `control_plane` row has on record; a start that passes
//! puts the graph and its clock on record. Who holds the database, and the record
//! that says so, is the store's (`store/serving.rs`).

use stateous_shared::graph::Graph;

use super::Step;
use crate::store::{ClockKind, Tx};

/// Whether `graph` may serve this database, on a clock of `kind`: the refusal's
/// sentence, else `Ok`. Reads only, so a standby checks it before it holds the
/// database (`Control::check`), and a start checks it again once it holds it
/// ([`check_and_record`]).
pub fn check(tx: &dyn Tx, graph: &Graph, kind: ClockKind) -> Step<Result<(), String>> {
    if let Err(refused) = check_clock(tx, kind)? {
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

/// Refuse a new structure while tokens are active or paused. Writes nothing.
///
/// The reference's sentence named the workflow of the graph being served, as if
/// the live tokens ran it; they run the graph on record, whose workflow's name the
/// database does not keep (only the structure's checksum). So the sentence names
/// no workflow: the graph on record is "another structure than this graph file's".
fn check_structure(tx: &dyn Tx, graph: &Graph) -> Step<Result<(), String>> {
    let row = tx.control_plane()?;
    if let (Some(structure), Some(_)) = (&row.structure, &row.checksum) {
        if *structure != graph.structure {
            let live = tx.count_live()?;
            if live > 0 {
                return Ok(Err(format!(
                    "refusing to serve: {live} token(s) are active or paused on a graph \
                     of another structure than this graph file's; serve the graph file \
                     they started on until they end, or cancel them"
                )));
            }
        }
    }
    Ok(Ok(()))
}

/// Put the graph on record when it is not there yet.
fn record_structure(tx: &dyn Tx, graph: &Graph) -> Step<()> {
    let row = tx.control_plane()?;
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
