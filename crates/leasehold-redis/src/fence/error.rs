//! `FencedWriteError`: why a fenced write did not happen.

use leasehold::fence::{FenceRefusal, ResourceNameError, StaleFence};
use leasehold::store::StoreError;

/// Why a fenced write to a Redis key did not happen.
///
/// [`Stale`](Self::Stale) is the refusal fencing exists for (tell it with [`FenceRefusal`]); the
/// others are bad input (nothing was sent) or the store's errors (classified transient or
/// permanent as the store's own).
///
/// ```
/// use leasehold::fence::FenceRefusal;
/// use leasehold_redis::fence::FencedWriteError;
///
/// let err = FencedWriteError::NoSharedSlot { key: "a}b".into() };
/// assert!(err.stale().is_none());
/// assert!(err.to_string().contains("hash tag"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedWriteError {
    /// A higher fence was written to the key before: the writer's lease ended and a successor
    /// has written since. Nothing was written.
    #[error(transparent)]
    Stale(#[from] StaleFence),
    /// The key is not a valid resource name (1-255 bytes of UTF-8 without control characters).
    #[error("invalid key for a fenced write: {0}")]
    Key(#[from] ResourceNameError),
    /// The key has no hash tag but contains `}`, so no key in its cluster slot can keep its fence.
    #[error(
        "key {key:?} contains '}}' but no hash tag, so no fence key can share its cluster slot; \
         give it a hash tag ({{...}}, e.g. \"{{orders}}:a}}b\") or leave '}}' out"
    )]
    NoSharedSlot {
        /// The key.
        key: String,
    },
    /// The command cannot be a fenced write (not a write command, unknown, touches other keys,
    /// wrong number of arguments, an expiry of zero, …).
    #[error("{command:?} cannot be a fenced write: {reason}")]
    Command {
        /// The command, as given.
        command: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// Redis could not be reached, or refused the script (see [`StoreError::kind`]).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FenceRefusal for FencedWriteError {
    fn stale(&self) -> Option<&StaleFence> {
        match self {
            Self::Stale(stale) => Some(stale),
            _ => None,
        }
    }
}

impl FencedWriteError {
    pub(crate) fn command(command: &str, reason: impl Into<String>) -> Self {
        Self::Command {
            command: command.chars().take(64).collect(),
            reason: reason.into(),
        }
    }
}
