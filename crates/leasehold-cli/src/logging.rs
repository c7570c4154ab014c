//! Logging to stderr: quiet by default, `-v` flags or `$LEASEHOLD_LOG` raise it. Every line goes
//! through the [`Scrubber`] so a store password can never reach the log.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::color::ColorWhen;
use crate::store::Scrubber;

/// The environment variable holding a `tracing` filter directive.
pub(crate) const LOG_ENV: &str = "LEASEHOLD_LOG";

/// leasehold's own crates: the core, every store, the integrations and this tool.
const OWN_CRATES: [&str; 11] = [
    "leasehold",
    "leasehold_sql",
    "leasehold_redis",
    "leasehold_dynamodb",
    "leasehold_etcd",
    "leasehold_zookeeper",
    "leasehold_nats",
    "leasehold_testkit",
    "leasehold_axum",
    "leasehold_workbench",
    "leasehold_cli",
];

/// The library's module that logs the life of a held lease (renewal failing, lease lost, release
/// failed): `leasehold run` reports those itself, once each, through [`crate::say`].
const LEASE_LIFE_TARGET: &str = "leasehold::hold";

/// What the command reports itself, so that the default log does not say it a second time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reports {
    /// Nothing: the default log shows leasehold's warnings.
    Nothing,
    /// The life of its own lease (`run`): the library's warnings about it are left out.
    OwnLease,
    /// Leases lost on purpose (`verify`): only errors from leasehold's crates are shown.
    ExpectedLosses,
}

/// The filter for `-v` × `verbosity` when `$LEASEHOLD_LOG` is not set. Default: warnings from
/// leasehold's own crates (such as "lease lost", or a store's "subscription lost"), errors from
/// everything else; each `-v` raises both by one level. Without `-v`, what the command `reports`
/// itself is left out: `verify` (which loses leases on purpose) lowers leasehold's crates to
/// errors, so the expected "lease lost" warnings do not drown the report; `run` leaves out the
/// library's warnings about its lease, which it reports in its own one line.
fn default_filter(verbosity: u8, reports: Reports) -> String {
    let (others, own) = match verbosity {
        0 if reports == Reports::ExpectedLosses => ("error", "error"),
        0 => ("error", "warn"),
        1 => ("warn", "info"),
        2 => ("info", "debug"),
        _ => ("debug", "trace"),
    };
    let mut filter = others.to_owned();
    for krate in OWN_CRATES {
        filter.push_str(&format!(",{krate}={own}"));
    }
    if verbosity == 0 && reports == Reports::OwnLease {
        filter.push_str(&format!(",{LEASE_LIFE_TARGET}=error"));
    }
    filter
}

/// Installs the subscriber, coloured as `color` says for stderr. A bad `$LEASEHOLD_LOG` is
/// reported and the default used.
pub(crate) fn init(verbosity: u8, reports: Reports, color: ColorWhen, scrubber: Scrubber) {
    let (filter, bad) = match std::env::var(LOG_ENV) {
        Ok(text) if !text.trim().is_empty() => match EnvFilter::try_new(&text) {
            Ok(f) => (f, None),
            Err(e) => (EnvFilter::new(default_filter(verbosity, reports)), Some(e)),
        },
        _ => (EnvFilter::new(default_filter(verbosity, reports)), None),
    };
    // try_init fails only if a subscriber is already installed; logging then goes there.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ScrubbingStderr(scrubber))
        .with_ansi(color.colors(&io::stderr()))
        .try_init();
    if let Some(e) = bad {
        tracing::warn!("ignoring {LOG_ENV}: {e}");
    }
}

/// A `MakeWriter` for stderr that scrubs secrets from each formatted line.
struct ScrubbingStderr(Scrubber);

impl<'a> MakeWriter<'a> for ScrubbingStderr {
    type Writer = ScrubbedLine<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedLine(&self.0)
    }
}

/// Writes one formatted event (tracing-subscriber writes each event with a single call).
struct ScrubbedLine<'a>(&'a Scrubber);

impl Write for ScrubbedLine<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr()
            .lock()
            .write_all(self.0.scrub(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_leasehold_crate_the_tool_links_is_its_own() {
        let manifest = include_str!("../Cargo.toml");
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_default();
        let linked: Vec<String> = deps
            .lines()
            .filter(|l| l.starts_with("leasehold"))
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .map(|name| name.replace('-', "_"))
            .collect();
        assert!(linked.len() >= 9, "{linked:?}");
        for krate in linked {
            assert!(
                OWN_CRATES.contains(&krate.as_str()),
                "{krate} logs would be filtered out by default"
            );
        }
    }

    use super::*;

    #[test]
    fn default_filters_parse() {
        for v in 0..5 {
            for reports in [Reports::Nothing, Reports::OwnLease, Reports::ExpectedLosses] {
                let f = default_filter(v, reports);
                assert!(EnvFilter::try_new(&f).is_ok(), "{v}: {f}");
            }
        }
    }

    /// Every store crate's warnings reach the default log, not only the SQL store's (a Redis
    /// store's "subscription lost" was filtered out before).
    #[test]
    fn every_own_crate_warns_by_default() {
        let quiet = default_filter(0, Reports::Nothing);
        for krate in [
            "leasehold_redis",
            "leasehold_dynamodb",
            "leasehold_etcd",
            "leasehold_axum",
        ] {
            assert!(quiet.contains(&format!("{krate}=warn")), "{quiet}");
        }
        assert!(quiet.starts_with("error,"), "{quiet}");
        // `verify` loses leases on purpose: its default hides those warnings, `-v` shows them.
        assert!(default_filter(0, Reports::ExpectedLosses).contains("leasehold=error"));
        assert!(default_filter(1, Reports::ExpectedLosses).contains("leasehold=info"));
        // `run` reports its lease's life itself: the library's warnings about it are left out
        // by default, and come back with `-v`.
        assert!(default_filter(0, Reports::OwnLease).ends_with(",leasehold::hold=error"));
        assert!(!default_filter(1, Reports::OwnLease).contains("leasehold::hold"));
        assert!(!quiet.contains("leasehold::hold"));
    }
}
