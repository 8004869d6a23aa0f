//! The clock: the only place in the control plane that reads the wall clock, so that
//! every decision can be replayed and tested with a clock moved by hand. Everything
//! else receives `now` in microseconds since 1970.
//!
//! Three kinds: the system's clock; a manual clock that tests move by hand, so that
//! leases of minutes and timeouts of hours pass in no time; and the dev clock of `serve
//! --dev-clock`, the wall clock plus an offset that `stateous clock advance` grows,
//! which `stateous clock freeze` stops and `thaw` starts again. The dev clock never
//! goes back.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::ClockKind;

/// A source of `now`: the system's clock, one that tests move by hand, or the dev
/// clock. Cheap to clone; clones share the same time.
#[derive(Clone, Debug)]
pub struct Clock {
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    System,
    Manual(Arc<AtomicI64>),
    Dev(Arc<Mutex<Dev>>),
}

/// The dev clock's state.
#[derive(Debug, Default)]
struct Dev {
    /// How far ahead of the wall clock it runs, in microseconds, while it runs.
    ahead: i64,
    /// While frozen: the moment it stands at.
    frozen: Option<i64>,
}

impl Dev {
    fn now(&self, wall: i64) -> i64 {
        self.frozen.unwrap_or(wall.saturating_add(self.ahead))
    }
}

/// Where a dev clock stands (for `/health`, `/clock/...` and the TUI's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevState {
    /// Its `now`, in microseconds since 1970.
    pub now: i64,
    /// How far ahead of the wall clock it is, in microseconds (negative after a
    /// long freeze).
    pub ahead: i64,
    /// Whether it stands still.
    pub frozen: bool,
}

fn wall() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock {
            source: Source::System,
        }
    }

    /// A clock that stands at `micros` (microseconds since 1970) until moved.
    pub fn manual(micros: i64) -> Clock {
        Clock {
            source: Source::Manual(Arc::new(AtomicI64::new(micros))),
        }
    }

    /// The dev clock (`serve --dev-clock`): the wall clock until moved.
    pub fn dev() -> Clock {
        Clock {
            source: Source::Dev(Arc::new(Mutex::new(Dev::default()))),
        }
    }

    fn locked_dev(&self) -> Option<std::sync::MutexGuard<'_, Dev>> {
        match &self.source {
            // A panic while the lock was held leaves plain numbers behind.
            Source::Dev(dev) => Some(dev.lock().unwrap_or_else(|p| p.into_inner())),
            _ => None,
        }
    }

    /// Now, in microseconds since 1970 (UTC).
    pub fn now(&self) -> i64 {
        match &self.source {
            Source::System => wall(),
            Source::Manual(micros) => micros.load(Ordering::SeqCst),
            Source::Dev(_) => self.locked_dev().map_or_else(wall, |dev| dev.now(wall())),
        }
    }

    /// Move a manual or dev clock forward; the system's clock ignores it.
    pub fn advance(&self, by: Duration) {
        let step = micros(by);
        match &self.source {
            Source::System => {}
            Source::Manual(at) => {
                at.fetch_add(step, Ordering::SeqCst);
            }
            Source::Dev(_) => {
                if let Some(mut dev) = self.locked_dev() {
                    dev.ahead = dev.ahead.saturating_add(step);
                    dev.frozen = dev.frozen.map(|at| at.saturating_add(step));
                }
            }
        }
    }

    /// Move a manual or dev clock to `at` (microseconds since 1970) unless it is
    /// there already: it never goes back.
    pub fn move_to(&self, at: i64) {
        match &self.source {
            Source::System => {}
            Source::Manual(now) => {
                now.fetch_max(at, Ordering::SeqCst);
            }
            Source::Dev(_) => {
                if let Some(mut dev) = self.locked_dev() {
                    let wall = wall();
                    if dev.now(wall) < at {
                        match dev.frozen.as_mut() {
                            Some(frozen) => *frozen = at,
                            None => dev.ahead = at - wall,
                        }
                    }
                }
            }
        }
    }

    /// Stop a dev clock where it stands; false for another kind.
    pub fn freeze(&self) -> bool {
        let Some(mut dev) = self.locked_dev() else {
            return false;
        };
        let now = dev.now(wall());
        dev.frozen.get_or_insert(now);
        true
    }

    /// Let a frozen dev clock run again from where it stood; false for another kind.
    pub fn thaw(&self) -> bool {
        let Some(mut dev) = self.locked_dev() else {
            return false;
        };
        if let Some(at) = dev.frozen.take() {
            dev.ahead = at - wall();
        }
        true
    }

    /// Where a dev clock stands; `None` for another kind.
    pub fn dev_state(&self) -> Option<DevState> {
        let dev = self.locked_dev()?;
        let wall = wall();
        let now = dev.now(wall);
        Some(DevState {
            now,
            ahead: now - wall,
            frozen: dev.frozen.is_some(),
        })
    }

    /// The kind the database records: a dev clock is `Dev`; the system's and a
    /// test's manual clock are `System` (a manual clock stands in for the real one).
    pub fn kind(&self) -> ClockKind {
        match self.source {
            Source::Dev(_) => ClockKind::Dev,
            Source::System | Source::Manual(_) => ClockKind::System,
        }
    }

    /// Whether tests move this clock by hand.
    pub fn is_manual(&self) -> bool {
        matches!(self.source, Source::Manual(_))
    }
}

/// A duration in microseconds, saturating.
pub fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dev_clock_advances_freezes_and_thaws_without_going_back() {
        let clock = Clock::dev();
        assert_eq!(clock.kind(), ClockKind::Dev);
        let before = clock.now();
        clock.advance(Duration::from_secs(600));
        let state = clock.dev_state().unwrap();
        assert!(state.now >= before + 600_000_000, "{state:?}");
        assert!(state.ahead >= 600_000_000 && state.ahead < 601_000_000);
        assert!(clock.freeze());
        let frozen = clock.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.now(), frozen);
        clock.advance(Duration::from_secs(60));
        assert_eq!(clock.now(), frozen + 60_000_000);
        clock.move_to(frozen);
        assert_eq!(clock.now(), frozen + 60_000_000, "it never goes back");
        clock.move_to(frozen + 61_000_000);
        assert_eq!(clock.now(), frozen + 61_000_000);
        assert!(clock.dev_state().unwrap().frozen);
        assert!(clock.thaw());
        let thawed = clock.now();
        assert!(thawed >= frozen + 61_000_000 && thawed < frozen + 62_000_000);
        assert!(!clock.dev_state().unwrap().frozen);
    }

    #[test]
    fn only_a_dev_clock_freezes_and_only_it_is_recorded_as_dev() {
        let system = Clock::system();
        assert!(!system.freeze() && !system.thaw());
        assert_eq!(system.dev_state(), None);
        assert_eq!(system.kind(), ClockKind::System);
        let manual = Clock::manual(5);
        manual.move_to(9);
        manual.move_to(7);
        assert_eq!(manual.now(), 9);
        assert_eq!(manual.kind(), ClockKind::System);
    }
}
