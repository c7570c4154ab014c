//! Opening a store from its URL: the registry of openers by scheme, and the error that says why
//! a URL could not be opened (its URL redacted, its secrets scrubbed from the reason).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::redact::{is_scheme, redact_url, scrub};
use crate::error::StoreError;
use crate::store::contract::LeaseStore;
use crate::store::memory::MemoryStore;

/// Why a store URL could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// No opener is registered for the scheme.
    #[error("unsupported store URL {url}: scheme {scheme:?} is not one of {supported:?}")]
    UnknownScheme {
        /// The scheme found.
        scheme: String,
        /// The URL, redacted.
        url: String,
        /// The schemes that are registered.
        supported: Vec<String>,
    },
    /// The URL is malformed or has a bad option.
    #[error("invalid store URL {url}: {reason}")]
    Invalid {
        /// The URL, redacted.
        url: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The store could not be reached or set up.
    #[error("could not open store {url}: {source}")]
    Connect {
        /// The URL, redacted.
        url: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

impl OpenError {
    /// [`OpenError::Invalid`] for `url`, redacted with [`redact_url`], with every secret of the
    /// URL also scrubbed from `reason` (a driver's message may quote it).
    pub fn invalid(url: &str, reason: impl std::fmt::Display) -> Self {
        Self::Invalid {
            url: redact_url(url),
            reason: scrub(&reason.to_string(), url),
        }
    }

    /// [`OpenError::Connect`] for `url`, redacted with [`redact_url`]. If the store error's
    /// text quotes a secret of the URL, it is replaced by one with the secrets scrubbed.
    pub fn connect(url: &str, source: StoreError) -> Self {
        let text = source.to_string();
        let scrubbed = scrub(&text, url);
        let source = if scrubbed == text {
            source
        } else {
            let message = scrub(source.message(), url);
            let detail = std::error::Error::source(&source)
                .map(|s| format!(": {}", scrub(&s.to_string(), url)))
                .unwrap_or_default();
            StoreError::new(source.kind(), format!("{message}{detail}"))
        };
        Self::Connect {
            url: redact_url(url),
            source,
        }
    }
}

/// Opens stores for one or more URL schemes. Store crates provide one each.
#[async_trait]
pub trait StoreOpener: Send + Sync + 'static {
    /// The schemes handled, without `:` (e.g. `["postgres", "postgresql"]`).
    fn schemes(&self) -> &'static [&'static str];
    /// Opens a store for `url` (its scheme is one of [`schemes`](Self::schemes)).
    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError>;
}

/// A store that opens from a URL: its schemes and its `connect`, from which the toolkit derives
/// its opener ([`UrlOpener`]).
///
/// A store crate implements it next to its `connect` and names its opener:
///
/// ```
/// use leasehold::store::{MemoryStore, StoreOpener, UrlOpener, UrlStore};
///
/// // leasehold_etcd::EtcdOpener is UrlOpener<EtcdStore>; the memory store's is this one:
/// let opener = UrlOpener::<MemoryStore>::new();
/// assert_eq!(opener.schemes(), <MemoryStore as UrlStore>::SCHEMES);
/// assert_eq!(opener.schemes(), ["memory"]);
/// ```
#[async_trait]
pub trait UrlStore: LeaseStore + Sized + 'static {
    /// The URL schemes it opens, without `:` (`["etcd", "etcds"]`).
    const SCHEMES: &'static [&'static str];

    /// Opens the store for `url` with its default options (URL parameters applied) and checks
    /// that the server answers: the store's `connect`.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a URL or option the store refuses, [`OpenError::Connect`] when
    /// the server cannot be reached or refuses the credentials.
    ///
    /// # Cancel safety
    ///
    /// As the store's `connect`: dropping the future abandons the attempt.
    async fn connect_url(url: &str) -> Result<Self, OpenError>;
}

/// The opener of any [`UrlStore`]: registers its schemes with a [`StoreRegistry`]. Each store
/// crate names its own (`leasehold_etcd::EtcdOpener` is `UrlOpener<EtcdStore>`).
pub struct UrlOpener<S>(std::marker::PhantomData<fn() -> S>);

