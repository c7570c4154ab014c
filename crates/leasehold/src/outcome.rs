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
