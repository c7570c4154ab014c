//! The guards' SQL (feature `fence`): the fence table, the "never lower" trigger that guards a
//! fence column (the fence table's, or one of the user's own tables), and the upsert that
//! advances a resource's fence. Shared assembly here; what differs per database is behind the
//! [`FenceSql`] trait, implemented next to each database's [`Sql`] in `sqlite.rs`,
//! `postgres/` and `mysql.rs`. The fence wing (`crate::fence`) runs these statements.

use super::names::bounded_name;
use super::{Columns, Dialect, Sql};

/// The default name of the fence table.
pub const DEFAULT_FENCE_TABLE: &str = "leasehold_fences";

/// How every guard trigger's error message starts, on every database: the text that tells a
/// refused stale write from any other database error (see
/// [`is_stale_fence_error`](crate::is_stale_fence_error)).
pub const STALE_FENCE_MESSAGE: &str = "leasehold: stale fence";

/// The SQLSTATE the PostgreSQL guard raises (`RAISE EXCEPTION … USING ERRCODE`): `LHF01`, a
/// code of no standard class, so nothing else raises it. MySQL/MariaDB guards `SIGNAL SQLSTATE
/// '45000'` (the "user-defined exception" state) and SQLite's `RAISE(ABORT, …)` fails with
/// `SQLITE_CONSTRAINT`; both are told apart by [`STALE_FENCE_MESSAGE`].
pub const POSTGRES_STALE_FENCE_SQLSTATE: &str = "LHF01";

/// The SQL of one fence table, for review by DBAs and for scripts that write it directly.
/// Parameters are numbered (`$n` on PostgreSQL, `?n` on SQLite) or positional (`?` on MySQL)
/// in the order given.
///
/// ```
/// use leasehold_sql::Dialect;
/// let sql = Dialect::Postgres.fence_statements("leasehold_fences");
/// assert!(sql.advance.starts_with("INSERT INTO leasehold_fences"));
/// assert!(sql.create.iter().any(|s| s.contains("CREATE TRIGGER")));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FenceStatements {
    /// The table and its guard trigger, in order; safe to run again (PostgreSQL, SQLite; on
    /// MySQL a second run fails with "trigger already exists", error 1359, which the crate's own
    /// `migrate` tolerates).
    pub create: Vec<String>,
    /// Advances a resource's fence: (resource, fence). One upsert: it inserts the row or takes
    /// its row lock and updates it, recording the fence it replaces as `previous_fence`; the
    /// guard trigger refuses it when the new fence is lower. Returns `previous_fence` on
    /// PostgreSQL and SQLite; on MySQL read it with [`read_previous`](Self::read_previous).
    pub advance: String,
    /// MySQL: `previous_fence` of the row just written (resource) — MySQL has no `RETURNING`.
    pub read_previous: String,
    /// The highest fence accepted for a resource: (resource).
    pub highest: String,
    /// Counts the guard trigger (0 or 1), to skip creating what is there.
    pub guard_count: String,
}

/// What differs between the databases in the fence SQL: the fence table's key type, the upsert
/// that advances a fence, and the guard trigger.
pub(super) trait FenceSql: Sql {
    /// The type of the fence table's `resource` key: up to 255 bytes of UTF-8, compared
    /// exactly (`"a"` and `"a "` are two resources).
    fn resource_type(&self) -> &'static str {
        "VARCHAR(255)"
    }

    /// The upsert that advances a resource's fence: (resource, fence).
    fn fence_upsert(&self, table: &str) -> String {
        fence_upsert_on_conflict(self, table)
    }

    /// The statements that install guard `g`.
    fn guard(&self, g: &Guard<'_>) -> Vec<String>;

    /// A query counting the triggers named like `g`'s (0 or 1).
    fn guard_count(&self, g: &Guard<'_>) -> String;

    /// A statement that serializes the transactions installing guards, if one is needed.
    fn ddl_lock(&self) -> Option<&'static str> {
        None
    }

    /// Whether DDL can run inside a transaction.
    fn transactional_ddl(&self) -> bool {
        true
    }

    /// The fenced sinks' value upsert: (resource, value).
    fn value_upsert(&self, table: &str) -> String {
        format!(
            "INSERT INTO {table} (resource, value) VALUES ({}, {}) \
             ON CONFLICT (resource) DO UPDATE SET value = excluded.value",
            self.param(1),
            self.param(2)
        )
    }
}

