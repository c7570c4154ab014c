//! `InvalidOption`: one error type for a store's invalid option, shared by every backend.

/// An option a store rejected: which store, which option, and what is wrong and allowed. Each
/// backend names it (`RedisOptionsError`, `EtcdOptionsError`, …) as an alias of this type.
///
/// ```
/// use leasehold::store::InvalidOption;
///
/// let e = InvalidOption::new("Redis", "prefix", "must not be empty");
/// assert_eq!((e.store(), e.option(), e.reason()), ("Redis", "prefix", "must not be empty"));
/// assert_eq!(e.to_string(), "invalid Redis store option prefix: must not be empty");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {store} store option {option}: {reason}")]
pub struct InvalidOption {
    store: &'static str,
    option: &'static str,
    reason: String,
}

impl InvalidOption {
    /// `option` of the `store` (as users know it, e.g. `"etcd"`) is invalid for `reason`.
    pub fn new(store: &'static str, option: &'static str, reason: impl Into<String>) -> Self {
        Self {
            store,
            option,
            reason: reason.into(),
        }
    }
    /// The store (e.g. `"DynamoDB"`).
    pub fn store(&self) -> &'static str {
        self.store
    }
    /// The option that is wrong (e.g. `"prefix"`).
    pub fn option(&self) -> &'static str {
        self.option
    }
    /// What is wrong and what is allowed.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
