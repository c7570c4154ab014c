//! Logging to stderr: quiet by default, `-v` flags or `$LEASEHOLD_LOG` raise it. Every line goes
//! through the [`Scrubber`] so a store password can never reach the log.

use std::io::{self, IsTerminal, Write};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::store::Scrubber;

/// The environment variable holding a `tracing` filter directive.
pub(crate) const LOG_ENV: &str = "LEASEHOLD_LOG";

/// leasehold's own crates: the core, every store, the integrations and this tool.
const OWN_CRATES: [&str; 8] = [
    "leasehold",
    "leasehold_sql",
    "leasehold_redis",
    "leasehold_dynamodb",
    "leasehold_etcd",
    "leasehold_axum",
    "leasehold_workbench",
    "leasehold_cli",
];

/// The filter for `-v` × `verbosity` when `$LEASEHOLD_LOG` is not set. Default: warnings from
/// leasehold's own crates (such as "lease lost", or a store's "subscription lost"), errors from
/// everything else; each `-v` raises both by one level. `losses_expected` (for `verify`, which
/// loses leases on purpose) lowers the default for leasehold's crates to errors, so the expected
/// "lease lost" warnings do not drown the report.
fn default_filter(verbosity: u8, losses_expected: bool) -> String {
    let (others, own) = match verbosity {
        0 if losses_expected => ("error", "error"),
        0 => ("error", "warn"),
        1 => ("warn", "info"),
        2 => ("info", "debug"),
        _ => ("debug", "trace"),
    };
    let mut filter = others.to_owned();
    for krate in OWN_CRATES {
        filter.push_str(&format!(",{krate}={own}"));
    }
    filter
}

/// Installs the subscriber. A bad `$LEASEHOLD_LOG` is reported and the default used.
pub(crate) fn init(verbosity: u8, losses_expected: bool, scrubber: Scrubber) {
    let (filter, bad) = match std::env::var(LOG_ENV) {
        Ok(text) if !text.trim().is_empty() => match EnvFilter::try_new(&text) {
            Ok(f) => (f, None),
            Err(e) => (
                EnvFilter::new(default_filter(verbosity, losses_expected)),
                Some(e),
            ),
        },
        _ => (
            EnvFilter::new(default_filter(verbosity, losses_expected)),
            None,
        ),
    };
    // try_init fails only if a subscriber is already installed; logging then goes there.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ScrubbingStderr(scrubber))
        .with_ansi(io::stderr().is_terminal())
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
    use super::*;

    #[test]
    fn default_filters_parse() {
        for v in 0..5 {
            for losses_expected in [false, true] {
                let f = default_filter(v, losses_expected);
                assert!(EnvFilter::try_new(&f).is_ok(), "{v}: {f}");
            }
        }
    }

    /// Every store crate's warnings reach the default log, not only the SQL store's (a Redis
    /// store's "subscription lost" was filtered out before).
    #[test]
    fn every_own_crate_warns_by_default() {
        let quiet = default_filter(0, false);
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
        assert!(default_filter(0, true).contains("leasehold=error"));
        assert!(default_filter(1, true).contains("leasehold=info"));
    }
}
