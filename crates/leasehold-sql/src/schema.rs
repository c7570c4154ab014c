//! The table: created on first use when it is missing and brought up to date — the boot-clock
//! columns on SQLite, the period ledger's columns (its first three, then its claims' four, then
//! its latest run's) everywhere, hand-off's column on PostgreSQL — or, with `create_schema(false)`, only checked.

use leasehold::store::StoreError;
use leasehold::store::StoreResult;
use tokio::sync::OnceCell;

use crate::classify::classify;
use crate::dialect::{
    Dialect, ledger_claim_columns_probe, ledger_columns_probe, ledger_run_columns_probe,
};
#[cfg(feature = "sqlite")]
use crate::dialect::{sqlite_clock_columns, sqlite_clock_columns_probe};
#[cfg(feature = "sqlite")]
use crate::pool::SqlPool;
use crate::pool::with_pool;
use crate::protocol::Queries;

/// Which of the period ledger's columns a table has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LedgerColumns {
    /// All eight: claims work.
    All,
    /// The first three, and maybe the claims' but not the run's (a table of an older version,
    /// `create_schema(false)`): the records read as an older version's (started, window
    /// unknown); claims fail with the statements to run.
    WithoutClaims,
    /// None.
    None,
}

/// The table of one store and whether it has been checked.
pub(crate) struct Schema {
    dialect: Dialect,
    table: String,
    ddl: String,
    create: bool,
    /// Set once the table is checked: which optional columns it has.
    checked: OnceCell<Found>,
}

/// The optional columns a checked table has.
#[derive(Debug, Clone, Copy)]
struct Found {
    /// The period ledger's first three (`ledger_period`, `ledger_at`, `ledger_by`).
    ledger: bool,
    /// The ledger's claims' (`ledger_token`, `ledger_from`, `ledger_until`, `ledger_pending`).
    claims: bool,
    /// The ledger's latest run's (`ledger_ran`).
    runs: bool,
    /// Hand-off's (PostgreSQL; false elsewhere).
    hand_off: bool,
}

impl Schema {
    pub(crate) fn new(dialect: Dialect, table: &str, create: bool) -> Self {
        Self {
            dialect,
            table: table.to_owned(),
            ddl: dialect.create_table(table),
            create,
            checked: OnceCell::new(),
        }
    }

    /// Creates the table if it is missing and adds missing columns (unless `create_schema` is
    /// off), then checks that it can be read; once per store.
    pub(crate) async fn ensure(&self, q: &Queries) -> StoreResult<()> {
        self.checked
            .get_or_try_init(|| async {
                // A table that already answers is not created again: `CREATE TABLE IF NOT
                // EXISTS` would make PostgreSQL send a notice ("relation … already exists,
                // skipping") that sqlx logs at INFO on every start.
                if self.create && q.probe().await.is_err() {
                    // Two processes creating the table at once can collide in the catalog;
                    // the loser sees a duplicate-object error and the table exists.
                    let created: Result<(), sqlx::Error> = with_pool!(q.pool(), p => sqlx::query(&self.ddl).execute(p).await.map(|_| ()));
                    if let Err(e) = created {
                        // PostgreSQL: unique violation or duplicate table; MySQL: 1050, table
                        // exists (its SQLSTATE, 42S01, is not what `code()` is compared to here).
                        let dup = matches!(&e, sqlx::Error::Database(db)
                            if matches!(db.code().as_deref(), Some("23505" | "42P07")))
                            || crate::classify::mysql_error_number(&e) == Some(1050);
                        if !dup {
                            return Err(classify(e));
                        }
                    }
                }
                #[cfg(feature = "sqlite")]
                #[allow(irrefutable_let_patterns)] // when SQLite is the only driver compiled in
                if let SqlPool::Sqlite(p) = q.pool() {
                    self.ensure_sqlite_clock_columns(p).await?;
                }
                q.probe().await?;
                let table = &self.table;
                let ledger = self
                    .ensure_columns(
                        q,
                        &ledger_columns_probe(table),
                        &self.dialect.ledger_columns(table),
                        "the period ledger's columns",
                    )
                    .await?;
                let claims = self
                    .ensure_columns(
                        q,
                        &ledger_claim_columns_probe(table),
                        &self.dialect.ledger_claim_columns(table),
                        "the period ledger's claim columns",
                    )
                    .await?;
                let runs = self
                    .ensure_columns(
                        q,
                        &ledger_run_columns_probe(table),
                        &self.dialect.ledger_run_columns(table),
                        "the period ledger's run column",
                    )
                    .await?;
                let hand_off = match &q.statements().hand_off {
                    Some(h) => {
                        let add = std::slice::from_ref(&h.add_column);
                        self.ensure_columns(q, &h.probe, add, "hand-off's column").await?
                    }
                    None => false,
                };
                Ok(Found {
                    ledger,
                    claims,
                    runs,
                    hand_off,
                })
            })
            .await
            .map(|_| ())
    }

