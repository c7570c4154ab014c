//! Classifying `redis` errors as transient or permanent.

use leasehold::{ErrorKind, store::StoreError};
use redis::{ErrorKind as Kind, RedisError, ServerErrorKind};

/// Server error codes that retrying can help with: the server is loading its dataset, is a replica
/// (failover in progress), asks to retry, the cluster or its primary is down, a script is running
/// (`BUSY`), not enough replicas are connected, persistence is failing, or memory is full.
const TRANSIENT_CODES: &[&str] = &[
    "LOADING",
    "READONLY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "BUSY",
    "NOREPLICAS",
    "MISCONF",
    "OOM",
    "UNBLOCKED",
];

/// Whether an error is worth retrying.
pub(crate) fn kind_of(err: &RedisError) -> ErrorKind {
    match err.kind() {
        // A TLS handshake or certificate failure, or a local permission problem: configuration.
        Kind::Io
            if io_kind(err).is_some_and(|k| {
                matches!(
                    k,
                    std::io::ErrorKind::InvalidData
                        | std::io::ErrorKind::PermissionDenied
                        | std::io::ErrorKind::Unsupported
                )
            }) =>
        {
            ErrorKind::Permanent
        }
        // Refused, reset, closed, timed out: the server may answer later.
        Kind::Io | Kind::Parse | Kind::ClusterConnectionNotFound => ErrorKind::Transient,
        Kind::Server(kind) => match kind {
            ServerErrorKind::BusyLoading
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            // redis::Script reloads on NOSCRIPT; seeing it still means a SCRIPT FLUSH raced us.
            | ServerErrorKind::NoScript => ErrorKind::Transient,
            ServerErrorKind::ResponseError
                if err
                    .detail()
                    .is_some_and(|d| d.contains("max number of clients")) =>
            {
                ErrorKind::Transient
            }
            _ => ErrorKind::Permanent,
        },
        Kind::Extension => match err.code() {
            Some(code) if TRANSIENT_CODES.contains(&code) => ErrorKind::Transient,
            // WRONGTYPE, NOAUTH, WRONGPASS, NOPERM and everything unknown.
            _ => ErrorKind::Permanent,
        },
        // Authentication, configuration, unexpected replies (a foreign key in our namespace).
        _ => ErrorKind::Permanent,
    }
}

/// The I/O error kind behind an error, if it is one (redis-rs keeps it behind an `Arc`).
fn io_kind(err: &RedisError) -> Option<std::io::ErrorKind> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let source = std::error::Error::source(err)?;
    let inner: &(dyn std::error::Error + 'static) = match source.downcast_ref::<Shared>() {
        Some(shared) => shared.as_ref(),
        None => source,
    };
    inner
        .downcast_ref::<std::io::Error>()
        .map(std::io::Error::kind)
}

/// Turns a `redis` error into a classified store error. Messages never include the URL.
pub(crate) fn classify(err: RedisError) -> StoreError {
    let kind = kind_of(&err);
    let message = match err.kind() {
        _ if err.is_timeout() => "Redis did not answer in time",
        _ if err.is_connection_refusal() => "Redis refused the connection",
        Kind::Io if err.is_connection_dropped() => "the connection to Redis was lost",
        Kind::Io if io_kind(&err) == Some(std::io::ErrorKind::InvalidData) => {
            "the TLS handshake with Redis failed (certificate, or TLS against a plain-text port?)"
        }
        Kind::Io => "cannot reach Redis",
        Kind::AuthenticationFailed => "Redis rejected the credentials",
        Kind::Parse => "Redis sent a reply that could not be parsed",
        Kind::UnexpectedReturnType => {
            "Redis returned an unexpected reply; is another program using this key prefix?"
        }
        Kind::Server(ServerErrorKind::Moved | ServerErrorKind::Ask) => {
            "Redis redirected the command to another cluster node; this store talks to one node \
             (use a cluster proxy, or one lock per node)"
        }
        Kind::Server(_) | Kind::Extension => "Redis returned an error",
        _ => "Redis client error",
    };
    StoreError::new(kind, message).with_source(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: &str, detail: &str) -> RedisError {
        redis::make_extension_error(code.to_owned(), Some(detail.to_owned()))
    }

    #[test]
    fn availability_errors_are_transient() {
        for code in ["BUSY", "NOREPLICAS", "MISCONF", "OOM"] {
            assert_eq!(kind_of(&server(code, "x")), ErrorKind::Transient, "{code}");
        }
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(classify(refused).is_transient());
        let timeout = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        let e = classify(timeout);
        assert!(e.is_transient() && e.message().contains("in time"), "{e}");
        let reset = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(classify(reset).is_transient());
        let tls = RedisError::from(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate",
        ));
        assert!(!classify(tls).is_transient());
    }

    #[test]
    fn data_and_permission_errors_are_permanent() {
        for code in ["WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "WEIRD"] {
            assert_eq!(kind_of(&server(code, "x")), ErrorKind::Permanent, "{code}");
        }
        let auth = RedisError::from((Kind::AuthenticationFailed, "auth failed"));
        assert!(!classify(auth).is_transient());
        let reply = RedisError::from((Kind::UnexpectedReturnType, "not an int"));
        assert!(!classify(reply).is_transient());
    }
}
