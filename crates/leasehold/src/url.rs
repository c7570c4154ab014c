//! Opening a store from a URL, and redacting secrets in URLs.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::memory::MemoryStore;
use crate::store::LeaseStore;

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

/// Opens stores for one or more URL schemes. Store crates provide one each.
#[async_trait]
pub trait StoreOpener: Send + Sync + 'static {
    /// The schemes handled, without `:` (e.g. `["postgres", "postgresql"]`).
    fn schemes(&self) -> &'static [&'static str];
    /// Opens a store for `url` (its scheme is one of [`schemes`](Self::schemes)).
    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError>;
}

/// The `memory:` scheme: a fresh [`MemoryStore`] per open.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryOpener;

#[async_trait]
impl StoreOpener for MemoryOpener {
    fn schemes(&self) -> &'static [&'static str] {
        &["memory"]
    }
    async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        let rest = url.split_once(':').map_or("", |(_, r)| r);
        if !(rest.is_empty() || rest == "//") {
            return Err(OpenError::Invalid {
                url: redact_url(url),
                reason: "the memory store takes no options; write `memory:`".to_owned(),
            });
        }
        Ok(Arc::new(MemoryStore::new()))
    }
}

/// Maps URL schemes to store openers. Starts with `memory:`; store crates register theirs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold::OpenError> {
/// use leasehold::StoreRegistry;
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
        .with(MemoryOpener)
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
    pub async fn open(&self, url: &str) -> Result<Arc<dyn LeaseStore>, OpenError> {
        let scheme = url
            .split_once(':')
            .map(|(s, _)| s.to_ascii_lowercase())
            .ok_or_else(|| OpenError::Invalid {
                url: redact_url(url),
                reason: format!("expected SCHEME:..., one of {:?}", self.schemes()),
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

const SECRET_PARAMS: &[&str] = &[
    "password",
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "sslpassword",
];

/// Replaces the password in a URL's user-info, and the values of secret-looking query parameters,
/// with `***`.
///
/// ```
/// use leasehold::redact_url;
/// assert_eq!(redact_url("postgres://app:s3cret@db:5432/x"), "postgres://app:***@db:5432/x");
/// assert_eq!(redact_url("redis://h/0?password=abc&db=1"), "redis://h/0?password=***&db=1");
/// assert_eq!(redact_url("memory:"), "memory:");
/// ```
pub fn redact_url(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => format!("{userinfo}@{host}"),
                },
                None => authority.to_owned(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => head.to_owned(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _))
                    if SECRET_PARAMS.iter().any(|s| {
                        k.eq_ignore_ascii_case(s) || k.to_ascii_lowercase().contains(s)
                    }) =>
                {
                    format!("{k}=***")
                }
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_every_secret_form() {
        assert_eq!(redact_url("mysql://root@h/db"), "mysql://root@h/db");
        assert_eq!(redact_url("rediss://:pw@h:6380"), "rediss://:***@h:6380");
        assert_eq!(redact_url("x://u:p@ss@h/p?a=1"), "x://u:***@h/p?a=1");
        assert_eq!(
            redact_url("d://t?aws_secret=z&region=eu"),
            "d://t?aws_secret=***&region=eu"
        );
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
