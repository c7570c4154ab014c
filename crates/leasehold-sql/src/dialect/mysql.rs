//! MySQL's and MariaDB's SQL: positional `?` parameters, no `RETURNING` (the store reads its
//! own row back), and an upsert whose every assignment is conditional.

#[cfg(feature = "fence")]
use super::guard::{FenceSql, Guard};
use super::{Columns, Sql};

/// The longest table name MySQL and MariaDB accept, per part (`TABLE` or `SCHEMA`): 64
/// characters (bytes, as names are ASCII).
pub const MYSQL_MAX_NAME_LEN: usize = 64;

/// MySQL 8 or MariaDB 10.5 or later.
pub(super) struct MySql;

impl Sql for MySql {
    // The session time zone is set to UTC on connect, so this is exact.
    fn now_ms(&self) -> &'static str {
        "CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)"
    }

    fn param(&self, _n: usize) -> String {
        "?".to_owned()
    }

    fn cast_int(&self) -> &'static str {
        "SIGNED"
    }

    fn int_div(&self) -> &'static str {
        "DIV"
    }

    fn returning(&self, _columns: &str) -> String {
        String::new()
    }

    /// MySQL has no conditional ON DUPLICATE KEY UPDATE, so every column is assigned
    /// conditionally on the row being free. The condition reads only the old `expires_at` (and,
    /// for a period claim, the old `ledger_at` and `ledger_pending`, which are assigned last, and
    /// `ledger_ran`, assigned first to a value under which the condition stays as it was), so
    /// the statement means the same whether assignments see earlier ones (MySQL's default) or
    /// not (MariaDB's SIMULTANEOUS_ASSIGNMENT). Releases set `expires_at` to 0 along with
    /// clearing the token, so the expiry alone tells a free row. Whether this token now holds
    /// the row is read back.
    fn upsert(&self, table: &str, period: bool) -> String {
        let take = if period {
            format!(
                "expires_at <= VALUES(acquired_at) AND {}",
                super::ledger_allows("", "VALUES(ledger_from)")
            )
        } else {
            "expires_at <= VALUES(acquired_at)".to_owned()
        };
        let (ledger_cols, ledger_vals, ledger_first, ledger_early, ledger_late) = if period {
            // The new claim keeps the latest run; when the condition held, it still holds with
            // that value (a run it allowed was before the window), so the later assignments see
            // the same condition.
            let first = format!(
                "ledger_ran = IF({take}, {}, ledger_ran), ",
                super::ledger_last_run("")
            );
            // The grant replaces the whole record; `ledger_period` is kept (the window's id)
            // for older versions of this store, which judge a claim by it alone.
            let early = [
                "ledger_period",
                "ledger_by",
                "ledger_token",
                "ledger_from",
                "ledger_until",
            ]
            .iter()
            .map(|c| format!("{c} = IF({take}, VALUES({c}), {c}), "))
            .collect::<String>();
            // Assigned after `expires_at`: by then (assignments seeing earlier ones) a grant
            // shows as this request's token and times in the row. `ledger_pending` before
            // `ledger_at`, which it is compared with.
            let granted = "(token = VALUES(token) AND acquired_at = VALUES(acquired_at) \
                           AND expires_at = VALUES(expires_at))";
            let late = ["ledger_pending", "ledger_at"]
                .iter()
                .map(|c| format!(", {c} = IF(({take}) OR {granted}, VALUES({c}), {c})"))
                .collect::<String>();
            (
                ", ledger_period, ledger_at, ledger_by, ledger_token, ledger_from, ledger_until, ledger_pending",
                ", n.p, n.ms, ?, ?, n.f, n.u, n.ms",
                first,
                early,
                late,
            )
        } else {
            ("", "", String::new(), String::new(), String::new())
        };
        let source = super::upsert_source(self, &self.clock(0), period);
        format!(
            "INSERT INTO {table} (lock_name, slot, owner, token, fence, acquired_at, expires_at{ledger_cols}) \
             SELECT ?, ?, ?, ?, n.ms * 1000, n.ms, n.ms + ?{ledger_vals} FROM {source} \
             ON DUPLICATE KEY UPDATE \
             {ledger_first}\
             fence = IF({take}, fence + 1, fence), \
             owner = IF({take}, VALUES(owner), owner), \
             token = IF({take}, VALUES(token), token), \
             acquired_at = IF({take}, VALUES(acquired_at), acquired_at), \
             {ledger_early}\
             expires_at = IF({take}, VALUES(expires_at), expires_at){ledger_late}"
        )
    }

    fn columns(&self) -> Columns {
        // Node ids are up to 255 bytes of any UTF-8 (leasehold::limits::MAX_NODE_ID_LEN): the column
        // says utf8mb4, whatever the database's default character set.
        Columns {
            name: "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin",
            token: "CHAR(32) CHARACTER SET ascii",
            owner: "VARCHAR(255) CHARACTER SET utf8mb4",
            int: "BIGINT",
            more: "",
            tail: " ENGINE=InnoDB",
        }
    }
}

#[cfg(feature = "fence")]
impl FenceSql for MySql {
    /// Bytes compared as bytes: a `VARCHAR` key would compare case-insensitively under the
    /// default collation, and ignore trailing spaces under every `_bin` collation MariaDB has.
    fn resource_type(&self) -> &'static str {
        "VARBINARY(255)"
    }

    /// `previous_fence` is assigned first, so it reads the old fence whether assignments see
    /// earlier ones (MySQL) or not (MariaDB's SIMULTANEOUS_ASSIGNMENT).
    fn fence_upsert(&self, table: &str) -> String {
        format!(
            "INSERT INTO {table} (resource, fence, updated_at) VALUES (?, ?, {}) \
             ON DUPLICATE KEY UPDATE previous_fence = fence, fence = VALUES(fence), \
             updated_at = VALUES(updated_at)",
            self.now_ms()
        )
    }

    /// `SIGNAL SQLSTATE '45000'` with both fences in the message (at most 128 characters, the
    /// limit of `MESSAGE_TEXT`).
    fn guard(&self, g: &Guard<'_>) -> Vec<String> {
        let c = g.column;
        vec![format!(
            "CREATE TRIGGER {name} BEFORE UPDATE ON {table} FOR EACH ROW\n\
             BEGIN\n\
             \x20 DECLARE msg VARCHAR(128);\n\
             \x20 IF {lowers} THEN\n\
             \x20   SET msg = LEFT(CONCAT('{message}: fence ', COALESCE(NEW.{c}, 'NULL'), ' is below ', OLD.{c}), 128);\n\
             \x20   SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;\n\
             \x20 END IF;\n\
             END",
            name = g.qualified(),
            table = g.table,
            lowers = g.lowers(),
            message = g.message,
        )]
    }

    fn guard_count(&self, g: &Guard<'_>) -> String {
        let schema = g
            .schema
            .map_or_else(|| "DATABASE()".to_owned(), |s| format!("'{s}'"));
        format!(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {schema} \
             AND TRIGGER_NAME = '{}'",
            g.name
        )
    }

    fn transactional_ddl(&self) -> bool {
        false
    }

    fn value_upsert(&self, table: &str) -> String {
        format!(
            "INSERT INTO {table} (resource, value) VALUES (?, ?) \
             ON DUPLICATE KEY UPDATE value = VALUES(value)"
        )
    }
}
