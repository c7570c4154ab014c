//! Classifying `sqlx` errors as transient or permanent.

use leasehold::{ErrorKind, store::StoreError};

/// SQLSTATE classes and codes that retrying can help with.
fn transient_sqlstate(code: &str) -> bool {
    // 08: connection exception; 40: transaction rollback (serialization failure, deadlock);
    // 53: insufficient resources; 57P0x: operator intervention (admin/crash shutdown, cannot
    // connect now); 55P03: lock not available; HYT00/HYT01: timeouts.
    code.starts_with("08")
        || code.starts_with("40")
        || code.starts_with("53")
        || code.starts_with("57P0")
        || code == "55P03"
        || code == "HYT00"
        || code == "HYT01"
}

/// MySQL/MariaDB error numbers that retrying can help with (for errors whose SQLSTATE is the
/// generic HY000): lock wait timeout, deadlock, too many connections, server gone or shutting
/// down, read-only (failover in progress), query interrupted.
const MYSQL_TRANSIENT: &[u16] = &[1205, 1213, 1040, 1053, 1290, 1317, 1836, 2006, 2013];

/// The MySQL/MariaDB error number of a database error (`None` for other databases).
///
/// `sqlx`'s `DatabaseError::code()` is the SQLSTATE on MySQL (often the generic `HY000`); the
/// number that tells a lock wait timeout from a syntax error is only on the MySQL error type.
pub(crate) fn mysql_error_number(err: &sqlx::Error) -> Option<u16> {
    match err {
        #[cfg(feature = "mysql")]
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .map(sqlx::mysql::MySqlDatabaseError::number),
        _ => None,
    }
}

/// SQLite result codes (primary code, low byte) that retrying can help with: BUSY, LOCKED.
const SQLITE_TRANSIENT: &[&str] = &["5", "6", "261", "262", "517", "773"];

/// Turns a `sqlx` error into a classified store error. Messages never include connection URLs.
pub(crate) fn classify(err: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    let kind = match &err {
        E::Io(_)
        | E::Tls(_)
        | E::PoolTimedOut
        | E::PoolClosed
        | E::WorkerCrashed
        | E::Protocol(_) => ErrorKind::Transient,
        E::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            if transient_sqlstate(&code)
                || mysql_error_number(&err).is_some_and(|n| MYSQL_TRANSIENT.contains(&n))
                || SQLITE_TRANSIENT.contains(&code.as_str())
            {
                ErrorKind::Transient
            } else {
                ErrorKind::Permanent
            }
        }
        _ => ErrorKind::Permanent,
    };
    match &err {
        // The database's own message says it all; no need to repeat it as a source.
        E::Database(db) => StoreError::new(
            kind,
            format!(
                "database error{}: {}",
                db.code().map(|c| format!(" {c}")).unwrap_or_default(),
                db.message()
            ),
        ),
        E::Io(_) => StoreError::new(kind, "cannot reach the database").with_source(err),
        E::Tls(_) => StoreError::new(kind, "TLS with the database failed").with_source(err),
        E::PoolTimedOut => StoreError::new(kind, "timed out waiting for a database connection"),
        E::PoolClosed => StoreError::new(kind, "the connection pool is closed"),
        _ => StoreError::new(kind, "database client error").with_source(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_and_conflict_states_are_transient() {
        for code in [
            "08006", "08001", "40001", "40P01", "53300", "57P01", "55P03",
        ] {
            assert!(transient_sqlstate(code), "{code}");
        }
        for code in ["42P01", "28P01", "23505", "42501", "22001"] {
            assert!(!transient_sqlstate(code), "{code}");
        }
    }

    #[test]
    fn io_and_pool_errors_are_transient_configuration_is_permanent() {
        assert!(classify(sqlx::Error::PoolTimedOut).is_transient());
        assert!(classify(sqlx::Error::Io(std::io::Error::other("reset"))).is_transient());
        assert!(!classify(sqlx::Error::Configuration("bad".into())).is_transient());
        assert!(!classify(sqlx::Error::RowNotFound).is_transient());
    }
}
