//! Rounds of a compare-and-swap: a store without server-side transactions over what it reads
//! (etcd compares revisions, NATS expects sequences, ZooKeeper checks versions) reads, then
//! writes on the condition that nothing changed since, and reads again when something did. How
//! often it tries before it gives up, and the transient error it then answers, are the
//! toolkit's, the same in every such store.

use crate::error::StoreError;
use crate::name::LockName;

/// A request made of compare-and-swap rounds: how many rounds it may take, and its error when
/// the lock changed under every one of them (transient: the core, or the operator, asks again).
///
/// ```
/// use leasehold::store::{CasRounds, LockName};
///
/// assert_eq!(CasRounds::PeriodStart.count(), 4);
/// assert_eq!(CasRounds::ForcedRelease.count(), 5);
/// let lock = LockName::new("report")?;
/// let e = CasRounds::LedgerClear.gave_up(&lock);
/// assert!(e.is_transient());
/// assert!(e.to_string().ends_with("the period ledger of lock report kept changing while it was cleared; try again"), "{e}");
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CasRounds {
    /// Marking a period claim started: slot 0 and the ledger compared with what was read.
    PeriodStart,
    /// Clearing the period ledger: the ledger compared with what was read.
    LedgerClear,
    /// A forced release: every live slot compared with what was read.
    ForcedRelease,
}

impl CasRounds {
    /// How many rounds it may take.
    #[must_use]
    pub const fn count(self) -> usize {
        match self {
            Self::PeriodStart | Self::LedgerClear => 4,
            Self::ForcedRelease => 5,
        }
    }

    /// The transient error once `lock` changed under every round.
    #[must_use]
    pub fn gave_up(self, lock: &LockName) -> StoreError {
        StoreError::transient(match self {
            Self::PeriodStart => {
                format!(
                    "lock {lock} kept changing while its period claim was marked started; try again"
                )
            }
            Self::LedgerClear => {
                format!(
                    "the period ledger of lock {lock} kept changing while it was cleared; try again"
                )
            }
            Self::ForcedRelease => {
                format!("lock {lock} kept changing during a forced release; try again")
            }
        })
    }
}