impl<S> UrlOpener<S> {
    /// The opener.
    #[must_use]
    pub const fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<S> Default for UrlOpener<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Clone for UrlOpener<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for UrlOpener<S> {}

impl<S> std::fmt::Debug for UrlOpener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UrlOpener")
            .field(&std::any::type_name::<S>())
            .finish()
    }
}

#[async_trait]
impl<S: UrlStore> StoreOpener for UrlOpener<S> {
    fn schemes(&self) -> &'static [&'static str] {
        S::SCHEMES
    }

    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        Ok(Arc::new(S::connect_url(url).await?))
    }
}

/// The `memory:` scheme: a fresh [`MemoryStore`] per open.
pub type MemoryOpener = UrlOpener<MemoryStore>;

#[async_trait]
impl UrlStore for MemoryStore {
    const SCHEMES: &'static [&'static str] = &["memory"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        let rest = url.split_once(':').map_or("", |(_, r)| r);
        if !(rest.is_empty() || rest == "//") {
            return Err(OpenError::invalid(
                url,
                "the memory store takes no options; write `memory:`",
            ));
        }
        Ok(MemoryStore::new())
    }
}

/// Maps URL schemes to store openers. Starts with `memory:`; store crates register theirs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
///
/// let registry = StoreRegistry::new();
/// let store = registry.open("memory:").await?;
/// assert_eq!(store.describe(), "memory");
/// assert!(registry.open("nosuch://x").await.is_err());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct StoreRegistry {
    openers: BTreeMap<&'static str, Arc<dyn StoreOpener>>,
}

impl std::fmt::Debug for StoreRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRegistry")
            .field("schemes", &self.schemes())
            .finish()
    }
}

impl Default for StoreRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl StoreRegistry {
    /// A registry with the `memory:` scheme.
    pub fn new() -> Self {
        Self {
            openers: BTreeMap::new(),
        }
        .with(MemoryOpener::new())
    }

    /// Adds (or replaces) the opener for its schemes.
    #[must_use]
    pub fn with(mut self, opener: impl StoreOpener) -> Self {
        let opener: Arc<dyn StoreOpener> = Arc::new(opener);
        for scheme in opener.schemes() {
            self.openers.insert(scheme, Arc::clone(&opener));
        }
        self
    }

    /// The registered schemes.
    pub fn schemes(&self) -> Vec<String> {
        self.openers.keys().map(|s| (*s).to_owned()).collect()
    }

    /// Opens the store `url` names.
    ///
    /// # Errors
    ///
    /// [`OpenError`] for an unknown scheme (listing the registered ones), a URL its opener
    /// rejects, or a store that cannot be reached; the URL's secrets never appear in it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the connection being made; nothing is left behind.
    pub async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        let scheme = url
            .trim()
            .split_once(':')
            .filter(|(s, _)| is_scheme(s))
            .map(|(s, _)| s.to_ascii_lowercase())
            .ok_or_else(|| {
                OpenError::invalid(
                    url,
                    format!("expected SCHEME:..., one of {:?}", self.schemes()),
                )
            })?;
        let opener = self
            .openers
            .get(scheme.as_str())
            .ok_or_else(|| OpenError::UnknownScheme {
                scheme: scheme.clone(),
                url: redact_url(url),
                supported: self.schemes(),
            })?;
        opener.open(url).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn registry_errors_never_show_the_password() {
        let registry = StoreRegistry::new();
        for url in [
            "nosuch://u:s3c/r3t@h/x",
            "nosuch://u:s3c?r3t@h/x",
            "s3cr3t@h:1",
            "nosuch:u:s3cr3t@h",
            "no such://u:s3cr3t@h",
        ] {
            let msg = registry
                .open(url)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(!msg.contains("s3c") && !msg.contains("r3t"), "{url}: {msg}");
        }
    }

    #[tokio::test]
    async fn unknown_scheme_lists_the_supported_ones_and_hides_the_password() {
        let err = StoreRegistry::new()
            .open("postgres://u:hunter2@h/x")
            .await
            .err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("\"postgres\"") && msg.contains("memory"),
            "{msg}"
        );
        assert!(!msg.contains("hunter2"), "{msg}");
    }

    #[tokio::test]
    async fn memory_rejects_options() {
        assert!(matches!(
            StoreRegistry::new().open("memory:x").await,
            Err(OpenError::Invalid { .. })
        ));
        assert!(StoreRegistry::new().open("MEMORY:").await.is_ok());
    }
}