    /// True when the table has hand-off's column (PostgreSQL): checks the table first. Without
    /// it (`create_schema(false)` on a table created by an older version, or a user that may
    /// not alter it) the store releases and acquires without hand-off: only less fair.
    pub(crate) async fn hands_off(&self, q: &Queries) -> StoreResult<bool> {
        self.ensure(q).await?;
        Ok(self.checked.get().is_some_and(|f| f.hand_off))
    }

    /// A period claim needs the ledger's columns, all eight: a permanent error naming the
    /// statements that add those missing when the table lacks some (only with
    /// `create_schema(false)`, or when adding them failed).
    pub(crate) async fn check_ledger(&self, q: &Queries) -> StoreResult<()> {
        let found = self.found(q).await?;
        if found.ledger && found.claims && found.runs {
            return Ok(());
        }
        let table = &self.table;
        let mut add = Vec::new();
        if !found.ledger {
            add.extend(self.dialect.ledger_columns(table));
        }
        if !found.claims {
            add.extend(self.dialect.ledger_claim_columns(table));
        }
        if !found.runs {
            add.extend(self.dialect.ledger_run_columns(table));
        }
        Err(StoreError::permanent(format!(
            "table {table} lacks the period ledger's columns (create_schema is off, or adding them \
             failed: see the warning logged); add them with: {}",
            add.join("; ")
        )))
    }

    /// Which of the ledger's columns the table has (checking it first).
    pub(crate) async fn ledger(&self, q: &Queries) -> StoreResult<LedgerColumns> {
        let found = self.found(q).await?;
        Ok(match (found.ledger, found.claims && found.runs) {
            (true, true) => LedgerColumns::All,
            (true, false) => LedgerColumns::WithoutClaims,
            (false, _) => LedgerColumns::None,
        })
    }

    /// Whether the ledger has the claims' columns (else only an older version's first three);
    /// `None` without a ledger.
    pub(crate) async fn claims(&self, q: &Queries) -> StoreResult<Option<bool>> {
        Ok(match self.ledger(q).await? {
            LedgerColumns::All => Some(true),
            LedgerColumns::WithoutClaims => Some(false),
            LedgerColumns::None => None,
        })
    }

    async fn found(&self, q: &Queries) -> StoreResult<Found> {
        self.ensure(q).await?;
        self.checked
            .get()
            .copied()
            .ok_or_else(|| StoreError::permanent("the table was not checked"))
    }

    /// Tables created before some optional columns existed (the period ledger's, hand-off's)
    /// get them: `probe` fails without them, `add` adds them. With `create_schema(false)` they
    /// are left alone: plain acquisitions keep working, a period claim fails with an error naming
    /// the `ALTER TABLE` statements (see [`check_ledger`](Self::check_ledger)), and releases do
    /// not hand off. True when the columns are there.
    async fn ensure_columns(
        &self,
        q: &Queries,
        probe: &str,
        add: &[String],
        what: &str,
    ) -> StoreResult<bool> {
        let table = &self.table;
        let readable: Result<(), sqlx::Error> =
            with_pool!(q.pool(), p => sqlx::query(probe).fetch_all(p).await.map(|_| ()));
        if readable.is_ok() {
            return Ok(true);
        }
        if !self.create {
            return Ok(false);
        }
        for statement in add {
            // Another process may add the same column at the same moment.
            let added: Result<(), sqlx::Error> =
                with_pool!(q.pool(), p => sqlx::query(statement).execute(p).await.map(|_| ()));
            if let Err(e) = added {
                let duplicate = matches!(&e, sqlx::Error::Database(db)
                    if db.message().contains("duplicate column")
                        || db.message().contains("Duplicate column")
                        || matches!(db.code().as_deref(), Some("42701" | "1060" | "42S21")));
                if !duplicate {
                    let e = classify(e);
                    if e.is_transient() {
                        return Err(e);
                    }
                    // E.g. the application's user may not alter a table it does not own: plain
                    // leases keep working; a period claim says how to add the columns.
                    tracing::warn!(table = %table, error = %e, "could not add {what}");
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// SQLite tables created before the boot-clock columns existed get them (with
    /// `create_schema(false)`, a permanent error says how to add them).
    #[cfg(feature = "sqlite")]
    async fn ensure_sqlite_clock_columns(&self, pool: &sqlx::SqlitePool) -> StoreResult<()> {
        let table = &self.table;
        let check = sqlite_clock_columns_probe(table);
        if sqlx::query(&check).fetch_all(pool).await.is_ok() {
            return Ok(());
        }
        let alter = sqlite_clock_columns(table);
        if !self.create {
            return Err(StoreError::permanent(format!(
                "SQLite table {table} lacks the boot-clock columns; add them with: {}",
                alter.join("; ")
            )));
        }
        for statement in &alter {
            // Another process may add the same column at the same moment.
            if let Err(e) = sqlx::query(statement).execute(pool).await {
                let duplicate = matches!(&e, sqlx::Error::Database(db) if db.message().contains("duplicate column"));
                if !duplicate {
                    return Err(classify(e));
                }
            }
        }
        Ok(())
    }
}
