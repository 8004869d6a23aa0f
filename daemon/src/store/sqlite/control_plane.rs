//! The SQL of `control_plane`: its one row.

use rusqlite::{params, OptionalExtension};

use super::{closed, SqliteTx};
use crate::store::{ClockKind, ControlPlane, ControlPlaneRow, StoreResult};

impl ControlPlane for SqliteTx<'_> {
    fn control_plane(&self) -> StoreResult<ControlPlaneRow> {
        let mut statement = self.prepare(
            "SELECT structure, checksum, serving, since, epoch FROM control_plane WHERE id = 1",
        )?;
        let row = statement
            .query_row([], |row| ControlPlaneRow::read(row))
            .optional()?;
        Ok(row.unwrap_or_default())
    }

    fn record_graph(&self, structure: &str, checksum: &str) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO control_plane (id, structure, checksum) VALUES (1, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET structure = ?1, checksum = ?2",
        )?;
        statement.execute(params![structure, checksum])?;
        Ok(())
    }

    fn set_serving(&self, serving: Option<&str>, since: Option<i64>) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO control_plane (id, serving, since) VALUES (1, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET serving = ?1, since = ?2",
        )?;
        statement.execute(params![serving, since])?;
        Ok(())
    }

    fn next_epoch(&self) -> StoreResult<i64> {
        let mut statement =
            self.prepare("UPDATE control_plane SET epoch = epoch + 1 WHERE id = 1")?;
        statement.execute([])?;
        Ok(self.control_plane()?.epoch)
    }

    fn served_clock(&self) -> StoreResult<Option<ClockKind>> {
        let mut statement = self.prepare("SELECT clock FROM control_plane WHERE id = 1")?;
        let text: Option<Option<String>> = statement.query_row([], |row| row.get(0)).optional()?;
        Ok(match text.flatten() {
            Some(text) => Some(closed(text)?),
            None => None,
        })
    }

    fn record_clock(&self, kind: ClockKind) -> StoreResult<()> {
        let mut statement = self.prepare("UPDATE control_plane SET clock = ?1 WHERE id = 1")?;
        statement.execute([kind.as_str()])?;
        Ok(())
    }
}
