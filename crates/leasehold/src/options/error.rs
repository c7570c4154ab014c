//! `OptionsError`: why options were rejected.

use std::time::Duration;

use crate::limits::LimitError;

/// Why options were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// The lease was shorter than [`MIN_LEASE`](crate::limits::MIN_LEASE).
    #[error("lease must be at least 1ms, got {0:?}")]
    LeaseTooShort(Duration),
    /// `min_lease` exceeded `lease`.
    #[error("min_lease ({min_lease:?}) must not exceed lease ({lease:?})")]
    MinLeaseExceedsLease {
        /// The requested minimum.
        min_lease: Duration,
        /// The lease.
        lease: Duration,
    },
    /// `auto_extend` was asked for with a lease too short to renew in time.
    #[error(
        "auto_extend (on by default) needs a lease of at least {min:?} (three renewals of 25ms), \
         got {lease:?}; set auto_extend(false) for a shorter lease, which then bounds the action"
    )]
    LeaseTooShortForAutoExtend {
        /// The lease.
        lease: Duration,
        /// The smallest lease that auto-extension supports.
        min: Duration,
    },
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
