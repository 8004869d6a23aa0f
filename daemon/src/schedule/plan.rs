//! Which of a schedule's occurrences that fell due start, and which are skipped, by
//! its catch-up policy (`docs/schedules.md`, "Catch-up"): a pure function of the
//! schedule, its next occurrence on record and `now`.
//!
//! An occurrence is on time while its due moment (its instant and its jitter) is
//! at most [`GRACE`] ago: a clock that ticks every second meets each such one.
//! One further behind was missed: no control plane ran at its moment (an
//! outage, a restart, a standby that had not yet taken over). On-time ones always
//! start (subject to the overlap policy); missed ones start as the policy says:
//! - `none`: none of them;
//! - `latest`: one, the latest, unless an on-time one starts anyway;
//! - `all`: each one within the window, at most the cap, the latest ones first kept.

use super::Compiled;
use crate::store::CatchUp;

/// How far behind its due moment an occurrence is still on time, in microseconds.
pub const GRACE: i64 = 10_000_000;

/// At most this many missed occurrences are walked one by one to count them; past
/// that the count is a lower bound.
const MOST_COUNTED: i64 = 1000;

/// At most this many occurrences are walked in one plan (a window of a day holds
/// 86,400 of a schedule of every second).
const MOST_WALKED: usize = 100_000;

/// A schedule's catch-up policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// What happens to missed occurrences.
    pub catch_up: CatchUp,
    /// `all`: how far back a missed occurrence may lie, in microseconds.
    pub window: i64,
    /// `all`: the most starts of one catch-up.
    pub cap: i64,
}

/// An occurrence to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// Its instant, in microseconds since 1970.
    pub at: i64,
    /// Whether it starts later than [`GRACE`] after its due moment (a catch-up).
    pub late: bool,
}

/// A run of occurrences that do not start, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    /// How many (at least this many when `more`).
    pub count: i64,
    /// The count is a lower bound: there were more than were counted.
    pub more: bool,
    /// The first one's instant.
    pub first: i64,
    /// The last one's instant.
    pub last: i64,
    /// Why they do not start: one sentence.
    pub reason: String,
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The occurrences to start, in order.
    pub starts: Vec<Due>,
    /// The runs of occurrences that do not start.
    pub missed: Vec<Missed>,
    /// The next occurrence not yet due; `None` when none comes.
    pub next: Option<i64>,
}

/// The plan of a schedule whose next occurrence on record is `next_at`, at `now`.
pub fn plan(schedule: &Compiled, policy: &Policy, next_at: i64, now: i64) -> Plan {
    let floor = match policy.catch_up {
        CatchUp::All => now - policy.window.max(GRACE),
        CatchUp::None | CatchUp::Latest => now - GRACE,
    };
    let calendar = &schedule.calendar;
    // The missed ones: due before the floor.
    let mut old = Run::default();
    let mut at = Some(next_at);
    while let Some(a) = at {
        let due = schedule.due(a);
        if due > now || due >= floor {
            break;
        }
        old.add(a);
        if old.count >= MOST_COUNTED {
            // Too many to walk: the last of them is looked up, and the walk goes
            // on from the floor.
            old.more = true;
            old.last = calendar.last_before(floor, floor - next_at).unwrap_or(a);
            at = calendar.next_after(floor.max(a) - 1);
            break;
        }
        at = calendar.next_after(a);
    }
    // The recent ones: due from the floor to now; `all` keeps its cap of them.
    let keep = match policy.catch_up {
        CatchUp::All => policy.cap.max(1) as usize,
        CatchUp::None | CatchUp::Latest => MOST_WALKED,
    };
    let mut recent: std::collections::VecDeque<i64> = Default::default();
    let mut capped = Run::default();
    let mut walked = 0;
    while let Some(a) = at {
        if schedule.due(a) > now || walked >= MOST_WALKED {
            break;
        }
        walked += 1;
        recent.push_back(a);
        if recent.len() > keep {
            if let Some(dropped) = recent.pop_front() {
                capped.add(dropped);
            }
        }
        at = calendar.next_after(a);
    }
    if walked >= MOST_WALKED {
        // Pathological (a window of months of an occurrence every second): what
        // is left before now is counted among the capped, and the walk ends.
        capped.more = true;
        at = calendar.next_after(now);
        while let Some(a) = at.filter(|a| schedule.due(*a) <= now) {
            at = calendar.next_after(a);
        }
    }
    let late = |a: i64| schedule.due(a) < now - GRACE;
    let mut starts: Vec<Due> = recent
        .iter()
        .map(|&a| Due {
            at: a,
            late: late(a),
        })
        .collect();
    let mut missed = Vec::new();
    match policy.catch_up {
        CatchUp::None => old.reported(
            &mut missed,
            "missed while no control plane ran (catch-up none)",
        ),
        CatchUp::Latest if starts.is_empty() && old.count > 0 => {
            starts.push(Due {
                at: old.last,
                late: true,
            });
            old.count -= 1;
            old.last = if old.more {
                calendar
                    .last_before(old.last, old.last - old.first)
                    .unwrap_or(old.first)
            } else {
                old.before_last
            };
            old.reported(
                &mut missed,
                "missed while no control plane ran; the latest one started for them (catch-up latest)",
            );
        }
        CatchUp::Latest => old.reported(
            &mut missed,
            "missed while no control plane ran; a later occurrence started (catch-up latest)",
        ),
        CatchUp::All => {
            old.reported(
                &mut missed,
                &format!(
                    "missed while no control plane ran, before the catch-up window of {}",
                    stateous_shared::durations::span((policy.window / 1_000_000) as f64)
                ),
            );
            capped.reported(
                &mut missed,
                &format!(
                    "missed while no control plane ran, beyond the catch-up cap of {} starts",
                    policy.cap
                ),
            );
        }
    }
    Plan {
        starts,
        missed,
        next: at,
    }
}

