//! Choosing and opening the store: `--store`, `$LEASEHOLD_STORE`, or the default SQLite file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub(crate) use leasehold::store::redact_urls_in;
use leasehold::store::{MIN_SCRUBBED_SECRET_LEN, scrub_secrets, url_secrets};
use leasehold::{
    LeaseStore,
    store::{OpenError, StoreRegistry, redact_url},
};

use crate::exit::Failure;
use crate::say;
use crate::time_text::human;

/// The default store's file name inside the state directory.
const DEFAULT_FILE: &str = "leases.db";

/// The registry of every store the CLI can open.
pub(crate) fn registry() -> StoreRegistry {
    StoreRegistry::new()
        .with(leasehold_sql::SqlOpener::new())
        .with(leasehold_redis::RedisOpener::new())
        .with(leasehold_dynamodb::DynamoDbOpener::new())
        .with(leasehold_etcd::EtcdOpener::new())
        .with(leasehold_zookeeper::ZooKeeperOpener::new())
        .with(leasehold_nats::NatsOpener::new())
}

/// A store URL to open, with its redacted form for messages.
#[derive(Clone)]
pub(crate) struct StoreUrl {
    url: String,
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StoreUrl").field(&self.redacted()).finish()
    }
}

impl StoreUrl {
    /// The URL given, or the default SQLite file (whose directory is created if missing).
    pub(crate) fn resolve(given: Option<&str>) -> Result<Self, Failure> {
        match given {
            Some(url) => Ok(Self {
                url: url.trim().to_owned(),
            }),
            None => {
                let dir = state_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))?;
                create_private_dir(&dir)?;
                Ok(Self {
                    url: sqlite_url(&dir.join(DEFAULT_FILE))?,
                })
            }
        }
    }

    /// A URL given as is.
    pub(crate) fn given(url: String) -> Self {
        Self { url }
    }

    /// The URL itself (it may hold secrets: never print it; see [`redacted`](Self::redacted)).
    pub(crate) fn as_str(&self) -> &str {
        &self.url
    }

    /// The URL with passwords and secret parameters replaced by `***`.
    pub(crate) fn redacted(&self) -> String {
        redact_url(&self.url)
    }

    /// Opens the store for a command whose point is exclusion between processes (`run`,
    /// `status`, `release`, `serve`, `verify`): a store whose leases live only inside this
    /// process (`memory:`, an in-memory SQLite database) is refused, since every other process
    /// would have its own (a usage error, exit 125, saying what to use instead).
    ///
    /// A store that cannot be reached (a transient error: connection refused, timed out, a
    /// cluster electing a new leader) is tried again with growing pauses for up to `wait` —
    /// `run --wait` covers a store that is briefly unreachable, not only a held lock; the first
    /// failure is said once on stderr. A permanent error (a bad URL, refused credentials) ends
    /// it at once, as does the last failure when `wait` runs out.
    pub(crate) async fn open_shared(&self, wait: Duration) -> Result<Arc<dyn LeaseStore>, Failure> {
        let store = self.open_within(wait).await?;
        refuse_process_local(&*store, &self.redacted())?;
        Ok(store)
    }

    /// Opens the store (any store, `memory:` included), retrying transient failures for up to
    /// `wait` as [`open_shared`](Self::open_shared) does.
    pub(crate) async fn open_within(&self, wait: Duration) -> Result<Arc<dyn LeaseStore>, Failure> {
        tracing::debug!(store = %self.redacted(), "leasehold: opening store");
        let deadline = leasehold::store::deadline_after(tokio::time::Instant::now(), wait);
        let mut pause = FIRST_OPEN_PAUSE;
        let mut said = false;
        loop {
            let error = match registry().open(&self.url).await {
                Ok(store) => return Ok(store),
                Err(e) => e,
            };
            let transient =
                matches!(&error, OpenError::Connect { source, .. } if source.is_transient());
            let now = tokio::time::Instant::now();
            if !transient || now >= deadline {
                return Err(error.into());
            }
            if !std::mem::replace(&mut said, true) {
                say::err(&format!(
                    "{error}; retrying for up to {} (--wait)",
                    human(deadline - now)
                ));
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(MAX_OPEN_PAUSE);
        }
    }
}

/// The first pause between attempts to open an unreachable store; doubled up to
/// [`MAX_OPEN_PAUSE`].
const FIRST_OPEN_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between attempts to open an unreachable store.
const MAX_OPEN_PAUSE: Duration = Duration::from_secs(2);

/// The usage error for a store whose leases live only in this process, if `store` is one.
fn refuse_process_local(store: &dyn LeaseStore, label: &str) -> Result<(), Failure> {
    if !store.is_process_local() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "store {label} keeps its leases inside this one process: every other process (every \
         other run of leasehold) would have a store of its own, so it cannot keep anything to one \
         node. Use a store that processes share: a SQLite file (the default without --store, or \
         sqlite:///path/to/leases.db), postgres://, mysql://, redis://, dynamodb://, etcd://, \
         zk:// or nats://. memory: is for `leasehold simulate` and tests"
    )))
}

