//! The three SQL dialects and the statements each uses.
//!
//! Times are stored as milliseconds since the Unix epoch, always read from the **database clock**;
//! tokens as 32 hex digits. Every statement is a single atomic statement.

use std::fmt;

/// A supported database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// SQLite 3.35 or later (bundled).
    Sqlite,
    /// PostgreSQL 11 or later.
    Postgres,
    /// MySQL 8 or MariaDB 10.5 or later.
    MySql,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
            Self::MySql => "mysql",
        })
    }
}

/// The exact SQL a [`SqlStore`](crate::SqlStore) runs, for review by DBAs and for benchmarks that
/// issue the same statements raw. Parameters are numbered (`$n` on PostgreSQL, `?n` on SQLite)
/// or positional (`?` on MySQL) in the order given.
///
/// On SQLite every statement takes four more parameters after its own, the host's clocks: the
/// wall clock in epoch ms, the boot id (`/proc/sys/kernel/random/boot_id`, or `NULL`), and the
/// boot clock in ms (`/proc/uptime`) as the low and the high end of its 10 ms resolution (or
/// `NULL`). A row is free once released, or once its lease is over on the wall clock and, if it
/// was written during this boot, on the boot clock too.
///
/// ```
/// use leasehold_sql::Dialect;
/// let sql = Dialect::Postgres.statements("leasehold_leases");
/// assert!(sql.acquire.starts_with("INSERT INTO leasehold_leases"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Statements {
    /// Acquire slot `slot` of `lock`: (lock, slot, owner, token, ttl ms); returns fence,
    /// acquired_at, expires_at on PostgreSQL and SQLite, nothing on MySQL.
    pub acquire: String,
    /// MySQL: reads back the row the upsert wrote (lock, slot, token) — MySQL has no `RETURNING`.
    pub read_own: String,
    /// Extend: (ttl ms, lock, slot, token); returns expires_at except on MySQL.
    pub extend: String,
    /// Release: (lock, slot, token), plus the notification channel on PostgreSQL, where the
    /// statement also sends `NOTIFY`. The row is marked free (no token, `expires_at` 0).
    pub release: String,
    /// Release keeping a minimum lease: (linger ms, lock, slot, token).
    pub release_linger: String,
    /// Live holders: (lock, slots).
    pub state: String,
    /// Groups: every row of the lock's slots as (slot, token, 1 if held else 0), to pick
    /// candidate slots: (lock, slots).
    pub group_slots: String,
    /// Break-glass release of every live slot: (lock, slots); run in one transaction after
    /// `force_select`.
    pub force_release: String,
    /// The rows a forced release is about to free, as they were (locked where the database can):
    /// (lock, slots).
    pub force_select: String,
}

