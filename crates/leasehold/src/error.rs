//! Errors.

use std::fmt;

use crate::limits::LimitError;
pub use crate::name::NameError;
pub use crate::options::error::OptionsError;
pub use crate::store::period::PeriodError;
pub use leasehold_rules::{DurationError, LeaseError};

/// Whether retrying can help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The store may answer if asked again (connection lost, timeout, failover, throttling).
    Transient,
    /// Asking again will not help (configuration, permissions, schema, bad script).
    Permanent,
}

/// A failure of a store operation, classified by [`ErrorKind`].
///
/// Messages must never contain secrets such as passwords; stores redact them.
///
/// ```
/// use leasehold::{ErrorKind, store::StoreError};
/// let e = StoreError::transient("connection reset");
/// assert_eq!(e.kind(), ErrorKind::Transient);
/// assert!(e.is_transient());
/// ```
#[derive(Debug)]
pub struct StoreError {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl StoreError {
    /// A transient error.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Transient, message)
    }
    /// A permanent error.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Permanent, message)
    }
    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }
    /// Attaches the underlying error.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
    /// The same error again, for a second caller: its kind and its message with the source's
    /// text (the source itself stays with the original). One batch request's failure becomes
    /// each entry's answer this way.
    pub(crate) fn copied(&self) -> Self {
        Self::new(self.kind, self.to_string())
    }
    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// True for [`ErrorKind::Transient`].
    pub fn is_transient(&self) -> bool {
        self.kind == ErrorKind::Transient
    }
    /// The message, without the source.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The limit that was exceeded, if the store rejected a request beyond one (for example more
    /// than [`MAX_SLOTS`](crate::limits::MAX_SLOTS) slots). Every store answers such a request the same
    /// way: a permanent error carrying the [`LimitError`].
    ///
    /// ```
    /// use leasehold::{limits::LimitError, store::StoreError};
    /// use leasehold::store::check_slots;
    /// let e: StoreError = check_slots(5000).unwrap_err().into();
    /// assert!(!e.is_transient());
    /// assert!(matches!(e.limit(), Some(LimitError::TooManySlots { slots: 5000, .. })));
    /// ```
    pub fn limit(&self) -> Option<&LimitError> {
        self.source.as_deref()?.downcast_ref::<LimitError>()
    }

    /// The [`Unsupported`](crate::store::Unsupported) behind this error, if the store does not
    /// offer the operation asked for (the default of an optional [`LeaseStore`](crate::LeaseStore)
    /// method, such as [`list_locks`](crate::LeaseStore::list_locks)).
    pub fn unsupported(&self) -> Option<&crate::store::unsupported::Unsupported> {
        self.source
            .as_deref()?
            .downcast_ref::<crate::store::unsupported::Unsupported>()
    }

    /// The [`PeriodError`] behind this error, if a period claim was refused
    /// as unusable (e.g. on a lock with more than one slot).
    pub fn period(&self) -> Option<&crate::store::period::PeriodError> {
        self.source
            .as_deref()?
            .downcast_ref::<crate::store::period::PeriodError>()
    }
}

impl From<crate::store::unsupported::Unsupported> for StoreError {
    /// A permanent error whose message is the [`Unsupported`](crate::store::Unsupported)'s.
    fn from(e: crate::store::unsupported::Unsupported) -> Self {
        Self::permanent(e.to_string()).with_source(e)
    }
}

impl From<crate::store::period::PeriodError> for StoreError {
    fn from(e: crate::store::period::PeriodError) -> Self {
        Self::permanent(e.to_string()).with_source(e)
    }
}

impl From<LimitError> for StoreError {
    /// A permanent error whose message is the limit's and whose source is the [`LimitError`].
    fn from(e: LimitError) -> Self {
        Self::permanent(e.to_string()).with_source(e)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ErrorKind::Transient => "transient",
            ErrorKind::Permanent => "permanent",
        };
        write!(f, "{kind} store error: {}", self.message)?;
        // A source whose text is already the message (a limit, a period, an unsupported
        // operation, a bad cursor: see the `From` impls) is not repeated.
        if let Some(source) = &self.source {
            let text = source.to_string();
            if text != self.message {
                write!(f, ": {text}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;

/// Errors returned by the electors. Contention is never an error: it is `Ok(None)` or
/// [`Outcome::Taken`](crate::Outcome::Taken).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock name was invalid.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The options were invalid.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// A value was beyond one of the [limits](crate::limits) (for example an extension longer
    /// than [`MAX_DURATION`](crate::limits::MAX_DURATION)).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A period definition or claim that cannot be used (see [`PeriodError`]).
    #[error(transparent)]
    Period(#[from] crate::store::period::PeriodError),
    /// A partition set was refused (see [`PartitionError`](crate::partition::PartitionError)).
    #[error(transparent)]
    Partition(#[from] crate::partition::PartitionError),
    /// The store failed.
    #[error("lock {lock}: {source}")]
    Store {
        /// The lock being worked on.
        lock: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// The lease was lost while the action ran and the elector was told to cancel on loss.
    #[error("lock {lock}: lease lost while the action ran ({reason}); the action was cancelled")]
    Lost {
        /// The lock.
        lock: String,
        /// Why it was lost.
        reason: crate::events::LostReason,
    },
}

impl Error {
    pub(crate) fn store(lock: &crate::LockName, source: StoreError) -> Self {
        Self::Store {
            lock: lock.to_string(),
            source,
        }
    }
    /// The store error, if this is one.
    pub fn as_store(&self) -> Option<&StoreError> {
        match self {
            Self::Store { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result of an elector call.
pub type Result<T, E = Error> = std::result::Result<T, E>;
