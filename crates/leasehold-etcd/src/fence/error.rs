//! Why a fenced transaction or a fenced put did not apply.

use leasehold::fence::{FenceRefusal, ResourceNameError, StaleFence};
use leasehold::{LockName, store::StoreError};

/// The lease a fenced transaction was conditioned on is no longer held by its holder: its slot
/// key was deleted (released, expired, forcibly released) and maybe granted again since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseLost {
    /// The lock.
    pub lock: LockName,
    /// The slot.
    pub slot: u32,
    /// The fence of the lease the transaction was conditioned on.
    pub fence: u64,
    /// The fence of the slot's holder now, when someone holds it.
    pub holder_fence: Option<u64>,
}

impl std::fmt::Display for LeaseLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the lease of lock {} slot {} with fence {} is not held any more",
            self.lock, self.slot, self.fence
        )?;
        if let Some(holder) = self.holder_fence {
            write!(f, " (held now with fence {holder})")?;
        }
        f.write_str("; nothing was applied")
    }
}

impl std::error::Error for LeaseLost {}

/// Why a fenced transaction ([`FencedWriter::txn`](super::FencedWriter::txn)) did not apply.
///
/// ```
/// use leasehold::LockName;
/// use leasehold_etcd::fence::{FencedTxnError, LeaseLost};
///
/// let lost = LeaseLost { lock: LockName::new("nightly")?, slot: 0, fence: 7, holder_fence: Some(9) };
/// let err = FencedTxnError::from(lost);
/// assert!(err.lease_lost().is_some());
/// assert!(err.to_string().contains("held now with fence 9"));
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedTxnError {
    /// The lease is no longer this holder's: nothing was applied.
    #[error(transparent)]
    LeaseLost(#[from] LeaseLost),
    /// etcd could not be reached in time, or refused the transaction (see [`StoreError::kind`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FencedTxnError {
    /// The lost lease, when that is why nothing was applied.
    pub fn lease_lost(&self) -> Option<&LeaseLost> {
        match self {
            Self::LeaseLost(lost) => Some(lost),
            Self::Store(_) => None,
        }
    }
}

/// Why a fenced put ([`FencedWriter::put`](super::FencedWriter::put)) did not apply.
///
/// ```
/// use leasehold::fence::{FenceRefusal, ResourceName, StaleFence};
/// use leasehold_etcd::fence::FencedPutError;
///
/// let stale = StaleFence { resource: ResourceName::new("reports/latest")?, fence: 6, highest: 7 };
/// let err = FencedPutError::from(stale);
/// assert_eq!(err.stale().map(|s| s.highest), Some(7));
/// # Ok::<(), leasehold::fence::ResourceNameError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedPutError {
    /// A higher fence was written to the key before: the writer's lease ended and a successor
    /// has written since. Nothing was written.
    #[error(transparent)]
    Stale(#[from] StaleFence),
    /// The key is not a valid resource name (1-255 bytes of UTF-8 without control characters).
    #[error("invalid key for a fenced put: {0}")]
    Key(#[from] ResourceNameError),
    /// etcd could not be reached in time, or refused the transaction (see [`StoreError::kind`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// [`Stale`](FencedPutError::Stale) is the refusal: `err.stale()`, `err.is_stale()`.
impl FenceRefusal for FencedPutError {
    fn stale(&self) -> Option<&StaleFence> {
        match self {
            Self::Stale(stale) => Some(stale),
            _ => None,
        }
    }
}
