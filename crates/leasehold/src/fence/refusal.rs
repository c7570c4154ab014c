//! `FenceRefusal`: telling the refusal of a stale fence apart from a fenced write's other errors.

use super::register::StaleFence;

/// The error of a fenced write, which may be the refusal fencing exists for: a [`StaleFence`]
/// (the rule of [`Admission`](super::Admission)), or anything else (bad input, the store's
/// errors).
///
/// The stores' fenced-write errors implement it (`leasehold_redis::fence::FencedWriteError`,
/// `leasehold_dynamodb::fence::FencedWriteError`, `leasehold_etcd::fence::FencedPutError`), so
/// one question reads the same on every store.
///
/// ```
/// use leasehold::fence::{FenceRefusal, ResourceName, StaleFence};
///
/// #[derive(Debug)]
/// enum WriteError {
///     Stale(StaleFence),
///     Offline,
/// }
///
/// impl FenceRefusal for WriteError {
///     fn stale(&self) -> Option<&StaleFence> {
///         match self {
///             Self::Stale(stale) => Some(stale),
///             Self::Offline => None,
///         }
///     }
/// }
///
/// let stale = StaleFence { resource: ResourceName::new("orders/42")?, fence: 6, highest: 7 };
/// assert!(WriteError::Stale(stale).is_stale());
/// assert!(!WriteError::Offline.is_stale());
/// # Ok::<(), leasehold::fence::ResourceNameError>(())
/// ```
pub trait FenceRefusal {
    /// The refusal, when the write was refused as stale.
    fn stale(&self) -> Option<&StaleFence>;

    /// Whether the write was refused as stale.
    fn is_stale(&self) -> bool {
        self.stale().is_some()
    }
}

impl FenceRefusal for StaleFence {
    fn stale(&self) -> Option<&StaleFence> {
        Some(self)
    }
}
