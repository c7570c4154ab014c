//! Classifying etcd client errors as transient or permanent, and which ones may be sent again.

use etcd_client::Error;
use leasehold::{ErrorKind, store::StoreError};
use tonic::Code;

/// True if the connection failed in its TLS handshake (an untrusted or mismatched certificate,
/// TLS against a plain-text port, no common cipher): configuration, not availability.
fn tls_failure(err: &Error) -> bool {
    let Error::GRpcStatus(status) = err else {
        return false;
    };
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::InvalidData
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether an error is worth retrying later.
pub(crate) fn kind_of(err: &Error) -> ErrorKind {
    if tls_failure(err) {
        return ErrorKind::Permanent;
    }
    match err {
        // Unreachable member, reset connection, broken stream: another try may work.
        Error::TransportError(_)
        | Error::IoError(_)
        | Error::WatchError(_)
        | Error::LeaseKeepAliveError(_) => ErrorKind::Transient,
        Error::GRpcStatus(status) => match status.code() {
            // No leader, leader changed, request timed out, too many requests, a full quota
            // (an operator can compact and defragment), a cancelled or aborted call.
            Code::Unavailable
            | Code::DeadlineExceeded
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal => ErrorKind::Transient,
            // An expired auth token is refreshed by the client; other auth failures are not.
            Code::Unauthenticated if status.message().contains("invalid auth token") => {
                ErrorKind::Transient
            }
            // Wrong password, no permission, invalid argument, compacted revision, …
            _ => ErrorKind::Permanent,
        },
        // Bad endpoints, URIs or metadata: configuration.
        _ => ErrorKind::Permanent,
    }
}

/// Messages of `Unavailable` errors that mean the request was never handed to a leader: the
/// connection could not be made, or the member has no leader (etcd's `ErrNoLeader`) or is not
/// ready. A reset connection ("connection reset", "broken pipe") is *not* one of them: the
/// request may have been applied before the reset.
const NOT_SENT: &[&str] = &[
    "tcp connect error",
    "error trying to connect",
    "connection refused",
    "etcdserver: no leader",
    "etcdserver: not capable",
];

/// True if the request certainly did not reach a member that could apply it, so sending it
/// again (to another endpoint) cannot apply it twice: the connection could not be made, or the
/// member has no leader.
pub(crate) fn never_applied(err: &Error) -> bool {
    match err {
        Error::TransportError(_) => true,
        Error::GRpcStatus(status) => {
            let message = status.message().to_ascii_lowercase();
            status.code() == Code::Unavailable && NOT_SENT.iter().any(|m| message.contains(m))
        }
        _ => false,
    }
}

/// Turns an etcd client error into a classified store error. Messages never include a password.
pub(crate) fn classify(err: Error) -> StoreError {
    let kind = kind_of(&err);
    let message = match &err {
        _ if tls_failure(&err) => {
            "the TLS handshake with etcd failed (untrusted certificate, or etcds:// against a plain-text port?)"
                .to_owned()
        }
        Error::TransportError(_) => "cannot reach etcd".to_owned(),
        Error::IoError(_) => "I/O error talking to etcd".to_owned(),
        Error::GRpcStatus(status) => match status.code() {
            Code::Unauthenticated | Code::PermissionDenied => {
                format!(
                    "etcd rejected the credentials or permissions: {}",
                    status.message()
                )
            }
            Code::InvalidArgument if status.message().contains("authentication failed") => {
                "etcd rejected the user name or password".to_owned()
            }
            Code::ResourceExhausted if status.message().contains("space exceeded") => {
                "etcd is out of space (NOSPACE alarm): compact, defragment and disarm the alarm"
                    .to_owned()
            }
            Code::Unavailable => format!("etcd is unavailable: {}", status.message()),
            Code::DeadlineExceeded => format!("etcd did not answer in time: {}", status.message()),
            _ => format!("etcd returned an error: {}", status.message()),
        },
        Error::WatchError(e) => format!("etcd watch failed: {e}"),
        Error::LeaseKeepAliveError(e) => format!("etcd lease keep-alive failed: {e}"),
        other => format!("etcd client error: {other}"),
    };
    StoreError::new(kind, message).with_source(err)
}

/// A transient error for a request that got no answer in time.
pub(crate) fn timed_out(what: &str, after: std::time::Duration) -> StoreError {
    StoreError::transient(format!("etcd did not answer {what} within {after:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: Code, message: &str) -> Error {
        Error::GRpcStatus(tonic::Status::new(code, message))
    }

    #[test]
    fn availability_errors_are_transient() {
        for e in [
            status(Code::Unavailable, "etcdserver: no leader"),
            status(Code::Unavailable, "etcdserver: request timed out"),
            status(Code::ResourceExhausted, "etcdserver: too many requests"),
            status(Code::DeadlineExceeded, "context deadline exceeded"),
            status(Code::Unauthenticated, "etcdserver: invalid auth token"),
            Error::LeaseKeepAliveError("stream closed".into()),
        ] {
            assert_eq!(kind_of(&e), ErrorKind::Transient, "{e}");
        }
        assert!(classify(status(Code::Unavailable, "etcdserver: no leader")).is_transient());
    }

    #[test]
    fn configuration_and_permission_errors_are_permanent() {
        for e in [
            status(
                Code::InvalidArgument,
                "etcdserver: authentication failed, invalid user ID or password",
            ),
            status(Code::PermissionDenied, "etcdserver: permission denied"),
            status(
                Code::OutOfRange,
                "mvcc: required revision has been compacted",
            ),
            Error::InvalidArgs("empty endpoints".into()),
        ] {
            assert_eq!(kind_of(&e), ErrorKind::Permanent, "{e}");
        }
        let e = classify(status(
            Code::InvalidArgument,
            "etcdserver: authentication failed, invalid user ID or password",
        ));
        assert!(e.message().contains("password"), "{e}");
    }

    #[test]
    fn tls_handshake_failures_are_permanent() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        );
        let e = Error::GRpcStatus(tonic::Status::from_error(Box::new(io)));
        assert_eq!(kind_of(&e), ErrorKind::Permanent);
        assert!(classify(e).message().contains("TLS"));
    }

    #[test]
    fn only_requests_that_never_reached_a_leader_are_resent() {
        assert!(never_applied(&status(
            Code::Unavailable,
            "etcdserver: no leader"
        )));
        assert!(never_applied(&status(
            Code::Unavailable,
            "tcp connect error: Connection refused"
        )));
        assert!(!never_applied(&status(
            Code::Unavailable,
            "etcdserver: request timed out"
        )));
        assert!(!never_applied(&status(
            Code::Unavailable,
            "etcdserver: leader changed"
        )));
        assert!(!never_applied(&status(
            Code::PermissionDenied,
            "etcdserver: no leader"
        )));
        assert!(!never_applied(&status(
            Code::Unavailable,
            "error reading from server: connection reset by peer"
        )));
    }
}
