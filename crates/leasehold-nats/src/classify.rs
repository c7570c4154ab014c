//! Classifying NATS client and JetStream API errors as transient or permanent.
//!
//! JetStream answers with an HTTP-like `code` and its own `err_code`; the classification goes by
//! those numbers, never by message text. A wrong expected sequence (`err_code` 10071) is not an
//! error at all: it is contention, answered `Held` or `NotHeld` by the protocol room.

use std::time::Duration;

use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{Error as ApiError, ErrorCode};
use leasehold::{ErrorKind, store::StoreError};

/// The `err_code`s of JetStream errors that asking again can help with: the meta leader or a
/// stream's raft group is unavailable, changing or catching up, the server is short of
/// resources for a moment, too many atomic batches are in flight, or a batch's first message
/// was lost or timed out (the period ledger's batch is sent again whole).
pub(crate) const TRANSIENT_CODES: &[ErrorCode] = &[
    ErrorCode::ATOMIC_PUBLISH_INCOMPLETE_BATCH,
    ErrorCode::ATOMIC_PUBLISH_TOO_MANY_INFLIGHT,
    ErrorCode::BATCH_PUBLISH_TOO_MANY_INFLIGHT,
    ErrorCode::BATCH_PUBLISH_UNKNOWN_BATCH_ID,
    ErrorCode::CLUSTER_INCOMPLETE,
    ErrorCode::CLUSTER_NO_PEERS,
    ErrorCode::CLUSTER_NOT_ACTIVE,
    ErrorCode::CLUSTER_NOT_ASSIGNED,
    ErrorCode::CLUSTER_NOT_AVAILABLE,
    ErrorCode::CLUSTER_NOT_LEADER,
    ErrorCode::INSUFFICIENT_RESOURCES,
    ErrorCode::RAFT_GENERAL,
    ErrorCode::STREAM_STORE_FAILED,
    ErrorCode::TEMP_STORAGE_FAILED,
];

/// The HTTP-like status codes of JetStream answers that mean "not now": 408 (request timeout)
/// and 503 (no responders / JetStream temporarily unavailable).
const TRANSIENT_STATUS: &[usize] = &[408, 503];

/// The kind of a JetStream API error, by its `err_code` (and, for errors without one, its
/// status code).
pub(crate) fn api_kind(err_code: ErrorCode, status: usize) -> ErrorKind {
    if TRANSIENT_CODES.contains(&err_code)
        || (err_code == ErrorCode(0) && TRANSIENT_STATUS.contains(&status))
    {
        ErrorKind::Transient
    } else {
        ErrorKind::Permanent
    }
}

/// A JetStream API error as a store error, saying what was asked.
pub(crate) fn api(what: &str, err: &ApiError) -> StoreError {
    let kind = api_kind(err.error_code(), err.code());
    StoreError::new(kind, format!("NATS JetStream refused {what}: {err}"))
}

/// A request that did not answer within `budget`.
pub(crate) fn timed_out(what: &str, budget: Duration) -> StoreError {
    StoreError::transient(format!(
        "NATS did not answer {what} within {budget:?} (request_timeout)"
    ))
}

/// The connection to the server failed or is gone: transient (the client reconnects).
pub(crate) fn disconnected(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::transient(format!("NATS connection lost during {what}: {err}"))
}

/// The answer to a compare-and-set publish.
#[derive(Debug)]
pub(crate) enum Published {
    /// Stored at this stream sequence.
    Stored(u64),
    /// The subject's last sequence was not the one expected: someone else wrote first.
    Conflict,
}

/// A failed JetStream publish: contention, or a classified error.
pub(crate) fn publish(what: &str, err: &PublishError) -> Result<Published, StoreError> {
    let source = std::error::Error::source(err);
    match err.kind() {
        PublishErrorKind::WrongLastSequence => Ok(Published::Conflict),
        PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe => Err(disconnected(what, err)),
        PublishErrorKind::StreamNotFound => Err(StoreError::permanent(format!(
            "NATS has no JetStream stream for {what} (is JetStream enabled, and the bucket still there?)"
        ))),
        _ => match source.and_then(|s| s.downcast_ref::<ApiError>()) {
            Some(api_err) if api_err.error_code() == ErrorCode::STREAM_WRONG_LAST_SEQUENCE => {
                Ok(Published::Conflict)
            }
            Some(api_err) => Err(api(what, api_err)),
            None => Err(disconnected(what, err)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jetstream_errors_are_classified_by_their_codes() {
        assert_eq!(
            api_kind(ErrorCode::CLUSTER_NOT_AVAILABLE, 503),
            ErrorKind::Transient
        );
        assert_eq!(
            api_kind(ErrorCode::INSUFFICIENT_RESOURCES, 503),
            ErrorKind::Transient
        );
        assert_eq!(
            api_kind(ErrorCode::CLUSTER_NOT_LEADER, 500),
            ErrorKind::Transient
        );
        assert_eq!(
            api_kind(ErrorCode::ATOMIC_PUBLISH_TOO_MANY_INFLIGHT, 503),
            ErrorKind::Transient
        );
        assert_eq!(api_kind(ErrorCode(0), 503), ErrorKind::Transient);
        // 413: a direct get matching more keys than the server returns at once.
        assert_eq!(api_kind(ErrorCode(0), 413), ErrorKind::Permanent);
        assert_eq!(api_kind(ErrorCode(0), 408), ErrorKind::Transient);
        // Not found, not enabled, invalid TTL, message too large: asking again will not help.
        for permanent in [
            ErrorCode::STREAM_NOT_FOUND,
            ErrorCode::JETSTREAM_NOT_ENABLED,
            ErrorCode::JETSTREAM_NOT_ENABLED_FOR_ACCOUNT,
            ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM,
            ErrorCode(10165),
            ErrorCode(10166),
            ErrorCode::BATCH_PUBLISH_DISABLED,
            ErrorCode::ATOMIC_PUBLISH_DISABLED,
        ] {
            assert_eq!(
                api_kind(permanent, 400),
                ErrorKind::Permanent,
                "{permanent:?}"
            );
            assert_eq!(
                api_kind(permanent, 503),
                ErrorKind::Permanent,
                "{permanent:?}"
            );
        }
    }

    #[test]
    fn a_wrong_last_sequence_is_contention() {
        let conflict = PublishError::new(PublishErrorKind::WrongLastSequence);
        assert!(matches!(
            publish("a grant", &conflict),
            Ok(Published::Conflict)
        ));
        let timeout = PublishError::new(PublishErrorKind::TimedOut);
        assert!(publish("a grant", &timeout).is_err_and(|e| e.is_transient()));
        let missing = PublishError::new(PublishErrorKind::StreamNotFound);
        assert!(publish("a grant", &missing).is_err_and(|e| !e.is_transient()));
    }
}
