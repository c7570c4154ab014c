//! `Outcome`: whether work ran here under a lease — elected, taken by another holder, already
//! run this period, or the action failed.

use std::convert::Infallible;

use crate::store::lease::Holder;
use crate::store::period::PeriodRecord;

/// What became of one call that runs work on the elected node, or hands out a guard:
/// [`Elector::run`](crate::Elector::run), [`Elector::run_once_per`](crate::Elector::run_once_per),
/// [`Elector::try_acquire`](crate::Elector::try_acquire) and
/// [`Elector::try_acquire_for`](crate::Elector::try_acquire_for) (and their blocking forms).
/// "Not elected" is always one of its two refusals, [`Taken`](Self::Taken) or
/// [`AlreadyRan`](Self::AlreadyRan); a store failure is never one of them but the call's `Err`.
///
/// `T` is the action's value (or the [`LeaderGuard`](crate::LeaderGuard)), `E` the action's
/// error. [`Elector::run_if_leader`](crate::Elector::run_if_leader) is the short form, with
/// `Option<T>`. The store contract's [`Acquisition`](crate::store::Acquisition) names the same
/// cases the same way.
///
/// ```
/// use leasehold::Outcome;
/// let o: Outcome<u32, String> = Outcome::Elected(3);
/// assert!(o.ran());
/// assert_eq!(o.elected(), Some(3));
/// let skipped: Outcome<u32, String> = Outcome::Taken(None);
/// assert!(skipped.is_taken() && !skipped.ran());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Outcome<T, E = Infallible> {
    /// This node was elected; the action returned `Ok(value)` (or: the guard).
    Elected(T),
    /// Another holder had the lock for the whole wait; nothing ran here. With that holder, as
    /// the store's last refusal named it (the stores that say: [`MemoryStore`](crate::MemoryStore));
    /// `None` where the store does not tell.
    Taken(Option<Holder>),
    /// A period was claimed, and the ledger records a run for this period (or a later one):
    /// when and by whom. Nothing ran here; waiting could not have changed that.
    AlreadyRan(PeriodRecord),
    /// This node was elected and the action returned `Err(error)`; the lease was released (and a
    /// claimed period stays recorded as run).
    ActionFailed(E),
}

impl<T, E> Outcome<T, E> {
    /// True for [`Elected`](Self::Elected) and [`ActionFailed`](Self::ActionFailed): the
    /// action ran here.
    pub fn ran(&self) -> bool {
        matches!(self, Self::Elected(_) | Self::ActionFailed(_))
    }
    /// True for [`Elected`](Self::Elected).
    pub fn is_elected(&self) -> bool {
        matches!(self, Self::Elected(_))
    }
    /// True for [`Taken`](Self::Taken).
    pub fn is_taken(&self) -> bool {
        matches!(self, Self::Taken(_))
    }
    /// The value of an elected run (or the guard).
    pub fn elected(self) -> Option<T> {
        match self {
            Self::Elected(v) => Some(v),
            _ => None,
        }
    }
    /// The holder that kept the lock, when the lock was taken and the store said who.
    pub fn holder(&self) -> Option<&Holder> {
        match self {
            Self::Taken(holder) => holder.as_ref(),
            _ => None,
        }
    }
    /// The ledger record, when the period already ran.
    pub fn already_ran(&self) -> Option<&PeriodRecord> {
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
    /// The same outcome with the elected value mapped by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U, E> {
        match self {
            Self::Elected(v) => Outcome::Elected(f(v)),
            Self::Taken(h) => Outcome::Taken(h),
            Self::AlreadyRan(r) => Outcome::AlreadyRan(r),
            Self::ActionFailed(e) => Outcome::ActionFailed(e),
        }
    }
}

impl<T, E> From<Result<T, E>> for Outcome<T, E> {
    /// An elected run's result: `Ok` is [`Elected`](Outcome::Elected), `Err`
    /// [`ActionFailed`](Outcome::ActionFailed).
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Self::Elected(v),
            Err(e) => Self::ActionFailed(e),
        }
    }
}
