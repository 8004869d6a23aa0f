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
use std::time::{Duration, Instant};

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

    /// The dev clock, standing at `micros` (microseconds since 1970) at first and
    /// running from there (`serve --dev-clock-at`).
    pub fn dev_at(micros: i64) -> Clock {
        let dev = Dev {
            ahead: micros - wall(),
            frozen: None,
        };
        Clock {
            source: Source::Dev(Arc::new(Mutex::new(dev))),
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
        self.moved(
            |at| {
                at.fetch_add(step, Ordering::SeqCst);
            },
            |dev| {
                dev.ahead = dev.ahead.saturating_add(step);
                dev.frozen = dev.frozen.map(|at| at.saturating_add(step));
            },
        );
    }

    /// Move a manual clock (`manual`) or a dev clock (`dev`); the system's clock
    /// stays where the wall clock is.
    fn moved(&self, manual: impl FnOnce(&AtomicI64), dev: impl FnOnce(&mut Dev)) {
        match &self.source {
            Source::System => {}
            Source::Manual(at) => manual(at),
            Source::Dev(_) => {
                if let Some(mut state) = self.locked_dev() {
                    dev(&mut state);
                }
            }
        }
    }

    /// Move a manual or dev clock to `at` (microseconds since 1970) unless it is
    /// there already: it never goes back.
    pub fn move_to(&self, at: i64) {
        self.moved(
            |now| {
                now.fetch_max(at, Ordering::SeqCst);
            },
            |dev| {
                let wall = wall();
                if dev.now(wall) < at {
                    match dev.frozen.as_mut() {
                        Some(frozen) => *frozen = at,
                        None => dev.ahead = at - wall,
                    }
                }
            },
        );
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

/// How long the control plane may go unseen (its pulse silent, or a write left
/// waiting for the write path) before that time counts as missed. A shorter stall
/// cannot cost a supervisor that heartbeats at the usual pace (every quarter of a
/// lease) its lease, and a busy machine's scheduling delays stay far below it.
pub const STALL_AFTER: Duration = Duration::from_secs(1);

/// How often the pulse notes that the control plane runs.
pub const PULSE_EVERY: Duration = Duration::from_millis(100);

/// The time in which the control plane itself did not run: the process was stopped
/// (SIGSTOP, a frozen VM, a suspended laptop) or its write path stood still (a long
/// disk pause). No supervisor could heartbeat then, so that time must not end its
/// lease (`docs/guarantees.md`, "Leases").
///
/// A pulse thread notes every [`PULSE_EVERY`] that the process runs; every write
/// also looks ([`Stalls::owed`]) before it judges a lease, so that a write that runs
/// first after a stall finds it even before the pulse runs again, and says how long
/// it waited for the write path ([`Stalls::waited`]). A silence of more
/// than [`STALL_AFTER`], measured on the monotonic clock and on the wall clock
/// (whichever moved more: a suspended machine's monotonic clock stands still), and
/// no longer than the control plane's own clock moved meanwhile (a frozen dev clock
/// owes nothing; an `advance` is not a stall), is owed to every claimed lease: each
/// runs at least as long again after the stall, and at most a whole lease. What is
/// owed stays owed until a committed write gave it ([`Stalls::settled`]).
///
/// A manual clock (tests) notes nothing by itself: time moves only by hand there,
/// so a test says when the control plane stalled ([`Stalls::stalled`]).
#[derive(Clone, Debug)]
pub struct Stalls {
    gaps: Arc<Mutex<Gaps>>,
    clock: Clock,
    /// A whole lease, in microseconds: the most a stall gives back.
    lease: i64,
}

#[derive(Debug, Default)]
struct Gaps {
    /// When the control plane was last seen running.
    seen: Option<Seen>,
    /// What the claimed leases are owed, until a committed write gave it.
    owed: Option<Owed>,
    /// How many stalls were found (so that a write settles only what it gave).
    found: u64,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    mono: Instant,
    wall: i64,
    now: i64,
}

/// What the claimed leases are owed after a stall: each must run at least until
/// `until` (microseconds since 1970, on the control plane's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owed {
    /// The moment every claimed lease must run at least until.
    pub until: i64,
    /// Which stall found it last.
    found: u64,
}

/// When a write was sent to the write path, for [`Stalls::waited`].
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    mono: Instant,
    now: i64,
}

