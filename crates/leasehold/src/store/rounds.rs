//! Rounds of a compare-and-swap: a store without server-side transactions over what it reads
//! (etcd compares revisions, NATS expects sequences, ZooKeeper checks versions) reads, then
//! writes on the condition that nothing changed since, and reads again when something did. How
//! often it tries before it gives up, and the transient error it then answers, are the
//! toolkit's, the same in every such store.

use std::future::Future;

use crate::error::{StoreError, StoreResult};
use crate::name::LockName;

use super::lease::Holder;

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

/// One round of a forced release: the holders its writes freed, and whether the lock changed
/// under it (a write's compare-and-swap failed), so that another round reads it again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForcedRound {
    /// The holders this round freed, in the order it freed them.
    pub freed: Vec<Holder>,
    /// True when a write found the lock changed since it was read.
    pub changed: bool,
}

/// One round of a forced release, as a store's protocol makes it: read `lock`, free what it
/// holds among `slots` at what was read, and say what it freed and whether the lock changed
/// under a write. [`forced_release`] drives the rounds;
/// [`protocol_store_methods!`](crate::protocol_store_methods) asks a store's protocol for them.
#[async_trait::async_trait]
pub trait ForceRound: Send + Sync {
    /// One round (see the trait).
    ///
    /// # Errors
    ///
    /// The classified error of a read or write; the forced release ends with it.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: dropping it between two writes leaves the slots the first freed free.
    async fn force_round(&self, lock: &LockName, slots: u32) -> StoreResult<ForcedRound>;
}

/// A forced release of `lock` in up to [`CasRounds::ForcedRelease`] rounds: each `round` reads
/// the lock, frees what it holds at what was read and says what it freed; the release ends with
/// every holder freed once a round finds nothing changed under it (a round that finds nothing
/// held frees nothing and changes nothing), and gives up with
/// [`CasRounds::gave_up`] when the lock changed under every round. A round's error ends it.
///
/// ```
/// use leasehold::store::{ForcedRound, LockName, forced_release};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let lock = LockName::new("report")?;
/// let mut rounds = 0;
/// let freed = forced_release(&lock, || {
///     rounds += 1;
///     let changed = rounds == 1;
///     async move { Ok(ForcedRound { freed: Vec::new(), changed }) }
/// })
/// .await?;
/// assert_eq!((freed.len(), rounds), (0, 2));
/// let e = forced_release(&lock, || async { Ok(ForcedRound { freed: Vec::new(), changed: true }) }).await;
/// assert!(e.is_err_and(|e| e.is_transient()));
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// The first error of a round, or [`CasRounds::gave_up`] for `ForcedRelease`.
///
/// # Cancel safety
///
/// As cancel-safe as a round: dropping the future between rounds leaves what earlier rounds
/// freed freed.
pub async fn forced_release<F, Fut>(lock: &LockName, mut round: F) -> StoreResult<Vec<Holder>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<ForcedRound>>,
{
    let mut freed = Vec::new();
    for _ in 0..CasRounds::ForcedRelease.count() {
        let done = round().await?;
        freed.extend(done.freed);
        if !done.changed {
            return Ok(freed);
        }
    }
    Err(CasRounds::ForcedRelease.gave_up(lock))
}
