//! The SQL dialects: what every database shares, and one child module per database.
//!
//! Times are stored as milliseconds since the Unix epoch, always read from the **database clock**;
//! tokens as 32 hex digits. Every statement is a single atomic statement.
//!
//! The tree: this module assembles the statements every database shares, from the pieces the
//! private [`Sql`] trait gives; each database implements it in its own child (`sqlite.rs`,
//! `postgres/`, which also owns hand-off's statements, and `mysql.rs`), and no child uses
//! another. `names.rs` holds the table- and column-name rules; `guard.rs` (feature `fence`) the
//! fence table's SQL and the "never lower" guard triggers. A new database is one more child.

#[cfg(feature = "fence")]
mod guard;
mod mysql;
mod names;
mod postgres;
mod sqlite;

use std::fmt;

#[cfg(feature = "fence")]
pub(crate) use guard::sink_values;
#[cfg(feature = "fence")]
pub use guard::{
    DEFAULT_FENCE_TABLE, FenceStatements, POSTGRES_STALE_FENCE_SQLSTATE, STALE_FENCE_MESSAGE,
};
pub use mysql::MYSQL_MAX_NAME_LEN;
pub(crate) use names::notify_channel;
pub use names::{ColumnNameError, TableNameError};
#[cfg(feature = "postgres")]
pub(crate) use postgres::NOTIFY as POSTGRES_NOTIFY;
pub use postgres::POSTGRES_MAX_NAME_LEN;
pub use postgres::hand_off::{HandOffStatements, MAX_LINE_BYTES};
pub use sqlite::SQLITE_MAX_NAME_LEN;
#[cfg(feature = "sqlite")]
pub(crate) use sqlite::{
    clock_columns as sqlite_clock_columns, clock_columns_probe as sqlite_clock_columns_probe,
};

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
    /// MySQL: the live row of one slot (lock, slot), read back after an upsert or update — MySQL
    /// has no `RETURNING`: slot, owner, fence, acquired_at, expires_at and token. The row is
    /// the writer's if the token is its own; after a refused upsert it names the holder.
    pub read_slot: String,
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
    /// Listing: the rows of the locks after a name, in key order, live or not (so that one page
    /// reads a bounded number of rows, however many are free): (after, limit); returns
    /// lock_name, slot, owner, fence, acquired_at, expires_at, and 1 if held else 0.
    pub list: String,
    /// Break-glass release of every live slot: (lock, slots); run in one transaction after
    /// `force_select`.
    pub force_release: String,
    /// The rows a forced release is about to free, as they were (locked where the database can):
    /// (lock, slots).
    pub force_select: String,
    /// Acquire slot 0 of `lock` claiming a period of the ledger: (lock, slot, owner, token, ttl
    /// ms, period length ms, period offset ms) on PostgreSQL and SQLite; (lock, slot, owner,
    /// token, ttl ms, owner, token, offset ms, length ms) on MySQL. The statement's now `N`
    /// gives the window claimed, `[from, until)` with `from = N − ((N − offset) mod length)`,
    /// and its id `floor((N − offset) / length)`. Granted only if the row is free **and** its
    /// ledger does not count for the window: no claim recorded (`ledger_at` missing), the latest
    /// claim granted before `from`, or that claim not started (`ledger_pending = ledger_at`).
    /// The grant replaces the ledger with the lease: `ledger_period` (the id), `ledger_at` (N),
    /// `ledger_by` (owner), `ledger_token` (token), `ledger_from`, `ledger_until` and
    /// `ledger_pending` (N: not started). Returns like `acquire`; on PostgreSQL the row has the
    /// columns of `read_period` after the lease's, and a refused claim returns instead a row of
    /// `NULL` lease columns with the ledger as it was (as `read_period`).
    pub acquire_period: String,
    /// The ledger of `lock` and the database's now: (lock); returns `ledger_period`,
    /// `ledger_at`, `ledger_by`, `ledger_from`, `ledger_until`, `ledger_pending`, 1 if slot 0
    /// is held else 0, and now (epoch ms): the record `period_record` reads, and what tells a
    /// claim refused by the ledger ("already ran") from contention.
    pub read_period: String,
    /// `read_period` for a table that has the ledger's first three columns but not the claims'
    /// or the run's (`create_schema(false)` on a table of an older version): the same columns,
    /// `NULL` where the table may have none, so that an older version's records still read.
    pub read_old_period: String,
    /// Marks the period claim of the lease `token` holds on slot 0 started: (lock, slot,
    /// token); changes one row only if the token holds the live lease **and** made the latest
    /// claim (`ledger_token`), setting `ledger_pending` to `NULL` (again, if it already was).
    pub start_period: String,
    /// The ledger of `lock` as `read_period` reads it, locking slot 0's row until the
    /// transaction ends (`FOR UPDATE` on PostgreSQL and MySQL; run it in a `BEGIN IMMEDIATE`
    /// transaction on SQLite): (lock). The read of a clear, which then runs `clear_period` in
    /// the same transaction, so the record it returns is the one it deletes.
    pub clear_period_select: String,
    /// Deletes the ledger of `lock`: every `ledger_*` column of slot 0's row set to `NULL`, the
    /// row itself (its holder, expiry and fence) untouched: (lock). Run after
    /// `clear_period_select`, in its transaction.
    pub clear_period: String,
    /// `clear_period_select` for a table without the claims' or the run's columns (as
    /// `read_old_period`): (lock).
    pub clear_old_period_select: String,
    /// `clear_period` for a table without the claims' or the run's columns: the first three
    /// `ledger_*` columns set to `NULL`: (lock).
    pub clear_old_period: String,
    /// The fence of the live lease `token` holds on `(lock, slot)`: (lock, slot, token). Locks
    /// the row until the transaction ends (`FOR UPDATE`) on PostgreSQL and MySQL; SQLite has
    /// no row locks, so run it in a `BEGIN IMMEDIATE` transaction, which no other writer can
    /// interleave with. `SqlStore::begin_fenced` runs it just before committing.
    pub check_lease: String,
    /// Opens a transaction that reads and then writes (the forced release): `BEGIN IMMEDIATE`
    /// on SQLite, which takes the write lock at once (waiting out the busy timeout) instead of
    /// failing with "database is locked" when another connection writes between the read and
    /// the write; `BEGIN` elsewhere.
    pub begin_write: String,
    /// Hand-off's statements, on PostgreSQL (`None` elsewhere): the line of waiting electors
    /// and the keep of a freed single-slot lock ([`leasehold::store::HandOff`]).
    pub hand_off: Option<HandOffStatements>,
}

