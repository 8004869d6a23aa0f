//! The server settings a Postgres database needs for an acknowledged change to
//! survive a power loss (`docs/how-to/use-postgres.md`, "Durability"): `fsync` and
//! `full_page_writes` on, and `synchronous_commit` not `off`. A control plane
//! answers a change once its commit returns; with these settings off, the server
//! may lose a commit it reported, or leave torn pages after a crash. `serve` warns
//! of each at the start, and serves anyway: the operator may have chosen it.

use super::conn::PgConn;
use super::get;
use crate::store::StoreResult;

/// One sentence for each setting of the session on `conn` that breaks the
/// promise; none when all keep it.
pub fn weak_settings(conn: &mut PgConn) -> StoreResult<Vec<String>> {
    let rows = conn.query(
        "SELECT name, setting FROM pg_settings
         WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit') ORDER BY name",
        &[],
    )?;
    let mut weak = Vec::new();
    for row in &rows {
        let (name, setting): (String, String) = (get(row, 0)?, get(row, 1)?);
        // `synchronous_commit` may also be `local`, `remote_write`, `on` or
        // `remote_apply`: each flushes the commit on this server first.
        if setting == "off" {
            weak.push(warning(&name));
        }
    }
    Ok(weak)
}

fn warning(name: &str) -> String {
    let what = match name {
        "fsync" => {
            "the server does not flush its writes to disk, so a power loss or an \
                    operating system crash can lose acknowledged changes or corrupt the database"
        }
        "full_page_writes" => {
            "a crash in the middle of a page's write can leave it torn, \
                               and the database corrupt"
        }
        _ => {
            "the server reports a commit before it is on disk, so a power loss or a \
              server crash can lose the last acknowledged changes"
        }
    };
    format!(
        "the Postgres setting {name} is off: {what}; turn it on for the guarantees of \
         docs/guarantees.md (docs/how-to/use-postgres.md, \"Durability\")"
    )
}
