//! `SqlOptions`: table, schema creation, pool size and connect timeout.

use std::time::Duration;

#[cfg(doc)]
use crate::{Dialect, SqlStore};

/// The default table name.
pub const DEFAULT_TABLE: &str = "leasehold_leases";

/// Options for [`SqlStore`].
///
/// ```
/// use std::time::Duration;
/// use leasehold_sql::SqlOptions;
///
/// let opts = SqlOptions::default().with_table("ops.leases").with_create_schema(false).with_connect_timeout(Duration::from_secs(2));
/// assert_eq!(opts.table_name(), "ops.leases");
/// ```
#[derive(Debug, Clone)]
pub struct SqlOptions {
    pub(crate) table: String,
    pub(crate) create_schema: bool,
    pub(crate) max_connections: u32,
    pub(crate) connect_timeout: Duration,
}

impl Default for SqlOptions {
    fn default() -> Self {
        Self {
            table: DEFAULT_TABLE.to_owned(),
            create_schema: true,
            max_connections: 8,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlOptions {
    /// The table (default `leasehold_leases`; `TABLE` or `SCHEMA.TABLE`).
    #[must_use]
    pub fn with_table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }
    /// Create the table on first use if it is missing (default on). Turn off when the schema is
    /// managed elsewhere; [`Dialect::create_table`] prints the DDL.
    #[must_use]
    pub fn with_create_schema(mut self, on: bool) -> Self {
        self.create_schema = on;
        self
    }
    /// Pool size for pools built from URLs (default 8).
    #[must_use]
    pub fn with_max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }
    /// How long to wait for a connection before failing with a transient error (default 5 s; at
    /// most [`leasehold::limits::MAX_DURATION`]).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
    /// The configured table name.
    ///
    /// ```
    /// assert_eq!(leasehold_sql::SqlOptions::default().table_name(), "leasehold_leases");
    /// ```
    pub fn table_name(&self) -> &str {
        &self.table
    }
    /// Whether the table is created (and brought up to date) on first use.
    ///
    /// ```
    /// assert!(!leasehold_sql::SqlOptions::default().with_create_schema(false).create_schema());
    /// ```
    pub fn create_schema(&self) -> bool {
        self.create_schema
    }
    /// The pool size for pools built from URLs.
    ///
    /// ```
    /// assert_eq!(leasehold_sql::SqlOptions::default().with_max_connections(0).max_connections(), 1);
    /// ```
    pub fn max_connections(&self) -> u32 {
        self.max_connections
    }
    /// The connect timeout.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(leasehold_sql::SqlOptions::default().connect_timeout(), Duration::from_secs(5));
    /// ```
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }
}
