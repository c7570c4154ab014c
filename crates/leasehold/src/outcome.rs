//! `RunOutcome`: elected, skipped, or the action failed.

use std::convert::Infallible;

/// The result of [`Elector::run`](crate::Elector::run): keeps "we were not elected" apart from
/// "the action returned nothing" and from "the action failed".
///
/// ```
/// use leasehold::RunOutcome;
/// let o: RunOutcome<u32, String> = RunOutcome::Elected(3);
/// assert_eq!(o.elected(), Some(3));
/// assert!(RunOutcome::<u32, String>::Skipped.is_skipped());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum RunOutcome<T, E = Infallible> {
    /// This node was elected and the action returned `Ok(value)`.
    Elected(T),
    /// Another holder had the lock for the whole wait; the action did not run.
    Skipped,
    /// This node was elected and the action returned `Err(error)`; the lease was released.
    ActionFailed(E),
}

impl<T, E> RunOutcome<T, E> {
    /// True for [`RunOutcome::Skipped`].
    pub fn is_skipped(&self) -> bool {
        matches!(self, Self::Skipped)
    }
    /// True for [`RunOutcome::Elected`] and [`RunOutcome::ActionFailed`]: the action ran.
    pub fn ran(&self) -> bool {
        !self.is_skipped()
    }
    /// The value of an elected run.
    pub fn elected(self) -> Option<T> {
        match self {
            Self::Elected(v) => Some(v),
            _ => None,
        }
    }
    /// The action's error.
    pub fn failure(self) -> Option<E> {
        match self {
            Self::ActionFailed(e) => Some(e),
            _ => None,
        }
    }
}

impl<T, E> From<Result<T, E>> for RunOutcome<T, E> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Self::Elected(v),
            Err(e) => Self::ActionFailed(e),
        }
    }
}

/// The result of [`Elector::run_once_per`](crate::Elector::run_once_per): ran, skipped because
/// the lock is held, skipped because the ledger says this period already ran, or the action
/// failed.
///
/// ```
/// use leasehold::PeriodOutcome;
/// let o: PeriodOutcome<u32, String> = PeriodOutcome::Ran(3);
/// assert!(o.ran());
/// assert_eq!(o.value(), Some(3));
/// assert!(!PeriodOutcome::<u32, String>::Skipped.ran());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum PeriodOutcome<T, E = Infallible> {
    /// Elected for this period; the action returned `Ok(value)`. The lease's
    /// [`period`](crate::Lease::period) (through the context) is the period id recorded.
    Ran(T),
    /// Another holder had the lock for the whole wait, and the ledger does not record this
    /// period as run (yet): the action did not run.
    Skipped,
    /// The ledger records a run for this period (or a later one): when and by whom. The action
    /// did not run; waiting could not have changed that.
    AlreadyRan(crate::PeriodRecord),
    /// Elected for this period and the action returned `Err(error)`; the lease was released and
    /// the period stays recorded as run.
    ActionFailed(E),
}

impl<T, E> PeriodOutcome<T, E> {
    /// True for [`PeriodOutcome::Ran`] and [`PeriodOutcome::ActionFailed`]: the action ran.
    pub fn ran(&self) -> bool {
        matches!(self, Self::Ran(_) | Self::ActionFailed(_))
    }
    /// The value of a successful run.
    pub fn value(self) -> Option<T> {
        match self {
            Self::Ran(v) => Some(v),
            _ => None,
        }
    }
    /// The ledger record, when the period already ran.
    pub fn already_ran(&self) -> Option<&crate::PeriodRecord> {
        match self {
            Self::AlreadyRan(r) => Some(r),
            _ => None,
        }
    }
    /// The action's error.
    pub fn failure(self) -> Option<E> {
        match self {
            Self::ActionFailed(e) => Some(e),
            _ => None,
        }
    }
}
