//! The typed answer of a store to an optional operation it does not offer.

/// A store does not offer an optional operation (such as
/// [`list_locks`](crate::LeaseStore::list_locks) or
/// [`force_release`](crate::LeaseStore::force_release)): the answer of the trait's default
/// implementations. It travels inside a permanent [`StoreError`](crate::store::StoreError); find it with
/// [`StoreError::unsupported`](crate::store::StoreError::unsupported).
///
/// ```
/// use leasehold::store::StoreError;
/// use leasehold::store::Unsupported;
///
/// let e: StoreError = Unsupported::new("kv://x", "listing locks").into();
/// assert!(!e.is_transient());
/// assert_eq!(e.unsupported().map(|u| u.operation), Some("listing locks"));
/// assert_eq!(e.to_string(), "permanent store error: kv://x does not support listing locks");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{store} does not support {operation}")]
#[non_exhaustive]
pub struct Unsupported {
    /// The store, as it describes itself (secrets redacted).
    pub store: String,
    /// What it does not support, e.g. `"listing locks"`.
    pub operation: &'static str,
}

impl Unsupported {
    /// `store` (its [`describe`](crate::LeaseStore::describe)) does not support `operation`.
    pub fn new(store: impl Into<String>, operation: &'static str) -> Self {
        Self {
            store: store.into(),
            operation,
        }
    }
}
