//! What the database's condition is, beyond serving (`GET /health`,
//! `docs/reference/http.md`): whether it answers in time (Postgres: a wait on the
//! server passed a deadline of this side and none answered since,
//! `store/postgres/conn.rs` `Answering`), and whether its disk is full (the last
//! write found it full, and none got through since). Each change is logged once,
//! not at every request or tick.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::store::{StoreError, StoreResult};

/// `GET /health`'s `database` when the database does not answer in time.
pub const NOT_ANSWERING: &str = "not_answering";

/// `GET /health`'s `database` when the database's disk is full.
pub const DISK_FULL: &str = "disk_full";

/// The sentence of `/health` while the database does not answer.
pub const NOT_ANSWERING_SENTENCE: &str = "the database does not answer: a request to it waited \
     past this control plane's time limit (the connect or statement timeout); requests answer \
     503 database_busy until it answers again";

/// Why the database cannot take requests now, as `/health` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trouble {
    /// `not_answering` or `disk_full`.
    pub database: &'static str,
    /// One sentence for the operator.
    pub sentence: &'static str,
}

/// Whether the last write found the disk full; noted by every write's outcome.
#[derive(Debug, Default)]
pub struct DiskWatch {
    full: AtomicBool,
}

impl DiskWatch {
    /// Note a write's outcome: a full disk sets the flag (logged once), a write
    /// that got through clears it (logged once); anything else says nothing of
    /// the disk.
    pub fn note<T>(&self, outcome: &StoreResult<T>) {
        match outcome {
            Err(StoreError::DiskFull) => {
                if !self.full.swap(true, Ordering::SeqCst) {
                    tracing::error!(
                        target: "stateous.serve",
                        "the disk of the database is full: writes answer 503 database_busy \
                         until space is freed on it; nothing was lost"
                    );
                }
            }
            Ok(_) => {
                if self.full.swap(false, Ordering::SeqCst) {
                    tracing::info!(
                        target: "stateous.serve",
                        "the disk of the database has room again: writes go on"
                    );
                }
            }
            Err(_) => {}
        }
    }

    /// True while the last write that reached the disk found it full.
    pub fn full(&self) -> bool {
        self.full.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_flagged_until_a_write_gets_through() {
        let disk = DiskWatch::default();
        assert!(!disk.full());
        disk.note::<()>(&Err(StoreError::DiskFull));
        disk.note::<()>(&Err(StoreError::DiskFull));
        assert!(disk.full());
        // A busy database says nothing of the disk.
        disk.note::<()>(&Err(StoreError::Busy));
        assert!(disk.full());
        disk.note(&Ok(()));
        assert!(!disk.full());
    }
}
