//! `OptionsError`: why options were rejected.

use std::time::Duration;

use leasehold_rules::LeaseError;

use crate::limits::LimitError;

/// Why options were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `lease`, `min_lease` and `auto_extend` broke one of the lease bounds
    /// ([`LeaseError`](crate::error::LeaseError)): a lease shorter than
    /// [`MIN_LEASE`](crate::limits::MIN_LEASE), a `min_lease` longer than the lease, or `auto_extend` on
    /// a lease shorter than [`MIN_AUTO_EXTEND_LEASE`](crate::limits::MIN_AUTO_EXTEND_LEASE).
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// `max_leaders` was zero.
    #[error("max_leaders must be at least 1, got 0")]
    NoLeaders,
    /// The node id was empty or contained control characters.
    #[error("node_id must be non-empty printable text without control characters, got {0:?}")]
    BadNodeId(String),
    /// A value was beyond one of the [limits](crate::limits): a duration longer than
    /// [`MAX_DURATION`](crate::limits::MAX_DURATION), `max_leaders` above
    /// [`MAX_SLOTS`](crate::limits::MAX_SLOTS), or a node id longer than
    /// [`MAX_NODE_ID_LEN`](crate::limits::MAX_NODE_ID_LEN) bytes.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A scheduled job had a zero period.
    #[error("job {0:?}: period must be greater than zero")]
    ZeroPeriod(String),
    /// A scheduled job's jitter was more than half its period.
    #[error("job {job:?}: jitter of {jitter:?} is more than half the period ({max:?} at most)")]
    JitterTooLarge {
        /// The job.
        job: String,
        /// The jitter given.
        jitter: Duration,
        /// Half the period.
        max: Duration,
    },
    /// A fixed-delay job was given an option that only period-aligned jobs have.
    #[error("job {job:?}: `{option}` applies to period-aligned jobs only, not with `fixed_delay`")]
    NotWithFixedDelay {
        /// The job.
        job: String,
        /// The option: `offset`, `jitter` or `missed`.
        option: &'static str,
    },
    /// The attempt timeout was zero.
    #[error("attempt_timeout must be greater than zero")]
    ZeroAttemptTimeout,
    /// The retry policy was inconsistent.
    #[error("retry policy: {0}")]
    Retry(&'static str),
}
