//! Installing fence DDL — the fence table with its guard, or a guard on a user's column —
//! idempotently and safely when several processes do it at once.

use leasehold::store::StoreError;
use leasehold::store::StoreResult;
use sqlx::Executor;

use super::tx::{AnyTx, with_tx};
use crate::classify::classify;
use crate::pool::{SqlPool, with_pool};

/// MySQL's "trigger already exists" (ER_TRG_ALREADY_EXISTS).
const MYSQL_TRIGGER_EXISTS: u16 = 1359;

/// What to install: the statements, and the query that counts the guard trigger they create.
pub(crate) struct Ddl<'a> {
    pub(crate) statements: &'a [String],
    pub(crate) guard_count: &'a str,
}

impl Ddl<'_> {
    /// Whether the guard trigger is there (and with it whatever the statements create first).
    pub(crate) async fn installed(&self, pool: &SqlPool) -> StoreResult<bool> {
        let n: Result<i64, sqlx::Error> =
            with_pool!(pool, p => sqlx::query_scalar(self.guard_count).fetch_one(p).await);
        Ok(n.map_err(classify)? > 0)
    }

    /// Runs the statements unless the guard is already installed. Processes racing to install
    /// take turns: on PostgreSQL under an advisory lock in one transaction, on SQLite in one
    /// `BEGIN IMMEDIATE` transaction; MySQL commits each DDL statement on its own, so there a
    /// trigger that another process created first counts as created.
    pub(crate) async fn install(&self, pool: &SqlPool) -> StoreResult<()> {
        if self.installed(pool).await? {
            return Ok(());
        }
        let dialect = pool.dialect();
        if dialect.transactional_ddl() {
            let mut tx = AnyTx::begin(pool).await.map_err(classify)?;
            match run_all(&mut tx, dialect.fence_ddl_lock(), self.statements).await {
                Ok(()) => tx.commit().await.map_err(classify),
                Err(e) => {
                    let _ = tx.rollback().await;
                    Err(classify(e))
                }
            }
        } else {
            for statement in self.statements {
                let done =
                    with_pool!(pool, p => sqlx::raw_sql(statement).execute(p).await.map(|_| ()));
                match done {
                    Err(e) if trigger_exists(&e) => {}
                    other => other.map_err(classify)?,
                }
            }
            Ok(())
        }
    }

    /// Installs (unless `create` is off) and checks that the guard is there.
    pub(crate) async fn ensure(&self, pool: &SqlPool, create: bool, what: &str) -> StoreResult<()> {
        if create {
            self.install(pool).await?;
        }
        if self.installed(pool).await? {
            return Ok(());
        }
        Err(StoreError::permanent(format!(
            "{what} or its \"never lower\" guard trigger is missing (create_schema is off); \
             create them with: {}",
            self.statements.join(";\n")
        )))
    }
}

/// Runs `lock` (if any), then `statements`, in `tx`.
async fn run_all(
    tx: &mut AnyTx,
    lock: Option<&'static str>,
    statements: &[String],
) -> Result<(), sqlx::Error> {
    with_tx!(tx, t => {
        // `Executor::execute` (a boxed `Send` future) rather than `RawSql::execute`, whose
        // future the compiler cannot prove `Send` for every lifetime inside `async_trait`s.
        if let Some(lock) = lock {
            (&mut **t).execute(sqlx::raw_sql(lock)).await?;
        }
        for statement in statements {
            (&mut **t).execute(sqlx::raw_sql(statement)).await?;
        }
        Ok(())
    })
}

/// MySQL's "trigger already exists": another process created it first.
fn trigger_exists(err: &sqlx::Error) -> bool {
    crate::classify::mysql_error_number(err) == Some(MYSQL_TRIGGER_EXISTS)
}