impl Dialect {
    /// The database's current time in epoch milliseconds, as an SQL expression.
    pub(crate) fn now_ms(self) -> &'static str {
        match self {
            Self::Sqlite => "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
            Self::Postgres => "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)",
            // The session time zone is set to UTC on connect, so this is exact.
            Self::MySql => "CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
        }
    }

    /// Parameter `n` (1-based).
    fn p(self, n: usize) -> String {
        match self {
            Self::Sqlite => format!("?{n}"),
            Self::Postgres => format!("${n}"),
            Self::MySql => "?".to_owned(),
        }
    }

    fn min(self) -> &'static str {
        match self {
            Self::Sqlite => "MIN",
            Self::Postgres | Self::MySql => "LEAST",
        }
    }

    /// The `CREATE TABLE` statement for `table`, safe to run repeatedly.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let ddl = Dialect::Postgres.create_table("leasehold_leases");
    /// assert!(ddl.contains("PRIMARY KEY (lock_name, slot)"));
    /// ```
    pub fn create_table(self, table: &str) -> String {
        let (name_type, token_type, tail) = match self {
            Self::MySql => (
                "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin",
                "CHAR(32) CHARACTER SET ascii",
                " ENGINE=InnoDB",
            ),
            Self::Postgres => ("VARCHAR(255)", "CHAR(32)", ""),
            Self::Sqlite => ("TEXT", "TEXT", ""),
        };
        // SQLite also times leases by the host's boot clock (see `SqlStore`).
        let boot = if self == Self::Sqlite {
            "\x20 boot_id     TEXT NULL,\n\x20 boot_expires_at INTEGER NULL,\n"
        } else {
            ""
        };
        // Node ids are up to 255 bytes of any UTF-8 (leasehold::MAX_NODE_ID_LEN): on MySQL the
        // column says utf8mb4, whatever the database's default character set.
        let owner_type = if self == Self::MySql {
            "VARCHAR(255) CHARACTER SET utf8mb4"
        } else {
            "VARCHAR(255)"
        };
        let int = if self == Self::Sqlite {
            "INTEGER"
        } else {
            "BIGINT"
        };
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (\n\
             \x20 lock_name   {name_type} NOT NULL,\n\
             \x20 slot        INTEGER NOT NULL,\n\
             \x20 owner       {owner_type} NOT NULL,\n\
             \x20 token       {token_type} NULL,\n\
             \x20 fence       {int} NOT NULL,\n\
             \x20 acquired_at {int} NOT NULL,\n\
             \x20 expires_at  {int} NOT NULL,\n\
             {boot}\
             \x20 PRIMARY KEY (lock_name, slot)\n\
             ){tail}"
        )
    }

    /// The statements for `table` (the notification channel on PostgreSQL is a parameter).
    pub fn statements(self, table: &str) -> Statements {
        let p = |n| self.p(n);
        let min = self.min();
        let sqlite = self == Self::Sqlite;
        let returning_lease = " RETURNING fence, acquired_at, expires_at";
        // New rows start their fence from the clock (ms × 1000), so a row deleted by hand and
        // recreated later still continues above every fence it issued before. An existing row is
        // taken over only once free (released, or expired); a live row that already carries the
        // request's token (a retried request that was applied) is returned unchanged.
        let acquire = match self {
            Self::Postgres | Self::Sqlite => {
                let c = Clock::new(self, 5);
                // The now of this statement is the one written as `acquired_at`.
                let free = c.free_at("l.", "excluded.acquired_at");
                let (boot_cols, boot_vals, boot_set) = if sqlite {
                    (
                        ", boot_id, boot_expires_at",
                        format!(", {}, {} + ?5", c.boot_id, c.boot_high),
                        format!(
                            ", boot_id = CASE WHEN {free} THEN excluded.boot_id ELSE l.boot_id END, \
                             boot_expires_at = CASE WHEN {free} THEN excluded.boot_expires_at ELSE l.boot_expires_at END"
                        ),
                    )
                } else {
                    ("", String::new(), String::new())
                };
                format!(
                    "INSERT INTO {table} AS l (lock_name, slot, owner, token, fence, acquired_at, expires_at{boot_cols}) \
                     SELECT {lock}, {slot}, {owner}, {token}, n.ms * 1000, n.ms, n.ms + {ttl}{boot_vals} FROM (SELECT {now} AS ms) n WHERE true \
                     ON CONFLICT (lock_name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, \
                     fence = CASE WHEN {free} THEN l.fence + 1 ELSE l.fence END, \
                     acquired_at = CASE WHEN {free} THEN excluded.acquired_at ELSE l.acquired_at END, \
                     expires_at = CASE WHEN {free} THEN excluded.expires_at ELSE l.expires_at END{boot_set} \
                     WHERE {free} OR l.token = excluded.token{returning_lease}",
                    lock = p(1),
                    slot = p(2),
                    owner = p(3),
                    token = p(4),
                    ttl = p(5),
                    now = c.wall,
                )
            }
            // MySQL has no conditional ON DUPLICATE KEY UPDATE, so every column is assigned
            // conditionally on the row being free. Each condition reads only the old
            // `expires_at`, which is assigned last, so the statement means the same whether
            // assignments see earlier ones (MySQL's default) or not (MariaDB's
            // SIMULTANEOUS_ASSIGNMENT). Releases set `expires_at` to 0 along with clearing the
            // token, so the expiry alone tells a free row. Whether this token now holds the row
            // is read back.
            Self::MySql => format!(
                "INSERT INTO {table} (lock_name, slot, owner, token, fence, acquired_at, expires_at) \
                 SELECT ?, ?, ?, ?, n.ms * 1000, n.ms, n.ms + ? FROM (SELECT {now} AS ms) n \
                 ON DUPLICATE KEY UPDATE \
                 fence = IF(expires_at <= VALUES(acquired_at), fence + 1, fence), \
                 owner = IF(expires_at <= VALUES(acquired_at), VALUES(owner), owner), \
                 token = IF(expires_at <= VALUES(acquired_at), VALUES(token), token), \
                 acquired_at = IF(expires_at <= VALUES(acquired_at), VALUES(acquired_at), acquired_at), \
                 expires_at = IF(expires_at <= VALUES(acquired_at), VALUES(expires_at), expires_at)",
                now = self.now_ms(),
            ),
        };
        let read_own = format!(
            "SELECT fence, acquired_at, expires_at FROM {table} WHERE lock_name = {} AND slot = {} AND token = {} AND {}",
            p(1),
            p(2),
            p(3),
            Clock::new(self, 3).live("")
        );
        // The row `lock, slot` held by `token`, parameters from `first`, in a statement with `k`.
        let held = |first: usize, c: &Clock| {
            format!(
                "lock_name = {} AND slot = {} AND token = {} AND {}",
                p(first),
                p(first + 1),
                p(first + 2),
                c.live("")
            )
        };
        let returning_expiry = if self == Self::MySql {
            ""
        } else {
            " RETURNING expires_at"
        };
        let c = Clock::new(self, 4);
        let boot_extend = if sqlite {
            format!(
                ", boot_id = {}, boot_expires_at = {} + ?1",
                c.boot_id, c.boot_high
            )
        } else {
            String::new()
        };
        let extend = format!(
            "UPDATE {table} SET expires_at = {} + {}{boot_extend} WHERE {}{returning_expiry}",
            c.wall,
            p(1),
            held(2, &c)
        );
        // A release marks the row free outright (no token, expiry 0), so it looks free to every
        // clock, however far behind.
        let freed = if sqlite {
            "token = NULL, expires_at = 0, boot_expires_at = 0"
        } else {
            "token = NULL, expires_at = 0"
        };
        let release = format!(
            "UPDATE {table} SET {freed} WHERE {}",
            held(1, &Clock::new(self, 3))
        );
        let release = if self == Self::Postgres {
            format!(
                "WITH r AS ({release} RETURNING lock_name) SELECT pg_notify($4, lock_name)::text FROM r"
            )
        } else {
            release
        };
        let c = Clock::new(self, 4);
        let boot_linger = if sqlite {
            format!(
                ", boot_expires_at = MIN(boot_expires_at, {} + ?1)",
                c.boot_high
            )
        } else {
            String::new()
        };
        let release_linger = format!(
            "UPDATE {table} SET expires_at = {min}(expires_at, {} + {}){boot_linger} WHERE {}",
            c.wall,
            p(1),
            held(2, &c)
        );
        let c = Clock::new(self, 2);
        let live = format!(
            "lock_name = {} AND slot < {} AND {}",
            p(1),
            p(2),
            c.live("")
        );
        let columns = "slot, owner, fence, acquired_at, expires_at";
        let state = format!("SELECT {columns} FROM {table} WHERE {live} ORDER BY slot");
        let int = if self == Self::MySql {
            "SIGNED"
        } else {
            "BIGINT"
        };
        let group_slots = format!(
            "SELECT slot, token, CAST(CASE WHEN {} THEN 0 ELSE 1 END AS {int}) FROM {table} WHERE lock_name = {} AND slot < {}",
            c.free(""),
            p(1),
            p(2)
        );
        let force_release = format!("UPDATE {table} SET {freed} WHERE {live}");
        let lock_rows = if sqlite { "" } else { " FOR UPDATE" };
        let force_select =
            format!("SELECT {columns} FROM {table} WHERE {live} ORDER BY slot{lock_rows}");
        Statements {
            acquire,
            read_own,
            extend,
            release,
            release_linger,
            state,
            group_slots,
            force_release,
            force_select,
        }
    }
}

