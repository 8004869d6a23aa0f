//! The clock: the only place in the control plane that reads the wall clock
//! (STYLE point 6). Everything else receives `now` in microseconds since 1970.
//!
//! Tests use a manual clock and move it by hand, so leases of minutes and timeouts
//! of hours pass in no time.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A source of `now`: the system's clock, or one that tests move by hand. Cheap to
/// clone; clones share the same time.
#[derive(Clone, Debug)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that stands at `micros` (microseconds since 1970) until moved.
    pub fn manual(micros: i64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(micros))),
        }
    }

    /// Now, in microseconds since 1970 (UTC).
    pub fn now(&self) -> i64 {
        match &self.manual {
            Some(micros) => micros.load(Ordering::SeqCst),
            None => chrono::Utc::now().timestamp_micros(),
        }
    }

    /// Move a manual clock forward; the system's clock ignores it.
    pub fn advance(&self, by: Duration) {
        if let Some(micros) = &self.manual {
            let step = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
            micros.fetch_add(step, Ordering::SeqCst);
        }
    }

    /// Whether tests move this clock by hand.
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }
}

/// A duration in microseconds, saturating.
pub fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}
