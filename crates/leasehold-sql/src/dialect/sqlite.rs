//! SQLite's SQL: numbered `?n` parameters, `MIN`, no row locks, and leases timed by the host's
//! clocks, passed as four parameters after each statement's own (see `crate::clock`).

#[cfg(feature = "fence")]
use super::guard::{FenceSql, Guard};
use super::{Clock, Columns, Sql};

/// The longest table name this crate accepts on SQLite, per part (`TABLE` or attached `SCHEMA`).
/// SQLite itself has no such limit; 64 keeps every SQLite name usable on MySQL too.
pub const SQLITE_MAX_NAME_LEN: usize = 64;

/// How much longer than its granted span a row's boot-clock expiry may lie ahead before the boot
/// clock is not trusted for it (a reading from a clock that is not this host's), in ms.
const BOOT_SPAN_SLACK_MS: u32 = 1_000;

/// SQLite 3.35 or later.
pub(super) struct Sqlite;

impl Sql for Sqlite {
    fn now_ms(&self) -> &'static str {
        "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
    }

    fn param(&self, n: usize) -> String {
        format!("?{n}")
    }

    fn row_params(&self, _leases: usize) -> usize {
        1
    }

    /// One parameter, a JSON array of `[lock, slot, token]`: SQLite parses numbered parameters
    /// in time quadratic in their count.
    fn rows_in(&self, first: usize, _leases: usize) -> String {
        format!(
            "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), \
             json_extract(value, '$[2]') FROM json_each({}))",
            self.param(first)
        )
    }

    /// SQLite has no server clock: the clocks are four more parameters, `?k+1` to `?k+4`: wall
    /// clock (epoch ms), boot id, boot clock low and high end.
    fn clock(&self, k: usize) -> Clock {
        Clock {
            wall: format!("?{}", k + 1),
            boot_id: format!("?{}", k + 2),
            boot_low: format!("?{}", k + 3),
            boot_high: format!("?{}", k + 4),
        }
    }

    /// A lease must be over on the wall clock **and**, when the row was written during this
    /// boot, on the boot clock.
    fn free_at(&self, c: &Clock, r: &str, now: &str) -> String {
        let (id, low) = (&c.boot_id, &c.boot_low);
        format!(
            "({r}token IS NULL OR ({r}expires_at <= {now} AND NOT COALESCE({r}boot_id = {id} \
             AND {r}boot_expires_at > {low} \
             AND {r}boot_expires_at - {low} <= {r}expires_at - {r}acquired_at + {BOOT_SPAN_SLACK_MS}, 0)))"
        )
    }

    fn least(&self) -> &'static str {
        "MIN"
    }

    fn begin_write(&self) -> &'static str {
        "BEGIN IMMEDIATE"
    }

    fn freed(&self) -> &'static str {
        "token = NULL, expires_at = 0, boot_expires_at = 0"
    }

    fn extend_more(&self, c: &Clock) -> String {
        format!(
            ", boot_id = {}, boot_expires_at = {} + ?1",
            c.boot_id, c.boot_high
        )
    }

    fn linger_more(&self, c: &Clock) -> String {
        format!(
            ", boot_expires_at = MIN(boot_expires_at, {} + ?1)",
            c.boot_high
        )
    }

    fn lock_rows(&self) -> &'static str {
        ""
    }

    fn upsert(&self, table: &str, period: bool) -> String {
        super::upsert_on_conflict(self, table, period, None, |c, take, ttl| {
            (
                ", boot_id, boot_expires_at",
                format!(", {}, {} + {ttl}", c.boot_id, c.boot_high),
                format!(
                    ", boot_id = CASE WHEN {take} THEN excluded.boot_id ELSE l.boot_id END, \
                     boot_expires_at = CASE WHEN {take} THEN excluded.boot_expires_at ELSE l.boot_expires_at END"
                ),
            )
        })
    }

    fn columns(&self) -> Columns {
        Columns {
            name: "TEXT",
            token: "TEXT",
            owner: "VARCHAR(255)",
            int: "INTEGER",
            // The boot-clock columns (see `SqlStore`).
            more: "\x20 boot_id     TEXT NULL,\n\x20 boot_expires_at INTEGER NULL,\n",
            tail: "",
        }
    }
}

#[cfg(feature = "fence")]
impl FenceSql for Sqlite {
    fn resource_type(&self) -> &'static str {
        "TEXT"
    }

    /// `RAISE(ABORT, …)` (its message must be a literal). A value that is not an integer after
    /// the column's affinity (text that is not a number) is refused too: SQLite compares any
    /// text as greater than every number, so it would otherwise pass as "higher".
    fn guard(&self, g: &Guard<'_>) -> Vec<String> {
        let c = g.column;
        vec![format!(
            "CREATE TRIGGER IF NOT EXISTS {name} BEFORE UPDATE OF {c} ON {relation} FOR EACH ROW\n\
             WHEN {lowers} OR (NEW.{c} IS NOT NULL AND typeof(NEW.{c}) <> 'integer')\n\
             BEGIN\n\
             \x20 SELECT RAISE(ABORT, '{message}: the update lowers the fence');\n\
             END",
            name = g.qualified(),
            relation = g.relation,
            lowers = g.lowers(),
            message = g.message,
        )]
    }

    fn guard_count(&self, g: &Guard<'_>) -> String {
        let master = g.schema.map_or_else(
            || "sqlite_master".to_owned(),
            |s| format!("{s}.sqlite_master"),
        );
        format!(
            "SELECT COUNT(*) FROM {master} WHERE type = 'trigger' AND name = '{}'",
            g.name
        )
    }
}

/// A query that reads nothing but fails when `table` lacks the boot-clock columns.
#[cfg(feature = "sqlite")]
pub(crate) fn clock_columns_probe(table: &str) -> String {
    format!("SELECT boot_id, boot_expires_at FROM {table} LIMIT 0")
}

/// The statements that add the boot-clock columns to an SQLite table created before they existed.
#[cfg(feature = "sqlite")]
pub(crate) fn clock_columns(table: &str) -> [String; 2] {
    [
        format!("ALTER TABLE {table} ADD COLUMN boot_id TEXT NULL"),
        format!("ALTER TABLE {table} ADD COLUMN boot_expires_at INTEGER NULL"),
    ]
}