/// The clock expressions of one statement with `k` parameters of its own. On SQLite the clocks
/// are four more parameters, `?k+1` to `?k+4`: wall clock (epoch ms), boot id, boot clock low and
/// high end (see the `clock` module); elsewhere the database server's clock.
struct Clock {
    dialect: Dialect,
    wall: String,
    boot_id: String,
    boot_low: String,
    boot_high: String,
}

/// How much longer than its granted span a row's boot-clock expiry may lie ahead before the boot
/// clock is not trusted for it (a reading from a clock that is not this host's), in ms.
const BOOT_SPAN_SLACK_MS: u32 = 1_000;

impl Clock {
    fn new(dialect: Dialect, k: usize) -> Self {
        if dialect == Dialect::Sqlite {
            Self {
                dialect,
                wall: format!("?{}", k + 1),
                boot_id: format!("?{}", k + 2),
                boot_low: format!("?{}", k + 3),
                boot_high: format!("?{}", k + 4),
            }
        } else {
            Self {
                dialect,
                wall: dialect.now_ms().to_owned(),
                boot_id: String::new(),
                boot_low: String::new(),
                boot_high: String::new(),
            }
        }
    }

    /// True when the row (columns prefixed `r`) is free: released, or expired. On SQLite a lease
    /// must be over on the wall clock **and**, when the row was written during this boot, on the
    /// boot clock.
    fn free(&self, r: &str) -> String {
        self.free_at(r, &self.wall)
    }

