//! The host clocks that time SQLite leases.
//!
//! SQLite runs inside each process, so its "database clock" would be the wall clock of whichever
//! process runs the statement: one process whose wall clock is ahead (a per-process offset such as
//! `libfaketime`, or a clock step) would see live leases as expired. SQLite statements therefore
//! get their times from this module, as parameters, and a row is free only when it is over on
//! **both** of these clocks:
//!
//! * the wall clock (epoch milliseconds), as before — it is what other boots and older versions
//!   read;
//! * the kernel's boot clock, read from `/proc/uptime` and tagged with the boot id
//!   (`/proc/sys/kernel/random/boot_id`). Every process on the host shares it, nothing steps it,
//!   and libfaketime does not fake it (libfaketime does fake `clock_gettime(CLOCK_BOOTTIME)`,
//!   which is why the file is read instead). A row written during another boot carries another
//!   boot id and is judged by the wall clock alone. Inside a time namespace the namespace's
//!   boot-time offset (`/proc/self/timens_offsets`) is taken off, so every namespace on the host
//!   reads the same clock.
//!
//! `/proc/uptime` has 10 ms resolution, so a reading is a range: comparisons use its low end and
//! expiries written are counted from its high end, which can only make a lease last longer.
//!
//! [`HostClock`] is public (feature `sqlite`) for programs that run the store's SQLite
//! [`Statements`](crate::Statements) themselves, as `leasehold-bench`'s raw floor does: every
//! one of them takes these clocks as its last four parameters.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::Sqlite;
use sqlx::query::Query;
use sqlx::sqlite::SqliteArguments;

/// The resolution of `/proc/uptime`, in milliseconds.
const UPTIME_RESOLUTION_MS: i64 = 10;

/// One reading of the host's clocks, for the four clock parameters every SQLite statement of
/// [`Statements`](crate::Statements) takes after its own. Read it just before sending the
/// statement: a reading taken early only makes leases look held longer, never shorter.
///
/// ```
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), sqlx::Error> {
/// use leasehold_sql::{Dialect, HostClock};
/// let sql = Dialect::Sqlite.statements("leasehold_leases");
/// let rows = HostClock::read()
///     .bind(sqlx::query(&sql.state).bind("nightly").bind(1i32))
///     .fetch_all(&pool)
///     .await?;
/// # let _ = rows; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct HostClock {
    wall_ms: i64,
    boot: Option<BootReading>,
}

#[derive(Debug, Clone)]
struct BootReading {
    id: &'static str,
    low_ms: i64,
}

/// This boot's id and the boot-clock offset of this process's time namespace, read once.
struct Boot {
    id: String,
    ns_offset_ms: i64,
}

fn boot() -> Option<&'static Boot> {
    static BOOT: OnceLock<Option<Boot>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = id.trim();
        if id.is_empty() {
            return None;
        }
        let ns_offset_ms = std::fs::read_to_string("/proc/self/timens_offsets")
            .ok()
            .and_then(|text| boottime_offset_ms(&text))
            .unwrap_or(0);
        Some(Boot {
            id: id.to_owned(),
            ns_offset_ms,
        })
    })
    .as_ref()
}

/// The `boottime` line of `/proc/self/timens_offsets` ("boottime <secs> <nanos>"), in ms.
fn boottime_offset_ms(text: &str) -> Option<i64> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("boottime"))?;
    let mut parts = line.split_whitespace().skip(1);
    let secs: i64 = parts.next()?.parse().ok()?;
    let nanos: i64 = parts.next()?.parse().ok()?;
    Some(secs.saturating_mul(1000).saturating_add(nanos / 1_000_000))
}

/// The first field of `/proc/uptime` ("12345.67 …"), in ms, rounded down.
fn uptime_ms(text: &str) -> Option<i64> {
    let field = text.split_whitespace().next()?;
    let (secs, frac) = field.split_once('.').unwrap_or((field, ""));
    let secs: i64 = secs.parse().ok()?;
    let mut ms = 0;
    let mut scale = 100;
    for c in frac.chars().take(3) {
        ms += i64::from(c.to_digit(10)?) * scale;
        scale /= 10;
    }
    Some(secs.saturating_mul(1000).saturating_add(ms))
}

impl HostClock {
    /// Reads the clocks now. Never fails: without `/proc` (not Linux) the boot clock is `NULL`
    /// and leases are timed by the wall clock alone.
    pub fn read() -> Self {
        let wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let boot = boot().and_then(|b| {
            let up = uptime_ms(&std::fs::read_to_string("/proc/uptime").ok()?)?;
            Some(BootReading {
                id: b.id.as_str(),
                low_ms: up.saturating_sub(b.ns_offset_ms),
            })
        });
        Self { wall_ms, boot }
    }

    /// Binds the four clock parameters every SQLite statement takes after its own: wall clock
    /// (epoch ms), boot id (or `NULL`), boot clock low and high end (ms, or `NULL`).
    pub fn bind<'q>(
        &self,
        q: Query<'q, Sqlite, SqliteArguments<'q>>,
    ) -> Query<'q, Sqlite, SqliteArguments<'q>> {
        let boot = self.boot.as_ref();
        q.bind(self.wall_ms)
            .bind(boot.map(|b| b.id))
            .bind(boot.map(|b| b.low_ms))
            .bind(boot.map(|b| b.low_ms.saturating_add(UPTIME_RESOLUTION_MS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_and_namespace_offsets_parse() {
        assert_eq!(uptime_ms("236.86 901.50\n"), Some(236_860));
        assert_eq!(uptime_ms("5 1"), Some(5_000));
        assert_eq!(uptime_ms("1.5"), Some(1_500));
        assert_eq!(uptime_ms("x"), None);
        assert_eq!(
            boottime_offset_ms("monotonic 0 0\nboottime -3 500000000\n"),
            Some(-2_500)
        );
        assert_eq!(boottime_offset_ms("monotonic 0 0\n"), None);
    }

    #[test]
    fn the_boot_clock_follows_the_kernel_on_linux() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let a = HostClock::read();
        let boot = a.boot.as_ref().expect("a boot clock on Linux");
        assert_eq!(boot.id.len(), 36, "{}", boot.id);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let b = HostClock::read();
        let later = b.boot.expect("a boot clock").low_ms;
        assert!(
            (30..=5_000).contains(&(later - boot.low_ms)),
            "{later} after {}",
            boot.low_ms
        );
        assert!(b.wall_ms >= a.wall_ms);
    }
}
