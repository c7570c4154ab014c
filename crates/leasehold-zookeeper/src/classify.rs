//! ZooKeeper's errors as transient or permanent [`StoreError`]s, and what a session state
//! means for the requests of a store.
//!
//! | ZooKeeper says | kind | the store |
//! |---|---|---|
//! | connection loss, timeout, no server reachable | transient | keeps the client (it reconnects by itself, within the session); the core retries, and keeps a held lease until its conservative local deadline |
//! | session expired, session moved, client closed | transient | drops the client: the next request opens a new session (leases are persistent nodes, untouched by sessions) |
//! | throttled, read-only server | transient | asks again later |
//! | not authorised, authentication failed, bad ACL, quota, unimplemented, bad arguments | permanent | gives up: asking again will not help |

use std::time::Duration;

use leasehold::{ErrorKind, store::StoreError};
use zookeeper_client::Error;

/// The kind of a ZooKeeper error.
pub(crate) fn kind_of(e: &Error) -> ErrorKind {
    match e {
        Error::ConnectionLoss
        | Error::Timeout
        | Error::NoHosts
        | Error::SessionExpired
        | Error::SessionMoved
        | Error::ClientClosed
        | Error::Throttled
        | Error::NotReadOnly => ErrorKind::Transient,
        _ => ErrorKind::Permanent,
    }
}

/// True when the client can no longer be used and a new session must be opened.
pub(crate) fn needs_new_session(e: &Error) -> bool {
    matches!(
        e,
        Error::SessionExpired | Error::ClientClosed | Error::SessionMoved
    )
}

/// A ZooKeeper error during `what` as a classified store error, with advice for the
/// permanent ones.
pub(crate) fn classify(what: &str, e: &Error) -> StoreError {
    let advice = match e {
        Error::NoAuth | Error::AuthFailed | Error::InvalidAcl => {
            "; check the URL's user and password (digest scheme) and the ACLs of the store's nodes"
        }
        Error::Unimplemented => "; the store needs ZooKeeper 3.6 or later",
        Error::QuotaExceeded => "; raise the quota of the store's prefix",
        _ => "",
    };
    StoreError::new(
        kind_of(e),
        format!("zookeeper error during {what}: {e}{advice}"),
    )
}

/// The transient error of a request that did not answer within `budget`.
pub(crate) fn timed_out(what: &str, budget: Duration) -> StoreError {
    StoreError::transient(format!(
        "zookeeper did not answer {what} within {budget:?} (request_timeout)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_code() {
        for e in [
            Error::ConnectionLoss,
            Error::Timeout,
            Error::NoHosts,
            Error::SessionExpired,
            Error::ClientClosed,
            Error::Throttled,
        ] {
            assert!(classify("a read", &e).is_transient(), "{e}");
        }
        for e in [
            Error::NoAuth,
            Error::AuthFailed,
            Error::InvalidAcl,
            Error::Unimplemented,
            Error::QuotaExceeded,
            Error::BadArguments(&"x"),
        ] {
            assert!(!classify("a read", &e).is_transient(), "{e}");
        }
        assert!(
            classify("a read", &Error::NoAuth)
                .to_string()
                .contains("ACLs")
        );
        assert!(needs_new_session(&Error::SessionExpired));
        assert!(!needs_new_session(&Error::ConnectionLoss));
    }
}