    fn free_at(&self, r: &str, now: &str) -> String {
        if self.dialect == Dialect::Sqlite {
            let (id, low) = (&self.boot_id, &self.boot_low);
            format!(
                "({r}token IS NULL OR ({r}expires_at <= {now} AND NOT COALESCE({r}boot_id = {id} \
                 AND {r}boot_expires_at > {low} \
                 AND {r}boot_expires_at - {low} <= {r}expires_at - {r}acquired_at + {BOOT_SPAN_SLACK_MS}, 0)))"
            )
        } else {
            format!("({r}token IS NULL OR {r}expires_at <= {now})")
        }
    }

    /// True when the row is held.
    fn live(&self, r: &str) -> String {
        format!("NOT {}", self.free(r))
    }
}

/// The statements that add the boot-clock columns to an SQLite table created before they existed.
pub(crate) fn sqlite_clock_columns(table: &str) -> [String; 2] {
    [
        format!("ALTER TABLE {table} ADD COLUMN boot_id TEXT NULL"),
        format!("ALTER TABLE {table} ADD COLUMN boot_expires_at INTEGER NULL"),
    ]
}

/// The longest table name PostgreSQL accepts, per part (`TABLE` or `SCHEMA`), in bytes: its
/// identifiers are at most `NAMEDATALEN - 1` = 63 bytes.
pub const POSTGRES_MAX_NAME_LEN: usize = 63;
/// The longest table name MySQL and MariaDB accept, per part (`TABLE` or `SCHEMA`): 64
/// characters (bytes, as names are ASCII).
pub const MYSQL_MAX_NAME_LEN: usize = 64;
/// The longest table name this crate accepts on SQLite, per part (`TABLE` or attached `SCHEMA`).
/// SQLite itself has no such limit; 64 keeps every SQLite name usable on MySQL too.
pub const SQLITE_MAX_NAME_LEN: usize = 64;

/// The longest PostgreSQL `NOTIFY` channel name, in bytes.
const CHANNEL_MAX_LEN: usize = 63;
const CHANNEL_PREFIX: &str = "leasehold_release_";

/// A table name the store cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableNameError {
    /// More than one `.`.
    #[error("table name {name:?} has more than one '.'; use TABLE or SCHEMA.TABLE")]
    TooManyParts {
        /// The name given.
        name: String,
    },
    /// A part is empty or has a character outside `[A-Za-z0-9_]`, or starts with a digit.
    #[error(
        "table name {name:?} is not allowed: each part (TABLE or SCHEMA.TABLE) must match [A-Za-z_][A-Za-z0-9_]*"
    )]
    BadCharacters {
        /// The name given.
        name: String,
    },
    /// A part is longer than the dialect allows.
    #[error(
        "table name {name:?} is too long for {dialect}: a part has {len} bytes, at most {max} are allowed"
    )]
    TooLong {
        /// The name given.
        name: String,
        /// The dialect.
        dialect: Dialect,
        /// The length of the longest part, in bytes.
        len: usize,
        /// The dialect's limit per part ([`Dialect::max_name_len`]).
        max: usize,
    },
}

impl Dialect {
    /// The longest table name part (`TABLE` or `SCHEMA`) in bytes: [`POSTGRES_MAX_NAME_LEN`],
    /// [`MYSQL_MAX_NAME_LEN`] or [`SQLITE_MAX_NAME_LEN`].
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// assert_eq!(Dialect::Postgres.max_name_len(), 63);
    /// ```
    pub const fn max_name_len(self) -> usize {
        match self {
            Self::Postgres => POSTGRES_MAX_NAME_LEN,
            Self::MySql => MYSQL_MAX_NAME_LEN,
            Self::Sqlite => SQLITE_MAX_NAME_LEN,
        }
    }

