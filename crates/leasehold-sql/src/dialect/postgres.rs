//! PostgreSQL's SQL: numbered `$n` parameters, the server's `clock_timestamp()`, and two
//! statements that do more in their round trip — a release that also sends `NOTIFY`, and a
//! period claim that answers a refusal with the ledger.

use super::{Columns, Sql};

/// The longest table name PostgreSQL accepts, per part (`TABLE` or `SCHEMA`), in bytes: its
/// identifiers are at most `NAMEDATALEN - 1` = 63 bytes.
pub const POSTGRES_MAX_NAME_LEN: usize = 63;

/// Announces a release outside a release statement: (channel, lock).
pub(crate) const NOTIFY: &str = "SELECT pg_notify($1, $2)::text";

/// PostgreSQL 11 or later.
pub(super) struct Postgres;

impl Sql for Postgres {
    fn now_ms(&self) -> &'static str {
        "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)"
    }

    fn param(&self, n: usize) -> String {
        format!("${n}")
    }

    fn upsert(&self, table: &str, period: bool) -> String {
        super::upsert_on_conflict(self, table, period, |_, _, _| {
            ("", String::new(), String::new())
        })
    }

    /// A refused claim is answered in the same round trip: the upsert runs in a CTE, and when it
    /// returns nothing the statement returns the ledger as it was instead.
    fn period_claim(&self, table: &str, upsert: String) -> String {
        format!(
            "WITH g AS ({upsert}) \
             SELECT fence, acquired_at, expires_at, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
             CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT) FROM g \
             UNION ALL SELECT NULL, NULL, NULL, r.ledger_period, r.ledger_at, r.ledger_by, {now} \
             FROM {table} r WHERE r.lock_name = $1 AND r.slot = 0 AND NOT EXISTS (SELECT 1 FROM g)",
            now = self.now_ms()
        )
    }

    /// The release also sends `NOTIFY` on the channel, parameter `$4`, with the lock's name.
    fn announce_release(&self, update: String) -> String {
        format!(
            "WITH r AS ({update} RETURNING lock_name) SELECT pg_notify($4, lock_name)::text FROM r"
        )
    }

    fn columns(&self) -> Columns {
        Columns {
            name: "VARCHAR(255)",
            token: "CHAR(32)",
            owner: "VARCHAR(255)",
            int: "BIGINT",
            more: "",
            tail: "",
        }
    }
}