/// A run of occurrences counted as they are walked.
#[derive(Debug, Default)]
struct Run {
    count: i64,
    more: bool,
    first: i64,
    last: i64,
    before_last: i64,
}

impl Run {
    fn add(&mut self, at: i64) {
        if self.count == 0 {
            self.first = at;
        }
        self.count += 1;
        self.before_last = self.last;
        self.last = at;
    }

    fn reported(&self, missed: &mut Vec<Missed>, reason: &str) {
        if self.count > 0 {
            missed.push(Missed {
                count: self.count,
                more: self.more,
                first: self.first,
                last: self.last,
                reason: reason.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::calendar::utc;

    const MINUTE: i64 = 60_000_000;

    fn at(text: &str) -> i64 {
        stateous_shared::time::parse_iso(text)
            .unwrap()
            .timestamp_micros()
    }

    fn schedule(spec: &str) -> Compiled {
        Compiled::new("s", spec, "UTC", "s-{occurrence}", 0).unwrap()
    }

    fn times(starts: &[Due]) -> Vec<String> {
        starts
            .iter()
            .map(|d| stateous_shared::time::iso(utc(d.at)))
            .collect()
    }

    fn policy(catch_up: CatchUp, cap: i64) -> Policy {
        Policy {
            catch_up,
            window: 2 * 86_400_000_000,
            cap,
        }
    }

    #[test]
    fn on_time_the_one_due_starts_and_the_next_is_recorded() {
        let every = schedule("every 10m");
        let plan = plan(
            &every,
            &policy(CatchUp::Latest, 10),
            at("2027-01-01T00:10:00Z"),
            at("2027-01-01T00:10:00.5Z"),
        );
        assert_eq!(times(&plan.starts), ["2027-01-01T00:10:00Z"]);
        assert!(!plan.starts[0].late);
        assert!(plan.missed.is_empty());
        assert_eq!(plan.next, Some(at("2027-01-01T00:20:00Z")));
    }

    #[test]
    fn after_a_day_away_latest_starts_one_all_starts_the_cap_and_none_starts_none() {
        let every = schedule("every 1h");
        let (from, now) = (at("2027-01-01T01:00:00Z"), at("2027-01-02T00:30:00Z"));
        let latest = plan(&every, &policy(CatchUp::Latest, 10), from, now);
        assert_eq!(times(&latest.starts), ["2027-01-02T00:00:00Z"]);
        assert!(latest.starts[0].late);
        assert_eq!(latest.missed[0].count, 23);
        let all = plan(&every, &policy(CatchUp::All, 3), from, now);
        assert_eq!(
            times(&all.starts),
            [
                "2027-01-01T22:00:00Z",
                "2027-01-01T23:00:00Z",
                "2027-01-02T00:00:00Z"
            ]
        );
        assert_eq!(all.missed[0].count, 21);
        assert!(
            all.missed[0].reason.contains("cap of 3"),
            "{:?}",
            all.missed
        );
        let none = plan(&every, &policy(CatchUp::None, 10), from, now);
        assert!(none.starts.is_empty());
        assert_eq!(none.missed[0].count, 24);
        for plan in [latest, all, none] {
            assert_eq!(plan.next, Some(at("2027-01-02T01:00:00Z")));
        }
    }

    #[test]
    fn a_window_leaves_out_what_is_older_and_a_long_outage_is_counted_in_bounds() {
        let every = schedule("every 1m");
        let from = at("2027-01-01T00:00:00Z");
        let now = from + 3 * 86_400_000_000;
        let window = Policy {
            catch_up: CatchUp::All,
            window: 5 * MINUTE,
            cap: 10,
        };
        let all = plan(&every, &window, from, now);
        assert_eq!(all.starts.len(), 6, "the window's 5 minutes, ends included");
        assert!(all.missed[0].more);
        assert!(
            all.missed[0].reason.contains("window of 5m"),
            "{:?}",
            all.missed
        );
        let latest = plan(&every, &policy(CatchUp::Latest, 10), from, now);
        assert_eq!(latest.starts.len(), 1);
        assert_eq!(latest.starts[0].at, now);
    }
}