impl Stalls {
    /// The stalls of a control plane on `clock` with leases of `lease`; on a clock
    /// other than a manual one, a pulse thread notes that the process runs until
    /// the last clone is dropped.
    pub fn watching(clock: Clock, lease: Duration) -> Stalls {
        let stalls = Stalls {
            gaps: Arc::new(Mutex::new(Gaps::default())),
            clock,
            lease: micros(lease),
        };
        if !stalls.clock.is_manual() {
            stalls.beat();
            let gaps = Arc::downgrade(&stalls.gaps);
            let (clock, lease) = (stalls.clock.clone(), stalls.lease);
            let pulse = std::thread::Builder::new()
                .name("stateous-pulse".into())
                .spawn(move || loop {
                    std::thread::sleep(PULSE_EVERY);
                    let Some(gaps) = gaps.upgrade() else { return };
                    let stalls = Stalls {
                        gaps,
                        clock: clock.clone(),
                        lease,
                    };
                    stalls.beat();
                });
            if let Err(error) = pulse {
                // Writes still look for stalls themselves; only a quiet one is missed.
                tracing::warn!("the clock's pulse thread could not start: {error}");
            }
        }
        stalls
    }

    fn gaps(&self) -> std::sync::MutexGuard<'_, Gaps> {
        // A panic while the lock was held leaves plain numbers behind.
        self.gaps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note that the control plane runs now; a silence before it is owed.
    fn beat(&self) {
        if self.clock.is_manual() {
            return;
        }
        let (mono, wall, now) = (Instant::now(), wall(), self.clock.now());
        let mut gaps = self.gaps();
        if let Some(seen) = gaps.seen {
            let silence = micros(mono.saturating_duration_since(seen.mono)).max(wall - seen.wall);
            if silence > micros(STALL_AFTER) {
                let missed = silence.min(now - seen.now);
                gaps.owe(now, missed, self.lease);
            }
        }
        gaps.seen = Some(Seen { mono, wall, now });
    }

    /// What the claimed leases are owed now, if anything, after looking for a
    /// stall that ended just now. A write gives it before it judges any lease.
    pub fn owed(&self) -> Option<Owed> {
        self.beat();
        self.gaps().owed
    }

    /// A committed write gave `owed`: it is settled, unless a later stall added to it.
    pub fn settled(&self, owed: Owed) {
        let mut gaps = self.gaps();
        if gaps.owed.is_some_and(|o| o.found == owed.found) {
            gaps.owed = None;
        }
    }

    /// A write sent now, for [`Stalls::waited`].
    pub fn sent(&self) -> Sent {
        Sent {
            mono: Instant::now(),
            now: self.clock.now(),
        }
    }

    /// A write sent at `sent` runs now: a wait of more than half a lease for the
    /// write path (a long disk pause) is time in which the control plane did not
    /// serve, and is owed. Half a lease, not [`STALL_AFTER`]: a loaded write path
    /// can keep every write waiting a second for a long while, and owing that each
    /// time would keep a dead supervisor's lease from ever ending; a wait of half a
    /// lease is an outage, and shorter ones cannot cost a supervisor that heartbeats
    /// every quarter of a lease its lease.
    pub fn waited(&self, sent: Sent) {
        if self.clock.is_manual() {
            return;
        }
        let waited = micros(sent.mono.elapsed());
        if waited > micros(STALL_AFTER).max(self.lease / 2) {
            let now = self.clock.now();
            self.gaps().owe(now, waited.min(now - sent.now), self.lease);
        }
    }

    /// Tests: the control plane did not run for `missed` up to now.
    pub fn stalled(&self, missed: Duration) {
        let now = self.clock.now();
        self.gaps().owe(now, micros(missed), self.lease);
    }
}

impl Gaps {
    /// Owe every claimed lease `missed` microseconds from `now`, at most `lease`.
    fn owe(&mut self, now: i64, missed: i64, lease: i64) {
        if missed <= 0 {
            return;
        }
        let until = now.saturating_add(missed.min(lease));
        self.found += 1;
        let until = self.owed.map_or(until, |owed| owed.until.max(until));
        self.owed = Some(Owed {
            until,
            found: self.found,
        });
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
    fn a_stall_owes_each_lease_its_length_at_most_a_lease_until_a_write_settles_it() {
        let clock = Clock::manual(1_000_000_000);
        let stalls = Stalls::watching(clock.clone(), Duration::from_secs(4));
        assert_eq!(
            stalls.owed(),
            None,
            "a manual clock notes no stall by itself"
        );
        stalls.stalled(Duration::from_secs(3));
        let first = stalls.owed().unwrap();
        assert_eq!(first.until, 1_003_000_000);
        // A longer stall before the first was given: at most a whole lease.
        clock.advance(Duration::from_secs(10));
        stalls.stalled(Duration::from_secs(10));
        let second = stalls.owed().unwrap();
        assert_eq!(second.until, 1_014_000_000);
        // A write that gave only the first settles nothing.
        stalls.settled(first);
        assert_eq!(stalls.owed(), Some(second));
        stalls.settled(second);
        assert_eq!(stalls.owed(), None);
        stalls.stalled(Duration::ZERO);
        assert_eq!(stalls.owed(), None, "no time missed, nothing owed");
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
