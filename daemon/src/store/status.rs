//! The closed sets of the schema: a token's, a task's and a timer's status, a
//! timer's kind, and the kind of a ledger entry. Each is an enum
//! here, turned into the text the tables keep in one place ([`Closed::as_str`]), and
//! into the schema's CHECK lists in one place ([`check_list`]), so that a status is
//! never a string literal compared across the engine.

use std::fmt;

/// A closed set of names kept as text in a column.
pub trait Closed: Copy + Sized + 'static {
    /// Every member, in the order the reference lists them.
    const ALL: &'static [Self];
    /// The text kept in the table and sent on the wire.
    fn as_str(self) -> &'static str;
    /// The member whose text is `text`, if any.
    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.as_str() == text)
    }
}

/// `'a', 'b', 'c'`: the members of a set as a CHECK constraint's list.
pub fn check_list<T: Closed>() -> String {
    T::ALL
        .iter()
        .map(|m| format!("'{}'", m.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names each member with its text, implements [`Closed`] and `Display`.
macro_rules! closed {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// The text kept in the table and sent on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl Closed for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed! {
    /// Where a token is in its life.
    TokenStatus {
        /// It moves.
        Active => "active",
        /// It holds its events until resumed.
        Paused => "paused",
        /// It reached END.
        Completed => "completed",
        /// It could not go on.
        Failed => "failed",
        /// An operator (or its parent) stopped it.
        Cancelled => "cancelled",
    }
}

impl TokenStatus {
    /// Whether a token with this status never moves again.
    pub fn ended(self) -> bool {
        matches!(
            self,
            TokenStatus::Completed | TokenStatus::Failed | TokenStatus::Cancelled
        )
    }

    /// Active or paused: a token that still counts as live.
    pub fn live(self) -> bool {
        !self.ended()
    }
}

closed! {
    /// Where a task is.
    TaskStatus {
        /// Waiting for a supervisor's claim.
        Queued => "queued",
        /// A supervisor holds it under a lease.
        Claimed => "claimed",
        /// Its routine reported that it waits for an event from outside.
        Waiting => "waiting",
        /// Its state's outcome moved the token.
        Done => "done",
        /// Its last attempt failed with no retries left.
        Failed => "failed",
        /// The token left the state another way.
        Cancelled => "cancelled",
    }
}

impl TaskStatus {
    /// Queued, claimed or waiting: the task still belongs to the token's state.
    pub fn open(self) -> bool {
        matches!(
            self,
            TaskStatus::Queued | TaskStatus::Claimed | TaskStatus::Waiting
        )
    }
}

closed! {
    /// Where a timer is.
    TimerStatus {
        /// It fires at its due time.
        Pending => "pending",
        /// It fired.
        Fired => "fired",
        /// Leaving its state (or a retry) cancelled it.
        Cancelled => "cancelled",
    }
}

closed! {
    /// Why a timer exists.
    TimerKind {
        /// A state's `timeout`: covers every attempt of the state's task.
        Timeout => "timeout",
        /// A routine's timer, set with its outcome: a retry cancels it.
        Timer => "timer",
    }
}

closed! {
    /// Which kind of clock a control plane ran on (schema 0005,
    /// `control_plane.clock`): a database served on the real clock never meets a
    /// moved one.
    ClockKind {
        /// The system's clock (and the manual clock of tests).
        System => "system",
        /// `serve --dev-clock`: a clock that `stateous clock` moves.
        Dev => "dev",
    }
}

closed! {
    /// What a ledger entry records. The engine names the kind of each entry it
    /// appends with one of these, so the store can keep its facts of a token (its
    /// visits, its last accepted event) by kind without comparing text.
    EntryKind {
        /// The token was made.
        Started => "started",
        /// The token entered a state.
        Entered => "entered",
        /// An event moved the token.
        EventAccepted => "event_accepted",
        /// A paused token holds an event until it resumes.
        EventDeferred => "event_deferred",
        /// A held event was dropped (the token ended or moved on).
        EventDropped => "event_dropped",
        /// An event could not move the token.
        EventRejected => "event_rejected",
        /// A held event ran once the token resumed.
        EventReplayed => "event_replayed",
        /// A timer was set.
        TimerSet => "timer_set",
        /// A timer fired.
        TimerFired => "timer_fired",
        /// A task was queued for a routine.
        TaskQueued => "task_queued",
        /// A supervisor claimed a task.
        TaskClaimed => "task_claimed",
        /// A routine reported that it waits for an event from outside.
        TaskWaiting => "task_waiting",
        /// A task is done.
        TaskDone => "task_done",
        /// A task was cancelled.
        TaskCancelled => "task_cancelled",
        /// A task failed with no retries left.
        TaskFailed => "task_failed",
        /// A task failed and runs again.
        TaskRetrying => "task_retrying",
        /// A routine changed the token's context.
        ContextChanged => "context_changed",
        /// A routine saved a key of its memory.
        MemorySet => "memory_set",
        /// A routine deleted a key of its memory.
        MemoryDeleted => "memory_deleted",
        /// A routine's line of progress.
        Note => "note",
        /// An operator paused the token.
        Paused => "paused",
        /// An operator resumed the token.
        Resumed => "resumed",
        /// An operator retried a failed token.
        Retried => "retried",
        /// An operator's bulk action touched the token.
        Operator => "operator",
        /// An operator moved the token to another kept graph.
        Migrated => "migrated",
        /// A parallel state started a branch.
        BranchStarted => "branch_started",
        /// The token completed.
        Completed => "completed",
        /// The token failed.
        Failed => "failed",
        /// The token was cancelled.
        Cancelled => "cancelled",
        /// Ours: a routine reported what it spent (`docs/concepts/budgets.md`).
        UsageReported => "usage_reported",
        /// Ours: a usage report took the token over its budget: its running
        /// attempts were stopped and it was paused.
        BudgetExceeded => "budget_exceeded",
        /// Ours: the token's own budget was given or changed.
        BudgetSet => "budget_set",
    }
}

impl EntryKind {
    /// The entry of a token that ends with `status` (named as the status is).
    pub fn ended(status: TokenStatus) -> EntryKind {
        match status {
            TokenStatus::Failed => EntryKind::Failed,
            TokenStatus::Cancelled => EntryKind::Cancelled,
            _ => EntryKind::Completed,
        }
    }
}

closed! {
    /// Whether a schedule starts tokens (schema 0015, `schedules.status`).
    ScheduleStatus {
        /// Its occurrences start tokens.
        Active => "active",
        /// An operator paused it: no occurrence starts until it resumes.
        Paused => "paused",
    }
}

closed! {
    /// What an occurrence does while a token of an earlier one of its schedule
    /// is live (`docs/schedules.md`, "Overlap").
    Overlap {
        /// It starts nothing, and is recorded as skipped with the reason.
        Skip => "skip",
        /// It waits, and starts once the live token ends; at most one waits.
        BufferOne => "buffer_one",
        /// It starts its token all the same.
        Allow => "allow",
    }
}

closed! {
    /// What happens to the occurrences a schedule missed while no control plane
    /// ran (`docs/schedules.md`, "Catch-up").
    CatchUp {
        /// None of them starts.
        None => "none",
        /// One start, of the latest of them.
        Latest => "latest",
        /// Each one within the window starts, at most the cap.
        All => "all",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_member_parses_back_from_its_text() {
        for status in TokenStatus::ALL {
            assert_eq!(TokenStatus::parse(status.as_str()), Some(*status));
        }
        for status in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(status.as_str()), Some(*status));
        }
        for kind in EntryKind::ALL {
            assert_eq!(EntryKind::parse(kind.as_str()), Some(*kind));
        }
        assert_eq!(EntryKind::ended(TokenStatus::Failed).as_str(), "failed");
        assert_eq!(TimerStatus::parse("nope"), None);
    }

    #[test]
    fn check_lists_are_the_schema_lists_of_the_reference() {
        assert_eq!(
            check_list::<TokenStatus>(),
            "'active', 'paused', 'completed', 'failed', 'cancelled'"
        );
        assert_eq!(
            check_list::<TaskStatus>(),
            "'queued', 'claimed', 'waiting', 'done', 'failed', 'cancelled'"
        );
        assert_eq!(
            check_list::<TimerStatus>(),
            "'pending', 'fired', 'cancelled'"
        );
        assert_eq!(check_list::<TimerKind>(), "'timeout', 'timer'");
        assert_eq!(check_list::<ClockKind>(), "'system', 'dev'");
    }
}
