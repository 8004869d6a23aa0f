//! The SQL of `control_plane`: its one row.

use super::{closed, get, PgTx};
use crate::store::{ClockKind, ControlPlane, ControlPlaneRow, StoreResult};

impl ControlPlane for PgTx<'_> {
    fn control_plane(&self) -> StoreResult<ControlPlaneRow> {
        let found = self.query_opt(
            "SELECT structure, checksum, serving, since, epoch FROM control_plane WHERE id = 1",
            &[],
        )?;
        Ok(found
            .as_ref()
            .map(ControlPlaneRow::read)
            .transpose()?
            .unwrap_or_default())
    }

    fn record_graph(&self, structure: &str, checksum: &str) -> StoreResult<()> {
        self.execute(
            "INSERT INTO control_plane (id, structure, checksum) VALUES (1, $1, $2)
             ON CONFLICT (id) DO UPDATE SET structure = $1, checksum = $2",
            &[&structure, &checksum],
        )?;
        Ok(())
    }

    fn set_serving(&self, serving: Option<&str>, since: Option<i64>) -> StoreResult<()> {
        self.execute(
            "INSERT INTO control_plane (id, serving, since) VALUES (1, $1, $2)
             ON CONFLICT (id) DO UPDATE SET serving = $1, since = $2",
            &[&serving, &since],
        )?;
        Ok(())
    }

    fn next_epoch(&self) -> StoreResult<i64> {
        // Exclusive: waits until every commit that checked the old epoch has ended
        // (each holds this lock shared from its check to its end), so no commit of
        // the control plane that held the database before lands after this one.
        self.query_one(
            "SELECT pg_advisory_xact_lock(hashtextextended('@stateous/epoch', 0))",
            &[],
        )?;
        let rows = self.change_rows(
            "UPDATE control_plane SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
            &[],
        )?;
        match rows.first() {
            Some(row) => get(row, 0),
            None => Err(crate::store::StoreError::Database(
                "no control plane record to move the epoch of".into(),
            )),
        }
    }

    fn served_clock(&self) -> StoreResult<Option<ClockKind>> {
        let found = self.query_opt("SELECT clock FROM control_plane WHERE id = 1", &[])?;
        match found {
            Some(row) if get::<Option<String>>(&row, 0)?.is_some() => Ok(Some(closed(&row, 0)?)),
            _ => Ok(None),
        }
    }

    fn record_clock(&self, kind: ClockKind) -> StoreResult<()> {
        self.execute(
            "UPDATE control_plane SET clock = $1 WHERE id = 1",
            &[&kind.as_str()],
        )?;
        Ok(())
    }
}