/// What differs between the databases: each method gives one piece of SQL text. Shared
/// statements are assembled from these pieces by [`Dialect::statements`] and
/// [`Dialect::create_table`]; a method with a default is what most databases say.
trait Sql: Sync {
    /// The database's current time in epoch milliseconds, as an SQL expression.
    fn now_ms(&self) -> &'static str;

    /// Parameter `n` (1-based).
    fn param(&self, n: usize) -> String;

    /// The clocks of a statement with `k` parameters of its own: the database server's clock.
    fn clock(&self, _k: usize) -> Clock {
        Clock {
            wall: self.now_ms().to_owned(),
            boot_id: String::new(),
            boot_low: String::new(),
            boot_high: String::new(),
        }
    }

    /// True when the row (columns prefixed `r`) is free at `now`: released, or expired.
    fn free_at(&self, _c: &Clock, r: &str, now: &str) -> String {
        format!("({r}token IS NULL OR {r}expires_at <= {now})")
    }

    /// The statement that opens a read-then-write transaction.
    fn begin_write(&self) -> &'static str {
        "BEGIN"
    }

    /// The smaller of two numbers.
    fn least(&self) -> &'static str {
        "LEAST"
    }

    /// The integer type of a `CAST`.
    fn cast_int(&self) -> &'static str {
        "BIGINT"
    }

    /// The `/` of integer division.
    fn int_div(&self) -> &'static str {
        "/"
    }

    /// A `RETURNING` clause for `columns`, where the database has one.
    fn returning(&self, columns: &str) -> String {
        format!(" RETURNING {columns}")
    }

    /// How many parameters [`rows_in`](Self::rows_in) takes for `leases` rows: three each.
    fn row_params(&self, leases: usize) -> usize {
        3 * leases
    }

    /// The right side of `(lock_name, slot, token) IN …` for `leases` rows, bound as
    /// parameters from `first` on: a list of row values.
    fn rows_in(&self, first: usize, leases: usize) -> String {
        format!("({})", self.row_values(first, leases))
    }

    /// `(lock, slot, token), …` for `leases` rows, parameters from `first` on.
    fn row_values(&self, first: usize, leases: usize) -> String {
        (0..leases)
            .map(|i| {
                let at = first + 3 * i;
                format!(
                    "({}, {}, {})",
                    self.param(at),
                    self.param(at + 1),
                    self.param(at + 2)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The assignments that mark a row free.
    fn freed(&self) -> &'static str {
        "token = NULL, expires_at = 0"
    }

    /// More assignments of an extension (after the new expiry).
    fn extend_more(&self, _c: &Clock) -> String {
        String::new()
    }

    /// More assignments of a release that keeps a minimum lease (after the shortened expiry).
    fn linger_more(&self, _c: &Clock) -> String {
        String::new()
    }

    /// Locks the rows a `SELECT` reads until the transaction ends.
    fn lock_rows(&self) -> &'static str {
        " FOR UPDATE"
    }

    /// The acquisition upsert, with the period ledger's condition and columns when `period`.
    fn upsert(&self, table: &str, period: bool) -> String;

    /// The period claim, from its upsert (a database may answer a refused claim in the same
    /// round trip).
    fn period_claim(&self, _table: &str, upsert: String) -> String {
        upsert
    }

    /// The hand-off statements, on a database that keeps a line of waiters in the table
    /// (PostgreSQL: `postgres/hand_off.rs`).
    fn hand_off(&self, _table: &str) -> Option<HandOffStatements> {
        None
    }

    /// The release, from its `UPDATE` (a database may announce the release in the same
    /// statement).
    fn announce_release(&self, update: String) -> String {
        update
    }

    /// The column types of the table.
    fn columns(&self) -> Columns;
}

/// The clock expressions of one statement: the database server's clock, or, on SQLite,
/// parameters (see [`Statements`]).
struct Clock {
    wall: String,
    boot_id: String,
    boot_low: String,
    boot_high: String,
}

/// The column types (and more columns and table options) of one database's table.
struct Columns {
    /// `lock_name`.
    name: &'static str,
    /// `token` and `ledger_token`.
    token: &'static str,
    /// `owner` and `ledger_by`.
    owner: &'static str,
    /// Fences and times.
    int: &'static str,
    /// More column definitions, each ending with `,\n`.
    more: &'static str,
    /// After the closing parenthesis.
    tail: &'static str,
}

impl Dialect {
    /// The database's SQL.
    fn sql(self) -> &'static dyn Sql {
        match self {
            Self::Sqlite => &sqlite::Sqlite,
            Self::Postgres => &postgres::Postgres,
            Self::MySql => &mysql::MySql,
        }
    }

    /// The database's fence SQL.
    #[cfg(feature = "fence")]
    fn fence_sql(self) -> &'static dyn guard::FenceSql {
        match self {
            Self::Sqlite => &sqlite::Sqlite,
            Self::Postgres => &postgres::Postgres,
            Self::MySql => &mysql::MySql,
        }
    }

    /// The statement that opens a transaction that will write: `BEGIN IMMEDIATE` on SQLite
    /// (the database's write lock at once), `BEGIN` elsewhere.
    #[cfg(feature = "fence")]
    pub(crate) fn begin_write(self) -> &'static str {
        self.sql().begin_write()
    }

    /// The `CREATE TABLE` statement for `table`, safe to run repeatedly.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let ddl = Dialect::Postgres.create_table("leasehold_leases");
    /// assert!(ddl.contains("PRIMARY KEY (lock_name, slot)"));
    /// ```
    pub fn create_table(self, table: &str) -> String {
        let Columns {
            name: name_type,
            token: token_type,
            owner: owner_type,
            int,
            more,
            tail,
        } = self.sql().columns();
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (\n\
             \x20 lock_name   {name_type} NOT NULL,\n\
             \x20 slot        INTEGER NOT NULL,\n\
             \x20 owner       {owner_type} NOT NULL,\n\
             \x20 token       {token_type} NULL,\n\
             \x20 fence       {int} NOT NULL,\n\
             \x20 acquired_at {int} NOT NULL,\n\
             \x20 expires_at  {int} NOT NULL,\n\
             {more}\
             \x20 ledger_period {int} NULL,\n\
             \x20 ledger_at   {int} NULL,\n\
             \x20 ledger_by   {owner_type} NULL,\n\
             \x20 ledger_token {token_type} NULL,\n\
             \x20 ledger_from {int} NULL,\n\
             \x20 ledger_until {int} NULL,\n\
             \x20 ledger_pending {int} NULL,\n\
             \x20 PRIMARY KEY (lock_name, slot)\n\
             ){tail}"
        )
    }

    /// The statements that add the period ledger's first columns (`ledger_period`, `ledger_at`,
    /// `ledger_by`) to a table created before they existed. The store runs them on first use
    /// (tolerating a column another process added at the same moment); with
    /// `create_schema(false)` a period claim fails with an error naming them. Tables also need
    /// the [claim's columns](Self::ledger_claim_columns).
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let alter = Dialect::Postgres.ledger_columns("leasehold_leases");
    /// assert_eq!(alter[0], "ALTER TABLE leasehold_leases ADD COLUMN ledger_period BIGINT NULL");
    /// ```
    pub fn ledger_columns(self, table: &str) -> [String; 3] {
        let Columns { int, owner, .. } = self.sql().columns();
        [
            format!("ALTER TABLE {table} ADD COLUMN ledger_period {int} NULL"),
            format!("ALTER TABLE {table} ADD COLUMN ledger_at {int} NULL"),
            format!("ALTER TABLE {table} ADD COLUMN ledger_by {owner} NULL"),
        ]
    }

    /// The statements that add the columns of the ledger's claims (a claim is not a run until
    /// it starts): `ledger_token`, the claim's token; `ledger_from` and `ledger_until`, the
    /// window claimed; `ledger_pending`, the claim's `ledger_at` while its action has not
    /// started, `NULL` once it has. Added on first use like
    /// [`ledger_columns`](Self::ledger_columns); with `create_schema(false)` a period claim on a
    /// table without them fails with an error naming them.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let alter = Dialect::Postgres.ledger_claim_columns("leasehold_leases");
    /// assert_eq!(alter[0], "ALTER TABLE leasehold_leases ADD COLUMN ledger_token CHAR(32) NULL");
    /// ```
    pub fn ledger_claim_columns(self, table: &str) -> [String; 4] {
        let Columns { int, token, .. } = self.sql().columns();
        [
            format!("ALTER TABLE {table} ADD COLUMN ledger_token {token} NULL"),
            format!("ALTER TABLE {table} ADD COLUMN ledger_from {int} NULL"),
            format!("ALTER TABLE {table} ADD COLUMN ledger_until {int} NULL"),
            format!("ALTER TABLE {table} ADD COLUMN ledger_pending {int} NULL"),
        ]
    }

    /// The statement that adds the column of the ledger's latest run: `ledger_ran`, when the
    /// latest claim whose action started was granted (a later claim keeps it until that one
    /// starts, so a claim that never started hides no earlier run). Added on first use like
    /// [`ledger_columns`](Self::ledger_columns); with `create_schema(false)` a period claim on a
    /// table without it fails with an error naming it.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let alter = Dialect::MySql.ledger_run_columns("leasehold_leases");
    /// assert_eq!(alter, ["ALTER TABLE leasehold_leases ADD COLUMN ledger_ran BIGINT NULL"]);
    /// ```
    pub fn ledger_run_columns(self, table: &str) -> [String; 1] {
        let Columns { int, .. } = self.sql().columns();
        [format!(
            "ALTER TABLE {table} ADD COLUMN ledger_ran {int} NULL"
        )]
    }

    /// The statements that renew `leases` leases of one ttl at once (parameters as in
    /// [`Statements`], on SQLite followed by the four clock parameters): an `UPDATE` taking the
    /// ttl in ms, then the rows — the lock, slot and token of each lease, or on SQLite all of
    /// them as one JSON array of `[lock, slot, token]` (SQLite parses ten thousand numbered
    /// parameters in about a second) — which extends every row its token holds live and returns
    /// `lock_name, slot, token, expires_at` of each (PostgreSQL, SQLite); on MySQL, which has no
    /// `RETURNING`, the `UPDATE` returns nothing and the second statement reads the same columns
    /// back (parameters: the rows).
    pub(crate) fn extend_batch(self, table: &str, leases: usize) -> (String, Option<String>) {
        let d = self.sql();
        let columns = "lock_name, slot, token, expires_at";
        let c = d.clock(1 + d.row_params(leases));
        let update = format!(
            "UPDATE {table} SET expires_at = {} + {}{} WHERE (lock_name, slot, token) IN {} AND {}{}",
            c.wall,
            d.param(1),
            d.extend_more(&c),
            d.rows_in(2, leases),
            live(d, &c, ""),
            d.returning(columns)
        );
        let read_back = d.returning(columns).is_empty().then(|| {
            let c = d.clock(d.row_params(leases));
            format!(
                "SELECT {columns} FROM {table} WHERE (lock_name, slot, token) IN {} AND {}",
                d.rows_in(1, leases),
                live(d, &c, "")
            )
        });
        (update, read_back)
    }

    /// The statements for `table` (the notification channel on PostgreSQL is a parameter).
    pub fn statements(self, table: &str) -> Statements {
        let d = self.sql();
        let p = |n| d.param(n);
        // New rows start their fence from the clock (ms × 1000), so a row deleted by hand and
        // recreated later still continues above every fence it issued before. An existing row is
        // taken over only once free (released, or expired); a live row that already carries the
        // request's token (a retried request that was applied) is returned unchanged.
        let acquire = d.upsert(table, false);
        let acquire_period = d.period_claim(table, d.upsert(table, true));
        let c = d.clock(1);
        let ledger_live = format!(
            "CAST(CASE WHEN {} THEN 0 ELSE 1 END AS {})",
            free(d, &c, ""),
            d.cast_int()
        );
        let read_period = format!(
            "SELECT {LEDGER_COLUMNS}, {ledger_live}, {now} FROM {table} WHERE lock_name = {} AND slot = 0",
            p(1),
            now = c.wall,
        );
        let read_old_period = format!(
            "SELECT ledger_period, ledger_at, ledger_by, CAST(NULL AS {int}), CAST(NULL AS {int}), \
             CAST(NULL AS {int}), CAST(NULL AS {int}), {ledger_live}, {now} FROM {table} WHERE lock_name = {} AND slot = 0",
            p(1),
            int = d.cast_int(),
            now = c.wall,
        );
        // A clear reads the ledger with the row locked, then empties the ledger's columns (and
        // only those) in the same transaction.
        let clear_period_select = format!("{read_period}{}", d.lock_rows());
        let clear_old_period_select = format!("{read_old_period}{}", d.lock_rows());
        let nulls = |columns: &[&str]| {
            columns
                .iter()
                .map(|c| format!("{c} = NULL"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let slot0 = format!("lock_name = {} AND slot = 0", p(1));
        let mut all_ledger = LEDGER_WRITTEN.to_vec();
        all_ledger.push("ledger_ran");
        let clear_period = format!("UPDATE {table} SET {} WHERE {slot0}", nulls(&all_ledger));
        let clear_old_period = format!(
            "UPDATE {table} SET {} WHERE {slot0}",
            nulls(&LEDGER_WRITTEN[..3])
        );
        // The claim's token is the row's (the lease's) too: the token holds the live lease.
        let start_period = format!(
            "UPDATE {table} SET ledger_pending = NULL, ledger_ran = ledger_at WHERE {} AND ledger_token = token",
            held(d, 1, &d.clock(3))
        );
        let read_slot = format!(
            "SELECT slot, owner, fence, acquired_at, expires_at, token FROM {table} WHERE lock_name = {} AND slot = {} AND {}",
            p(1),
            p(2),
            live(d, &d.clock(2), "")
        );
        // The row `lock, slot` held by `token`, parameters from `first`.
        let held = |first: usize, c: &Clock| held(d, first, c);
        let c = d.clock(4);
        let extend = format!(
            "UPDATE {table} SET expires_at = {} + {}{} WHERE {}{}",
            c.wall,
            p(1),
            d.extend_more(&c),
            held(2, &c),
            d.returning("expires_at")
        );
        // A release marks the row free outright (no token, expiry 0), so it looks free to every
        // clock, however far behind.
        let freed = d.freed();
        let release = d.announce_release(format!(
            "UPDATE {table} SET {freed} WHERE {}",
            held(1, &d.clock(3))
        ));
        let c = d.clock(4);
        let release_linger = format!(
            "UPDATE {table} SET expires_at = {}(expires_at, {} + {}){} WHERE {}",
            d.least(),
            c.wall,
            p(1),
            d.linger_more(&c),
            held(2, &c)
        );
        let c = d.clock(2);
        let live_rows = format!(
            "lock_name = {} AND slot < {} AND {}",
            p(1),
            p(2),
            live(d, &c, "")
        );
        let columns = "slot, owner, fence, acquired_at, expires_at";
        let state = format!("SELECT {columns} FROM {table} WHERE {live_rows} ORDER BY slot");
        let group_slots = format!(
            "SELECT slot, token, CAST(CASE WHEN {} THEN 0 ELSE 1 END AS {}) FROM {table} WHERE lock_name = {} AND slot < {}",
            free(d, &c, ""),
            d.cast_int(),
            p(1),
            p(2)
        );
        let list = format!(
            "SELECT lock_name, {columns}, CAST(CASE WHEN {} THEN 0 ELSE 1 END AS {}) FROM {table} \
             WHERE lock_name > {} ORDER BY lock_name, slot LIMIT {}",
            free(d, &c, ""),
            d.cast_int(),
            p(1),
            p(2)
        );
        let force_release = format!("UPDATE {table} SET {freed} WHERE {live_rows}");
        let force_select = format!(
            "SELECT {columns} FROM {table} WHERE {live_rows} ORDER BY slot{}",
            d.lock_rows()
        );
        let check_lease = format!(
            "SELECT fence FROM {table} WHERE {}{}",
            held(1, &d.clock(3)),
            d.lock_rows()
        );
        Statements {
            hand_off: d.hand_off(table),
            begin_write: d.begin_write().to_owned(),
            check_lease,
            acquire,
            read_slot,
            extend,
            release,
            release_linger,
            state,
            group_slots,
            list,
            force_release,
            force_select,
            acquire_period,
            read_period,
            read_old_period,
            start_period,
            clear_period_select,
            clear_period,
            clear_old_period_select,
            clear_old_period,
        }
    }
}

/// A query that reads nothing but fails when `table` lacks the period ledger's first columns.
pub(crate) fn ledger_columns_probe(table: &str) -> String {
    format!("SELECT ledger_period, ledger_at, ledger_by FROM {table} WHERE 1 = 0")
}

/// A query that reads nothing but fails when `table` lacks the columns of the ledger's claims.
pub(crate) fn ledger_claim_columns_probe(table: &str) -> String {
    format!(
        "SELECT ledger_token, ledger_from, ledger_until, ledger_pending FROM {table} WHERE 1 = 0"
    )
}

/// A query that reads nothing but fails when `table` lacks the column of the ledger's latest run.
pub(crate) fn ledger_run_columns_probe(table: &str) -> String {
    format!("SELECT ledger_ran FROM {table} WHERE 1 = 0")
}

/// The ledger's columns as `read_period` returns them (before the live flag and now).
pub(super) const LEDGER_COLUMNS: &str =
    "ledger_period, ledger_at, ledger_by, ledger_from, ledger_until, ledger_pending, ledger_ran";

/// True when the ledger of the row (columns prefixed `r`) does not count for a claim of the
/// window starting at `from` (the rule of [`judge_claim`](leasehold::store::judge_claim)): the
/// latest claim does not count (none recorded, granted before `from`, or not started) **and** no
/// earlier run does (`ledger_ran` missing or before `from`). A record of an older version of
/// this store (which wrote no `ledger_pending`, or overwrote `ledger_at` after this version's
/// claim) counts as started: its grants were runs.
fn ledger_allows(r: &str, from: &str) -> String {
    format!(
        "(({r}ledger_at IS NULL OR {r}ledger_at < {from} \
         OR COALESCE({r}ledger_pending = {r}ledger_at, FALSE)) \
         AND ({r}ledger_ran IS NULL OR {r}ledger_ran < {from}))"
    )
}

/// The latest run of the row's ledger (columns prefixed `r`), which a new claim keeps as its
/// `ledger_ran`: the latest claim's `ledger_at` if it started, else `ledger_ran`.
fn ledger_last_run(r: &str) -> String {
    format!(
        "CASE WHEN {r}ledger_at IS NOT NULL AND NOT COALESCE({r}ledger_pending = {r}ledger_at, FALSE) \
         THEN {r}ledger_at ELSE {r}ledger_ran END"
    )
}

/// True when the row (columns prefixed `r`) is free by the statement's clock.
fn free(d: &dyn Sql, c: &Clock, r: &str) -> String {
    d.free_at(c, r, &c.wall)
}

/// The row `lock, slot` held by `token`, parameters from `first`, by the clock `c`.
fn held(d: &dyn Sql, first: usize, c: &Clock) -> String {
    format!(
        "lock_name = {} AND slot = {} AND token = {} AND {}",
        d.param(first),
        d.param(first + 1),
        d.param(first + 2),
        live(d, c, "")
    )
}

/// True when the row is held.
fn live(d: &dyn Sql, c: &Clock, r: &str) -> String {
    format!("NOT {}", free(d, c, r))
}

/// The row source of an acquisition upsert: its now `n.ms` (by `clock`) and, for a period claim,
/// the period id `n.p` of that now, `floor((ms − offset) / length)`, and its window
/// `[n.f, n.u)`, with the length and offset parameters 6 and 7 (on MySQL, positional in that
/// order: offset, then length).
fn upsert_source(d: &dyn Sql, clock: &Clock, period: bool) -> String {
    if period {
        // `r = (x mod len)`, floored (`((x % len) + len) % len`, as `%` truncates on every
        // dialect), so `x − r` is a multiple of `len` also for times before the offset: the
        // same on every dialect. The window starts `r` before now.
        format!(
            "(SELECT c.ms, (c.x - c.r) {div} c.len AS p, c.ms - c.r AS f, c.ms - c.r + c.len AS u FROM \
             (SELECT b.ms, b.x, b.len, ((b.x % b.len) + b.len) % b.len AS r FROM \
             (SELECT m.ms, m.ms - {offset} AS x, {length} AS len FROM (SELECT {now} AS ms) m) b) c) n",
            div = d.int_div(),
            offset = d.param(7),
            length = d.param(6),
            now = clock.wall,
        )
    } else {
        format!("(SELECT {} AS ms) n", clock.wall)
    }
}

/// The ledger's columns a period claim's grant writes.
const LEDGER_WRITTEN: [&str; 7] = [
    "ledger_period",
    "ledger_at",
    "ledger_by",
    "ledger_token",
    "ledger_from",
    "ledger_until",
    "ledger_pending",
];

/// Hand-off's part of an acquisition upsert, on a database that keeps a line of waiters in the
/// row (PostgreSQL: `postgres/hand_off.rs`); the plain upsert has none.
trait WaitingLine {
    /// More of the take-over condition, at the statement's now `now`.
    fn take(&self, now: &str) -> String;

    /// What the line writes, given the upsert's terms; `None` for an upsert that keeps no line.
    fn update(&self, terms: &UpsertTerms<'_>) -> Option<WaitingUpdate>;
}

/// The terms of an acquisition upsert that hand-off's part builds on.
struct UpsertTerms<'a> {
    /// The statement's now.
    now: &'a str,
    /// The take-over condition.
    take: &'a str,
    /// The condition that the row is already this request's.
    retried: &'a str,
    /// For a period claim, the condition that the ledger allows it.
    ledger_allows: Option<&'a str>,
}

/// The line's writes in an acquisition upsert that keeps it.
struct WaitingUpdate {
    /// The condition under which a refused attempt writes its waiter's entry.
    record: String,
    /// The assignment, starting with `, `.
    set: String,
}

/// The acquisition upsert of the databases with a conditional `ON CONFLICT … DO UPDATE … WHERE`
/// and `RETURNING` (PostgreSQL, SQLite). `more` gives the columns, values and assignments a
/// database writes beyond the shared ones, from the statement's clock, its take-over condition
/// and its TTL parameter. `waiting` is hand-off's part (on PostgreSQL).
fn upsert_on_conflict(
    d: &dyn Sql,
    table: &str,
    period: bool,
    waiting: Option<&dyn WaitingLine>,
    more: impl Fn(&Clock, &str, &str) -> (&'static str, String, String),
) -> String {
    let p = |n| d.param(n);
    let c = d.clock(if period { 7 } else { 5 });
    // The now of this statement is the one written as `acquired_at`.
    let now = "excluded.acquired_at";
    let free = d.free_at(&c, "l.", now);
    let ledger_allows = ledger_allows("l.", "excluded.ledger_from");
    // An existing row is taken over only once free (released, or expired) — for a period claim,
    // only if its ledger does not count for the window (see `ledger_allows`); with hand-off, only
    // if it is not kept for another elector — and a live row that already carries the
    // request's token (a retried request that was applied) is returned unchanged.
    let mut take = free.clone();
    if period {
        take = format!("{take} AND {ledger_allows}");
    }
    if let Some(w) = waiting {
        take = format!("{take} AND {}", w.take(now));
    }
    let take = if take == free {
        take
    } else {
        format!("({take})")
    };
    let ttl = p(5);
    let (more_cols, more_vals, more_set) = more(&c, &take, &ttl);
    let (ledger_cols, ledger_vals, ledger_set, retried) = if period {
        // The grant replaces the whole record. `ledger_period` is kept (the window's id) for
        // older versions of this store, which judge a claim by it alone.
        let mut set = format!(
            ", ledger_ran = CASE WHEN {take} THEN {} ELSE l.ledger_ran END",
            ledger_last_run("l.")
        );
        set.extend(
            LEDGER_WRITTEN
                .iter()
                .map(|c| format!(", {c} = CASE WHEN {take} THEN excluded.{c} ELSE l.{c} END")),
        );
        (
            ", ledger_period, ledger_at, ledger_by, ledger_token, ledger_from, ledger_until, ledger_pending",
            format!(", n.p, n.ms, {}, {}, n.f, n.u, n.ms", p(3), p(4)),
            set,
            format!("(l.token = excluded.token AND NOT {free})"),
        )
    } else {
        (
            "",
            String::new(),
            String::new(),
            "l.token = excluded.token".to_owned(),
        )
    };
    let terms = UpsertTerms {
        now,
        take: &take,
        retried: &retried,
        ledger_allows: period.then_some(ledger_allows.as_str()),
    };
    let update = waiting.and_then(|w| w.update(&terms));
    let (line_set, record, returning) = match update {
        Some(line) => (
            line.set,
            format!(" OR {}", line.record),
            d.returning("fence, acquired_at, expires_at, token"),
        ),
        None => (
            String::new(),
            String::new(),
            d.returning("fence, acquired_at, expires_at"),
        ),
    };
    let source = upsert_source(d, &c, period);
    format!(
        "INSERT INTO {table} AS l (lock_name, slot, owner, token, fence, acquired_at, expires_at{more_cols}{ledger_cols}) \
         SELECT {lock}, {slot}, {owner}, {token}, n.ms * 1000, n.ms, n.ms + {ttl}{more_vals}{ledger_vals} FROM {source} WHERE true \
         ON CONFLICT (lock_name, slot) DO UPDATE SET \
         owner = CASE WHEN {take} THEN excluded.owner ELSE l.owner END, \
         token = CASE WHEN {take} THEN excluded.token ELSE l.token END, \
         fence = CASE WHEN {take} THEN l.fence + 1 ELSE l.fence END, \
         acquired_at = CASE WHEN {take} THEN excluded.acquired_at ELSE l.acquired_at END, \
         expires_at = CASE WHEN {take} THEN excluded.expires_at ELSE l.expires_at END{more_set}{ledger_set}{line_set} \
         WHERE {take} OR {retried}{record}{returning}",
        lock = p(1),
        slot = p(2),
        owner = p(3),
        token = p(4),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_empties_every_ledger_column_and_nothing_else() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            let sql = dialect.statements("t");
            let ddl = dialect.create_table("t");
            let ledger_columns: Vec<&str> = ddl
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .filter(|c| c.starts_with("ledger_"))
                .collect();
            let set = sql
                .clear_period
                .split(" SET ")
                .nth(1)
                .and_then(|rest| rest.split(" WHERE ").next())
                .unwrap_or_default();
            let mut cleared: Vec<&str> = set
                .split(", ")
                .filter_map(|a| a.strip_suffix(" = NULL"))
                .collect();
            // `create_table` has every column but `ledger_ran`, which `ledger_run_columns` adds.
            cleared.retain(|c| *c != "ledger_ran");
            assert_eq!(cleared, ledger_columns, "{dialect}: {}", sql.clear_period);
            assert!(sql.clear_period.contains("ledger_ran = NULL"));
            assert_eq!(set.split(", ").count(), 8, "{dialect}: only the ledger");
            assert!(sql.clear_old_period.contains("ledger_by = NULL"));
            assert!(!sql.clear_old_period.contains("ledger_token"));
            assert!(sql.clear_period_select.starts_with(&sql.read_period));
        }
        let pg = Dialect::Postgres.statements("t");
        assert!(pg.clear_period_select.ends_with(" FOR UPDATE"));
        assert!(
            pg.clear_period
                .ends_with("WHERE lock_name = $1 AND slot = 0")
        );
    }

    /// SQLite parses numbered parameters in time quadratic in their count (ten thousand took a
    /// second, longer than a renewal period): its batch binds the rows as one JSON parameter.
    #[test]
    fn a_batch_binds_its_rows_as_the_dialect_parses_them_fast() {
        let (update, read_back) = Dialect::Sqlite.extend_batch("t", 10_000);
        assert_eq!(update.matches('?').count(), 10, "{update}");
        assert!(update.contains("json_each(?2)"), "{update}");
        assert!(read_back.is_none());
        let (update, read_back) = Dialect::MySql.extend_batch("t", 2);
        assert_eq!(update.matches('?').count(), 7);
        assert_eq!(read_back.unwrap().matches('?').count(), 6);
        let (update, _) = Dialect::Postgres.extend_batch("t", 2);
        assert!(
            update.contains("IN (VALUES ($2, $3, $4), ($5, $6, $7))"),
            "{update}"
        );
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