/// `$XDG_STATE_HOME/leasehold` when that is an absolute path (as the XDG spec requires),
/// else `$HOME/.local/state/leasehold`.
fn state_dir(xdg_state_home: Option<OsString>, home: Option<OsString>) -> Result<PathBuf, Failure> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(base) = absolute(xdg_state_home) {
        return Ok(base.join("leasehold"));
    }
    match absolute(home) {
        Some(home) => Ok(home.join(".local").join("state").join("leasehold")),
        None => Err(Failure::usage(
            "cannot find the default store: neither $XDG_STATE_HOME nor $HOME is an absolute \
             path; set LEASEHOLD_STORE or pass --store",
        )),
    }
}

fn create_private_dir(dir: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            Failure::usage(format!(
                "cannot create the state directory {}: {e}; set LEASEHOLD_STORE or pass --store",
                dir.display()
            ))
        })
}

/// `sqlite://` + the absolute path, percent-encoding the characters the SQLite URL parser
/// treats specially (`%`, `?`, `#`).
fn sqlite_url(path: &Path) -> Result<String, Failure> {
    let text = path.to_str().ok_or_else(|| {
        Failure::usage(format!(
            "the default store path {} is not valid UTF-8; set LEASEHOLD_STORE or pass --store",
            path.display()
        ))
    })?;
    let mut url = String::from("sqlite://");
    for c in text.chars() {
        match c {
            '%' => url.push_str("%25"),
            '?' => url.push_str("%3F"),
            '#' => url.push_str("%23"),
            c => url.push(c),
        }
    }
    Ok(url)
}

/// Removes the secrets of one store URL from any text: the defence in depth behind
/// [`redact_url`], applied to every message and log line leasehold prints, in case some error
/// from a driver quotes the URL or its password verbatim.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scrubber {
    secrets: Arc<[String]>,
}

impl Scrubber {
    /// The secrets found in `url` by the core's [`url_secrets`] (the password of its user-info,
    /// the values of secret parameters and of URLs nested in parameters, each also
    /// percent-decoded), except those too short to scrub from free text.
    pub(crate) fn for_url(url: Option<&str>) -> Self {
        Self::for_urls(url)
    }

    /// [`for_url`](Self::for_url) for several URLs: those among the command-line words and
    /// `LEASEHOLD_STORE`, for a usage error printed before the command line could be read.
    /// A word `--flag=URL` counts as its URL.
    pub(crate) fn for_urls<'a>(urls: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<String> = urls
            .into_iter()
            .map(|word| match word.split_once('=') {
                Some((flag, url)) if flag.starts_with('-') => url,
                _ => word,
            })
            .flat_map(url_secrets)
            .filter(|s| s.len() >= MIN_SCRUBBED_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self {
            secrets: secrets.into(),
        }
    }

    /// `text` with every known secret replaced by `***` and every URL redacted: the core's
    /// [`scrub_secrets`].
    pub(crate) fn scrub(&self, text: &str) -> String {
        scrub_secrets(text, &self.secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dir_follows_xdg_then_home() -> Result<(), String> {
        let d = state_dir(Some("/x/state".into()), Some("/home/u".into()))
            .map_err(|e| e.message().to_owned())?;
        assert_eq!(d, PathBuf::from("/x/state/leasehold"));
        let d = state_dir(Some("relative".into()), Some("/home/u".into()))
            .map_err(|e| e.message().to_owned())?;
        assert_eq!(d, PathBuf::from("/home/u/.local/state/leasehold"));
        assert!(state_dir(None, None).is_err());
        Ok(())
    }

    #[test]
    fn sqlite_urls_escape_special_characters() -> Result<(), String> {
        let url = sqlite_url(Path::new("/a b/100%?#.db")).map_err(|e| e.message().to_owned())?;
        assert_eq!(url, "sqlite:///a b/100%25%3F%23.db");
        Ok(())
    }

    #[test]
    fn scrubber_finds_passwords_and_secret_parameters() {
        let s = Scrubber::for_url(Some(
            "postgres://u:hun%40ter2@127.0.0.1:1/x?sslmode=off&password=zzz9",
        ));
        let text = "failed for u:hun%40ter2 and hun@ter2 with zzz9 at 127.0.0.1";
        assert_eq!(
            s.scrub(text),
            "failed for u:*** and *** with *** at 127.0.0.1"
        );

        let s = Scrubber::for_url(Some("mysql://root:p@ss@h/db"));
        assert_eq!(s.scrub("bad p@ss"), "bad ***");

        let s = Scrubber::for_url(Some("sqlite:///tmp/x.db"));
        assert_eq!(s.scrub("/tmp/x.db"), "/tmp/x.db");
        assert_eq!(Scrubber::for_url(None).scrub("a"), "a");
    }
}
