//! The SQL of `claims`: each supervisor's last claim with a request id; and the
//! writer's copy of those rows.

use std::cell::RefCell;
use std::sync::Mutex;

use foldhash::HashMap as FastMap;
use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::guard::locked;
use crate::store::{ClaimRow, Claims, StoreResult};

/// How many supervisors' rows [`KnownClaims`] keeps before it starts afresh.
const MOST_KNOWN: usize = 10_000;

/// Each supervisor's row of `claims` as committed (`None`: it has none), for the rows
/// the writer read or wrote. Every claim with a request id read its supervisor's row
/// first, a statement of its own (2% of the writer's instructions over `stateous
/// bench`); the one writer is the only one to change the table, so what it committed is
/// what the table holds.
#[derive(Debug, Default)]
pub struct KnownClaims {
    committed: Mutex<FastMap<String, Option<ClaimRow>>>,
}

/// Rows changed by a batch, by supervisor.
pub type Changed = FastMap<String, Option<ClaimRow>>;

impl KnownClaims {
    fn with<R>(&self, work: impl FnOnce(&mut FastMap<String, Option<ClaimRow>>) -> R) -> R {
        work(&mut locked(&self.committed, FastMap::clear))
    }

    /// A batch committed with these rows.
    pub fn publish(&self, changed: Changed) {
        self.with(|committed| {
            if committed.len() + changed.len() > MOST_KNOWN {
                committed.clear();
            }
            committed.extend(changed);
        });
    }
}

/// What one batch sees of [`KnownClaims`]: its kept requests' rows over the
/// committed ones, and the running request's over both.
#[derive(Debug)]
pub(super) struct ClaimsView<'w> {
    known: &'w KnownClaims,
    kept: RefCell<Changed>,
    request: RefCell<Changed>,
}

impl<'w> ClaimsView<'w> {
    pub(super) fn new(known: &'w KnownClaims) -> ClaimsView<'w> {
        ClaimsView {
            known,
            kept: RefCell::new(Changed::default()),
            request: RefCell::new(Changed::default()),
        }
    }

    fn get(&self, supervisor: &str) -> Option<Option<ClaimRow>> {
        if let Some(row) = self.request.borrow().get(supervisor) {
            return Some(row.clone());
        }
        if let Some(row) = self.kept.borrow().get(supervisor) {
            return Some(row.clone());
        }
        self.known
            .with(|committed| committed.get(supervisor).cloned())
    }

    /// The running request ended: keep its rows for the batch, or drop them.
    pub(super) fn request_done(&self, kept: bool) {
        let rows = std::mem::take(&mut *self.request.borrow_mut());
        if kept {
            self.kept.borrow_mut().extend(rows);
        }
    }

    /// The rows the batch's kept requests wrote.
    pub(super) fn take_kept(&self) -> Changed {
        std::mem::take(&mut *self.kept.borrow_mut())
    }
}

impl Claims for SqliteTx<'_> {
    fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
        if let Some(view) = &self.claims {
            if let Some(row) = view.get(supervisor) {
                return Ok(row);
            }
        }
        let found = self.read_claim(supervisor)?;
        // Not changed by this batch (every change is in the view), so this is the
        // committed row.
        if let Some(view) = &self.claims {
            let row = found.clone();
            view.known.with(|committed| {
                if committed.len() < MOST_KNOWN {
                    committed.insert(supervisor.to_string(), row);
                }
            });
        }
        Ok(found)
    }

    fn remember_claim(&self, row: &ClaimRow) -> StoreResult<()> {
        self.write_claim(row)?;
        if let Some(view) = &self.claims {
            view.request
                .borrow_mut()
                .insert(row.supervisor.clone(), Some(row.clone()));
        }
        Ok(())
    }
}

impl SqliteTx<'_> {
    fn read_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
        let mut statement = self.prepare(
            "SELECT supervisor, request, task_id, attempt FROM claims WHERE supervisor = ?1",
        )?;
        let found = statement
            .query_row([supervisor], |row| {
                Ok(ClaimRow {
                    supervisor: row.get(0)?,
                    request: row.get(1)?,
                    task_id: row.get(2)?,
                    attempt: row.get(3)?,
                })
            })
            .optional()?;
        Ok(found)
    }

    fn write_claim(&self, row: &ClaimRow) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO claims (supervisor, request, task_id, attempt) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
                 task_id = excluded.task_id, attempt = excluded.attempt",
        )?;
        statement.execute(params![
            row.supervisor,
            row.request,
            row.task_id,
            row.attempt
        ])?;
        Ok(())
    }
}