    /// Checks a table name: an SQL identifier, optionally schema-qualified (`SCHEMA.TABLE`), each
    /// part `[A-Za-z_][A-Za-z0-9_]*` and at most [`max_name_len`](Self::max_name_len) bytes.
    ///
    /// # Errors
    ///
    /// [`TableNameError`] saying what is wrong and what is allowed.
    ///
    /// ```
    /// use leasehold_sql::{Dialect, TableNameError};
    /// assert!(Dialect::MySql.check_table_name(&"t".repeat(64)).is_ok());
    /// assert!(matches!(
    ///     Dialect::Postgres.check_table_name(&"t".repeat(64)),
    ///     Err(TableNameError::TooLong { max: 63, .. })
    /// ));
    /// ```
    pub fn check_table_name(self, table: &str) -> Result<(), TableNameError> {
        let parts: Vec<&str> = table.split('.').collect();
        if parts.len() > 2 {
            return Err(TableNameError::TooManyParts {
                name: table.to_owned(),
            });
        }
        for part in &parts {
            let mut chars = part.chars();
            let ok_first = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if !ok_first || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(TableNameError::BadCharacters {
                    name: table.to_owned(),
                });
            }
        }
        let len = parts.iter().map(|p| p.len()).max().unwrap_or_default();
        if len > self.max_name_len() {
            return Err(TableNameError::TooLong {
                name: table.to_owned(),
                dialect: self,
                len,
                max: self.max_name_len(),
            });
        }
        Ok(())
    }
}

/// The PostgreSQL `NOTIFY` channel for `table`: `leasehold_release_<table>` with `.` as `_`, or,
/// when that would exceed PostgreSQL's 63-byte limit, `leasehold_release_` plus the name's first
/// 28 bytes, `_` and 16 hex digits of a hash of the whole name. Every process derives the same.
pub(crate) fn notify_channel(table: &str) -> String {
    let plain = format!("{CHANNEL_PREFIX}{}", table.replace('.', "_"));
    if plain.len() <= CHANNEL_MAX_LEN {
        return plain;
    }
    // FNV-1a (64 bit): stable across processes, platforms and versions.
    let hash = table.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let keep = CHANNEL_MAX_LEN - CHANNEL_PREFIX.len() - 17;
    // Table names are ASCII, so any byte offset is a character boundary.
    let head: String = plain[CHANNEL_PREFIX.len()..].chars().take(keep).collect();
    format!("{CHANNEL_PREFIX}{head}_{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_plain_identifiers() {
        for d in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            assert!(d.check_table_name("leasehold_leases").is_ok());
            assert!(d.check_table_name("ops.leases").is_ok());
            for bad in [
                "",
                "1x",
                "a-b",
                "a;drop table x",
                "a.b.c",
                "x y",
                "a.",
                ".a",
            ] {
                assert!(d.check_table_name(bad).is_err(), "{bad}");
            }
            let longest = "t".repeat(d.max_name_len());
            assert!(d.check_table_name(&longest).is_ok());
            assert!(d.check_table_name(&format!("{longest}.{longest}")).is_ok());
            let err = d
                .check_table_name(&format!("s.{longest}x"))
                .expect_err("one byte too long");
            assert!(
                matches!(err, TableNameError::TooLong { len, max, .. } if len == max + 1),
                "{err}"
            );
            assert!(
                err.to_string()
                    .contains(&format!("at most {}", d.max_name_len()))
            );
        }
    }

    #[test]
    fn channel_names_always_fit_and_differ() {
        assert_eq!(
            notify_channel("leasehold_leases"),
            "leasehold_release_leasehold_leases"
        );
        let a = format!("{}.{}", "s".repeat(63), "a".repeat(63));
        let b = format!("{}.{}", "s".repeat(63), "b".repeat(63));
        for long in [&a, &b, &"x".repeat(46), &"x".repeat(63)] {
            let c = notify_channel(long);
            assert!(c.len() <= 63, "{c} has {} bytes", c.len());
            assert!(c.starts_with("leasehold_release_"));
        }
        assert_ne!(notify_channel(&a), notify_channel(&b));
        assert_eq!(notify_channel(&a), notify_channel(&a.clone()));
    }

    #[test]
    fn mysql_placeholders_are_positional_and_others_numbered() {
        let m = Dialect::MySql.statements("t");
        assert_eq!(m.extend.matches('?').count(), 4);
        let p = Dialect::Postgres.statements("t");
        assert!(p.extend.contains("$4") && p.extend.contains("RETURNING"));
        let s = Dialect::Sqlite.statements("t");
        assert!(s.release_linger.contains("MIN(") && s.acquire.contains("?5"));
    }
}
