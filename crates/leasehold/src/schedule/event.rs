//! What happens to a scheduled job, reported to a [`Schedule`](super::Schedule)'s observer.

use std::time::Duration;

use crate::store::period::PeriodRecord;

/// Something that happened to one job of a [`Schedule`](super::Schedule), reported to its
/// [`observe`](super::Schedule::observe) hook with the job's name (for metrics or audit).
///
/// Per attempt the order is `Attempt`, then one of `Skipped`, `AlreadyRan`, `StoreError`, or
/// `Elected` followed by `Finished`; `Stopped` is the last event of a job, after its lease was
/// released. Period ids are those of the job's [`Period`](crate::Period) on the store's clock;
/// they are `None` for a [`fixed_delay`](super::Job::fixed_delay) job, which claims no period.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobEvent {
    /// An attempt at the job's lock starts.
    Attempt {
        /// The period this node means to run: the period its estimate of the store's clock is
        /// in. The store decides; see `Elected`.
        period: Option<i64>,
    },
    /// This node acquired the lock (and, for a period-aligned job, the period); the action
    /// starts now.
    Elected {
        /// The period the store granted (recorded in the lock's ledger).
        period: Option<i64>,
    },
    /// Another node holds the lock; this attempt is skipped.
    Skipped,
    /// The lock's ledger records a run for this period (or a later one) already: the attempt
    /// is skipped, and no later attempt in the same period can run it.
    AlreadyRan(PeriodRecord),
    /// The store could not be reached; a period-aligned job tries again within the period.
    StoreError,
    /// The action ended (its lease is released next).
    Finished {
        /// How long the action ran.
        took: Duration,
        /// How it ended.
        outcome: JobOutcome,
        /// The period it ran for.
        period: Option<i64>,
    },
    /// The job stopped after the token was cancelled and released its lease.
    Stopped {
        /// Time from noticing the cancellation to having stopped.
        took: Duration,
        /// True when a running action outlived the grace period and was cancelled.
        cancelled_action: bool,
    },
}

/// How a job's action ended; see [`JobEvent::Finished`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobOutcome {
    /// It returned `Ok`.
    Succeeded,
    /// It returned `Err` (logged at WARN).
    Failed,
    /// It panicked (logged at WARN).
    Panicked,
    /// Shutdown's grace period ran out and the action was dropped.
    Cancelled,
    /// The lease was lost while the action ran (logged at WARN): with
    /// [`cancel_on_lost`](crate::ElectionOptions::cancel_on_lost) the action was dropped, else
    /// it ran to its end, but without exclusivity either way.
    Lost,
}
