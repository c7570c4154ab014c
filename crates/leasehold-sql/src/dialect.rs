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
    /// statement also sends `NOTIFY`.
    pub release: String,
    /// Release keeping a minimum lease: (linger ms, lock, slot, token).
    pub release_linger: String,
    /// Live holders: (lock, slots).
    pub state: String,
    /// Groups: every row of the lock's slots with the database's now, to pick candidate slots:
    /// (lock, slots).
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
             \x20 PRIMARY KEY (lock_name, slot)\n\
             ){tail}"
        )
    }

    /// The statements for `table` (the notification channel on PostgreSQL is a parameter).
    pub fn statements(self, table: &str) -> Statements {
        let now = self.now_ms();
        let p = |n| self.p(n);
        let min = self.min();
        let returning_lease = " RETURNING fence, acquired_at, expires_at";
        // New rows start their fence from the clock (ms × 1000), so a row deleted by hand and
        // recreated later still continues above every fence it issued before. An existing row is
        // taken over only once expired; a live row that already carries the request's token (a
        // retried request that was applied) is returned unchanged.
        let acquire = match self {
            Self::Postgres | Self::Sqlite => format!(
                "INSERT INTO {table} AS l (lock_name, slot, owner, token, fence, acquired_at, expires_at) \
                 SELECT {lock}, {slot}, {owner}, {token}, n.ms * 1000, n.ms, n.ms + {ttl} FROM (SELECT {now} AS ms) n WHERE true \
                 ON CONFLICT (lock_name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, \
                 fence = CASE WHEN l.expires_at <= excluded.acquired_at THEN l.fence + 1 ELSE l.fence END, \
                 acquired_at = CASE WHEN l.expires_at <= excluded.acquired_at THEN excluded.acquired_at ELSE l.acquired_at END, \
                 expires_at = CASE WHEN l.expires_at <= excluded.acquired_at THEN excluded.expires_at ELSE l.expires_at END \
                 WHERE l.expires_at <= excluded.acquired_at OR l.token = excluded.token{returning_lease}",
                lock = p(1),
                slot = p(2),
                owner = p(3),
                token = p(4),
                ttl = p(5),
            ),
            // MySQL has no conditional ON DUPLICATE KEY UPDATE, so every column is assigned
            // conditionally on the row having expired. Each condition reads only the old
            // `expires_at`, which is assigned last, so the statement means the same whether
            // assignments see earlier ones (MySQL's default) or not (MariaDB's
            // SIMULTANEOUS_ASSIGNMENT). Whether this token now holds the row is read back.
            Self::MySql => format!(
                "INSERT INTO {table} (lock_name, slot, owner, token, fence, acquired_at, expires_at) \
                 SELECT ?, ?, ?, ?, n.ms * 1000, n.ms, n.ms + ? FROM (SELECT {now} AS ms) n \
                 ON DUPLICATE KEY UPDATE \
                 fence = IF(expires_at <= VALUES(acquired_at), fence + 1, fence), \
                 owner = IF(expires_at <= VALUES(acquired_at), VALUES(owner), owner), \
                 token = IF(expires_at <= VALUES(acquired_at), VALUES(token), token), \
                 acquired_at = IF(expires_at <= VALUES(acquired_at), VALUES(acquired_at), acquired_at), \
                 expires_at = IF(expires_at <= VALUES(acquired_at), VALUES(expires_at), expires_at)"
            ),
        };
        let read_own = format!(
            "SELECT fence, acquired_at, expires_at FROM {table} WHERE lock_name = {} AND slot = {} AND token = {} AND expires_at > {now}",
            p(1),
            p(2),
            p(3)
        );
        let held = |first: usize| {
            format!(
                "lock_name = {} AND slot = {} AND token = {} AND expires_at > {now}",
                p(first),
                p(first + 1),
                p(first + 2)
            )
        };
        let returning_expiry = if self == Self::MySql {
            ""
        } else {
            " RETURNING expires_at"
        };
        let extend = format!(
            "UPDATE {table} SET expires_at = {now} + {} WHERE {}{returning_expiry}",
            p(1),
            held(2)
        );
        let release = format!(
            "UPDATE {table} SET token = NULL, expires_at = {now} WHERE {}",
            held(1)
        );
        let release = if self == Self::Postgres {
            format!(
                "WITH r AS ({release} RETURNING lock_name) SELECT pg_notify($4, lock_name)::text FROM r"
            )
        } else {
            release
        };
        let release_linger = format!(
            "UPDATE {table} SET expires_at = {min}(expires_at, {now} + {}) WHERE {}",
            p(1),
            held(2)
        );
        let live = format!(
            "lock_name = {} AND slot < {} AND expires_at > {now}",
            p(1),
            p(2)
        );
        let columns = "slot, owner, fence, acquired_at, expires_at";
        let state = format!("SELECT {columns} FROM {table} WHERE {live} ORDER BY slot");
        let group_slots = format!(
            "SELECT slot, token, expires_at, {now} FROM {table} WHERE lock_name = {} AND slot < {}",
            p(1),
            p(2)
        );
        let force_release =
            format!("UPDATE {table} SET token = NULL, expires_at = {now} WHERE {live}");
        let lock_rows = if self == Self::Sqlite {
            ""
        } else {
            " FOR UPDATE"
        };
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

/// Checks a table name: an SQL identifier, optionally schema-qualified (`schema.table`), each part
/// `[A-Za-z_][A-Za-z0-9_]*` and at most 63 bytes.
pub(crate) fn validate_table(table: &str) -> Result<(), String> {
    let parts: Vec<&str> = table.split('.').collect();
    if parts.len() > 2 {
        return Err(format!(
            "table name {table:?} has more than one '.'; use TABLE or SCHEMA.TABLE"
        ));
    }
    for part in parts {
        let mut chars = part.chars();
        let ok_first = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !ok_first || part.len() > 63 || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "table name {table:?} is not allowed: each part must match [A-Za-z_][A-Za-z0-9_]* and be at most 63 bytes"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_plain_identifiers() {
        assert!(validate_table("leasehold_leases").is_ok());
        assert!(validate_table("ops.leases").is_ok());
        for bad in ["", "1x", "a-b", "a;drop table x", "a.b.c", "x y"] {
            assert!(validate_table(bad).is_err(), "{bad}");
        }
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