/// One "never lower" guard: the trigger on `table.column` and, on PostgreSQL, its function.
pub(super) struct Guard<'a> {
    /// The table as given: `TABLE` or `SCHEMA.TABLE`.
    pub(super) table: &'a str,
    /// The schema part, if any.
    pub(super) schema: Option<&'a str>,
    /// The table part.
    pub(super) relation: &'a str,
    /// The guarded column.
    pub(super) column: &'a str,
    /// The trigger's (and function's) name: lowercase, within the dialect's name limit.
    pub(super) name: String,
    /// The start of the error message: [`STALE_FENCE_MESSAGE`] and what it guards.
    pub(super) message: String,
}

impl<'a> Guard<'a> {
    /// The guard of `table.column`; both already checked.
    pub(super) fn new(dialect: Dialect, table: &'a str, column: &'a str) -> Self {
        let (schema, relation) = match table.split_once('.') {
            Some((s, t)) => (Some(s), t),
            None => (None, table),
        };
        let name = bounded_name(
            &format!("{relation}_{column}_guard").to_ascii_lowercase(),
            dialect.max_name_len(),
        );
        Self {
            table,
            schema,
            relation,
            column,
            name,
            message: format!("{STALE_FENCE_MESSAGE} for {table}.{column}"),
        }
    }

