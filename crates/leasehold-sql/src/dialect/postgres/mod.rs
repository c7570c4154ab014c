//! PostgreSQL's SQL: numbered `$n` parameters, the server's `clock_timestamp()`, and two
//! statements that do more in their round trip — a release that also sends `NOTIFY`, and a
//! period claim that answers a refusal with the ledger. Hand-off, PostgreSQL's alone, is the
//! child `hand_off`.

pub(super) mod hand_off;

#[cfg(feature = "fence")]
use super::guard::{FenceSql, Guard, POSTGRES_STALE_FENCE_SQLSTATE};
use super::{Columns, Sql};
use hand_off::HandOffStatements;

/// The advisory lock (transaction-scoped) that processes installing fence DDL take turns on:
/// `CREATE OR REPLACE FUNCTION` fails with "tuple concurrently updated" when two sessions run it
/// at once. The key is "leasehol" in ASCII.
#[cfg(feature = "fence")]
const DDL_LOCK: &str = "SELECT pg_advisory_xact_lock(7810697145189526380)";

/// The longest table name PostgreSQL accepts, per part (`TABLE` or `SCHEMA`), in bytes: its
/// identifiers are at most `NAMEDATALEN - 1` = 63 bytes.
pub const POSTGRES_MAX_NAME_LEN: usize = 63;

/// Announces a release outside a release statement: (channel, lock).
#[cfg(feature = "postgres")]
pub(crate) const NOTIFY: &str = "SELECT pg_notify($1, $2)::text";

/// PostgreSQL 11 or later.
pub(super) struct Postgres;

/// The period claim from common table expressions `with` that end with `g`, the rows the
/// attempt wrote, of which those where `granted` (a condition on them, `g.…`) holds are this
/// request's grant: a grant's lease, or else the ledger as it was, whether slot 0 is held and
/// the database's now (the columns of `read_period`).
fn period_claim(table: &str, with: &str, granted: &str) -> String {
    let now = Postgres.now_ms();
    let ledger = super::LEDGER_COLUMNS
        .split(", ")
        .map(|c| format!("r.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let free = Postgres.free_at(&Postgres.clock(0), "r.", now);
    format!(
        "WITH {with} \
         SELECT fence, acquired_at, expires_at, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
         CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
         CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT) FROM g WHERE {granted} \
         UNION ALL SELECT NULL, NULL, NULL, {ledger}, CAST(CASE WHEN {free} THEN 0 ELSE 1 END AS BIGINT), {now} \
         FROM {table} r WHERE r.lock_name = $1 AND r.slot = 0 AND NOT EXISTS (SELECT 1 FROM g WHERE {granted})"
    )
}

impl Sql for Postgres {
    fn now_ms(&self) -> &'static str {
        "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)"
    }

    fn param(&self, n: usize) -> String {
        format!("${n}")
    }

    /// A `VALUES` list: PostgreSQL plans it as one hashed join, where a plain list of row values
    /// becomes a chain of `OR`s that exceeds its stack at a few thousand rows.
    fn rows_in(&self, first: usize, leases: usize) -> String {
        format!("(VALUES {})", self.row_values(first, leases))
    }

    fn upsert(&self, table: &str, period: bool) -> String {
        super::upsert_on_conflict(self, table, period, None, |_, _, _| {
            ("", String::new(), String::new())
        })
    }

    /// A refused claim is answered in the same round trip: the upsert runs in a CTE, and when it
    /// returns nothing the statement returns the ledger as it was instead.
    fn period_claim(&self, table: &str, upsert: String) -> String {
        period_claim(table, &format!("g AS ({upsert})"), "true")
    }

    fn hand_off(&self, table: &str) -> Option<HandOffStatements> {
        Some(hand_off::statements(self, table))
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
            more: hand_off::COLUMN,
            tail: "",
        }
    }
}

#[cfg(feature = "fence")]
impl FenceSql for Postgres {
    /// A trigger function (one per guarded column, named like the trigger) that raises SQLSTATE
    /// `LHF01` with both fences in the message, and the trigger, created only if missing.
    fn guard(&self, g: &Guard<'_>) -> Vec<String> {
        let (c, f, name, table) = (g.column, g.qualified(), &g.name, g.table);
        vec![
            format!(
                "CREATE OR REPLACE FUNCTION {f}() RETURNS trigger LANGUAGE plpgsql AS $leasehold$\n\
                 BEGIN\n\
                 \x20 IF {lowers} THEN\n\
                 \x20   RAISE EXCEPTION '{message}: fence % is below %', NEW.{c}, OLD.{c}\n\
                 \x20     USING ERRCODE = '{POSTGRES_STALE_FENCE_SQLSTATE}';\n\
                 \x20 END IF;\n\
                 \x20 RETURN NEW;\n\
                 END\n\
                 $leasehold$",
                lowers = g.lowers(),
                message = g.message,
            ),
            format!(
                "DO $leasehold$\n\
                 BEGIN\n\
                 \x20 IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '{table}'::regclass AND tgname = '{name}') THEN\n\
                 \x20   CREATE TRIGGER {name} BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION {f}();\n\
                 \x20 END IF;\n\
                 END\n\
                 $leasehold$"
            ),
        ]
    }

    fn guard_count(&self, g: &Guard<'_>) -> String {
        format!(
            "SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = to_regclass('{}') AND tgname = '{}'",
            g.table, g.name
        )
    }

    fn ddl_lock(&self) -> Option<&'static str> {
        Some(DDL_LOCK)
    }
}
