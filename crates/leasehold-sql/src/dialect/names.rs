//! Names spliced into SQL: the table-name rule every dialect checks (an SQL identifier,
//! optionally schema-qualified, within the dialect's length limit), the column-name rule, names
//! derived from them within a limit, and the PostgreSQL `NOTIFY` channel derived from a table's.

use super::{Dialect, MYSQL_MAX_NAME_LEN, POSTGRES_MAX_NAME_LEN, SQLITE_MAX_NAME_LEN};

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
        if !parts.iter().all(|part| is_identifier(part)) {
            return Err(TableNameError::BadCharacters {
                name: table.to_owned(),
            });
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

/// True for one plain SQL identifier part: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A column name the crate cannot splice into SQL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnNameError {
    /// Empty, or a character outside `[A-Za-z0-9_]`, or a leading digit.
    #[error("column name {name:?} is not allowed: it must match [A-Za-z_][A-Za-z0-9_]*")]
    BadCharacters {
        /// The name given.
        name: String,
    },
    /// Longer than the dialect allows.
    #[error(
        "column name {name:?} is too long for {dialect}: it has {len} bytes, at most {max} are allowed"
    )]
    TooLong {
        /// The name given.
        name: String,
        /// The dialect.
        dialect: Dialect,
        /// Its length in bytes.
        len: usize,
        /// The dialect's limit ([`Dialect::max_name_len`]).
        max: usize,
    },
}

impl Dialect {
    /// Checks a column name: one SQL identifier `[A-Za-z_][A-Za-z0-9_]*` of at most
    /// [`max_name_len`](Self::max_name_len) bytes (unquoted, as the crate writes it into SQL).
    ///
    /// # Errors
    ///
    /// [`ColumnNameError`] saying what is wrong and what is allowed.
    ///
    /// ```
    /// use leasehold_sql::Dialect;
    /// assert!(Dialect::Postgres.check_column_name("last_fence").is_ok());
    /// assert!(Dialect::Postgres.check_column_name("fence; DROP TABLE x").is_err());
    /// ```
    pub fn check_column_name(self, column: &str) -> Result<(), ColumnNameError> {
        if !is_identifier(column) {
            return Err(ColumnNameError::BadCharacters {
                name: column.to_owned(),
            });
        }
        if column.len() > self.max_name_len() {
            return Err(ColumnNameError::TooLong {
                name: column.to_owned(),
                dialect: self,
                len: column.len(),
                max: self.max_name_len(),
            });
        }
        Ok(())
    }
}

/// FNV-1a (64 bit) of `text`: stable across processes, platforms and versions, for names
/// derived from other names.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `name` when it has at most `max` bytes; else its first bytes, `_` and 16 hex digits of a
/// hash of the whole of it, `max` bytes in all. `name` must be ASCII (identifiers are).
#[cfg(feature = "fence")]
pub(super) fn bounded_name(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_owned();
    }
    let keep = max.saturating_sub(17);
    format!(
        "{}_{:016x}",
        &name[..keep.min(name.len())],
        stable_hash(name)
    )
}

/// The PostgreSQL `NOTIFY` channel for `table`: `leasehold_release_<table>` with `.` as `_`, or,
/// when that would exceed PostgreSQL's 63-byte limit, `leasehold_release_` plus the name's first
/// 28 bytes, `_` and 16 hex digits of a hash of the whole name. Every process derives the same.
pub(crate) fn notify_channel(table: &str) -> String {
    let plain = format!("{CHANNEL_PREFIX}{}", table.replace('.', "_"));
    if plain.len() <= CHANNEL_MAX_LEN {
        return plain;
    }
    let hash = stable_hash(table);
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
}