    /// The trigger's (or function's) name in the table's schema.
    pub(super) fn qualified(&self) -> String {
        match self.schema {
            Some(s) => format!("{s}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// True when the update lowers the column (or clears it once set), as SQL on `OLD`/`NEW`.
    pub(super) fn lowers(&self) -> String {
        let c = self.column;
        format!("OLD.{c} IS NOT NULL AND (NEW.{c} IS NULL OR NEW.{c} < OLD.{c})")
    }
}

impl Dialect {
    /// The fence table's SQL for `table` (the name is not checked here: use
    /// [`check_table_name`](Self::check_table_name) first, as `SqlFences` does).
    pub fn fence_statements(self, table: &str) -> FenceStatements {
        let d = self.fence_sql();
        let guard = Guard::new(self, table, "fence");
        let Columns { int, tail, .. } = d.columns();
        let mut create = vec![format!(
            "CREATE TABLE IF NOT EXISTS {table} (\n\
             \x20 resource       {resource} NOT NULL,\n\
             \x20 fence          {int} NOT NULL,\n\
             \x20 previous_fence {int} NULL,\n\
             \x20 updated_at     {int} NOT NULL,\n\
             \x20 PRIMARY KEY (resource)\n\
             ){tail}",
            resource = d.resource_type(),
        )];
        create.extend(d.guard(&guard));
        FenceStatements {
            create,
            advance: d.fence_upsert(table),
            read_previous: format!(
                "SELECT previous_fence FROM {table} WHERE resource = {}",
                d.param(1)
            ),
            highest: format!("SELECT fence FROM {table} WHERE resource = {}", d.param(1)),
            guard_count: d.guard_count(&guard),
        }
    }

    /// The statements that install the "never lower" trigger on a fence column of one of your
    /// own tables: an `UPDATE` that lowers `table.column` (or sets it to `NULL` once set) fails
    /// with an error starting [`STALE_FENCE_MESSAGE`] (on PostgreSQL with SQLSTATE
    /// [`POSTGRES_STALE_FENCE_SQLSTATE`]). Put them in your migrations, or let
    /// `SqlFences::protect_column` run them. Every `UPDATE` must then set the column to the
    /// writer's fence: one that leaves it alone is not checked.
    ///
    /// On MySQL the trigger body holds `;`: the `mysql`/`mariadb` command-line client needs a
    /// `DELIMITER` around it (migration tools that send whole statements do not).
    ///
    /// # Errors
    ///
    /// [`FenceError::Table`](crate::FenceError::Table) or
    /// [`FenceError::Column`](crate::FenceError::Column) for a name that is not a plain SQL
    /// identifier within the dialect's limit.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// let ddl = Dialect::Sqlite.fence_guard("reports", "last_fence")?;
    /// assert!(ddl[0].starts_with("CREATE TRIGGER IF NOT EXISTS reports_last_fence_guard"));
    /// assert!(Dialect::Sqlite.fence_guard("reports", "x; DROP TABLE reports").is_err());
    /// # Ok::<(), leasehold_sql::FenceError>(())
    /// ```
    pub fn fence_guard(self, table: &str, column: &str) -> Result<Vec<String>, crate::FenceError> {
        self.check_table_name(table)?;
        self.check_column_name(column)?;
        Ok(self.fence_sql().guard(&Guard::new(self, table, column)))
    }

    /// [`fence_guard`](Self::fence_guard)'s trigger count query (0 or 1), unchecked names.
    pub(crate) fn fence_guard_count(self, table: &str, column: &str) -> String {
        self.fence_sql()
            .guard_count(&Guard::new(self, table, column))
    }

    /// Statements that run first in a transaction installing fence DDL, so that processes
    /// installing it at once take turns (PostgreSQL's `CREATE OR REPLACE FUNCTION` fails
    /// when run concurrently); empty where none is needed.
    pub(crate) fn fence_ddl_lock(self) -> Option<&'static str> {
        self.fence_sql().ddl_lock()
    }

    /// Whether fence DDL runs in one transaction (PostgreSQL and SQLite; MySQL commits each
    /// DDL statement on its own).
    pub(crate) fn transactional_ddl(self) -> bool {
        self.fence_sql().transactional_ddl()
    }
}

/// The fence upsert of the databases with `ON CONFLICT … DO UPDATE` and `RETURNING`
/// (PostgreSQL, SQLite). `previous_fence = f.fence` reads the row as it was.
fn fence_upsert_on_conflict<S: Sql + ?Sized>(d: &S, table: &str) -> String {
    format!(
        "INSERT INTO {table} AS f (resource, fence, updated_at) VALUES ({}, {}, {}) \
         ON CONFLICT (resource) DO UPDATE SET previous_fence = f.fence, fence = excluded.fence, \
         updated_at = excluded.updated_at RETURNING previous_fence",
        d.param(1),
        d.param(2),
        d.now_ms()
    )
}

/// The table the fenced sinks (`fence::sinks`) write their values to, and its statements:
/// (create, upsert (resource, value), read (resource)).
pub(crate) fn sink_values(dialect: Dialect, table: &str) -> [String; 3] {
    let d = dialect.fence_sql();
    let Columns { int, tail, .. } = d.columns();
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {table} (resource {} NOT NULL, value {int} NOT NULL, \
         PRIMARY KEY (resource)){tail}",
        d.resource_type()
    );
    let upsert = d.value_upsert(table);
    let read = format!("SELECT value FROM {table} WHERE resource = {}", d.param(1));
    [create, upsert, read]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_names_fit_every_dialect_and_keep_the_schema() {
        for d in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            let long = format!("s.{}", "t".repeat(d.max_name_len()));
            let column = "c".repeat(d.max_name_len());
            let g = Guard::new(d, &long, &column);
            assert!(g.name.len() <= d.max_name_len(), "{}", g.name);
            assert!(g.qualified().starts_with("s."));
            let ddl = d.fence_guard(&long, &column).expect("valid names");
            assert!(ddl.iter().any(|s| s.contains(&g.name)));
            assert_ne!(g.name, Guard::new(d, &long, "other").name);
        }
    }

    #[test]
    fn only_plain_identifiers_are_spliced() {
        for d in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            for (table, column) in [
                ("t; DROP TABLE x", "c"),
                ("t", "c; DROP TABLE x"),
                ("t", ""),
                ("t", "1c"),
                ("t", "a.b"),
                ("a.b.c", "c"),
            ] {
                assert!(d.fence_guard(table, column).is_err(), "{table}.{column}");
            }
            let too_long = "c".repeat(d.max_name_len() + 1);
            let e = d.fence_guard("t", &too_long).expect_err("too long");
            assert!(e.to_string().contains("at most"), "{e}");
        }
    }

    #[test]
    fn the_upsert_records_the_fence_it_replaces() {
        let p = Dialect::Postgres.fence_statements("f");
        assert!(p.advance.contains("previous_fence = f.fence") && p.advance.contains("RETURNING"));
        let m = Dialect::MySql.fence_statements("f");
        assert!(
            m.advance
                .contains("ON DUPLICATE KEY UPDATE previous_fence = fence, fence =")
        );
        let s = Dialect::Sqlite.fence_statements("f");
        assert!(s.advance.contains("?2") && s.create[1].contains("RAISE(ABORT"));
    }
}
