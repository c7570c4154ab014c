//! Tracing spans around store calls, and the fields they carry.
//!
//! Every acquisition, renewal and release runs inside a span of the `tracing` crate, so a
//! subscriber (a log formatter, or `tracing-opentelemetry` exporting to an OpenTelemetry
//! collector) sees how long each took and how it ended. An OpenTelemetry exporter turns each
//! field into a span attribute of the same name.
//!
//! | span | level | when |
//! |---|---|---|
//! | `leasehold.acquire` | INFO | one election: from the first attempt until elected, skipped or failed (for [`Elector::lead`](crate::Elector::lead), the whole campaign) |
//! | `leasehold.renew` | DEBUG | one renewal of a held lease, by the watchdog or by [`LeaderContext::extend`](crate::LeaderContext::extend) |
//! | `leasehold.release` | INFO | releasing a lease: stopping its watchdog, then the store call |
//!
//! | field | on | value |
//! |---|---|---|
//! | `lock` | all | the full lock name (with its tenant prefix, if any) |
//! | `slot` | all | the slot held (on `leasehold.acquire`, recorded once elected) |
//! | `fence` | all | the lease's fencing token (on `leasehold.acquire`, recorded once elected) |
//! | `owner` | all | this node's id, as recorded in the store |
//! | `store` | all | the store's description ([`LeaseStore::describe`](crate::store::LeaseStore::describe)): its kind and address, never a secret |
//! | `slots` | `leasehold.acquire` | the number of slots contended for |
//! | `outcome` | all | see [`Outcome`] |
//! | `otel.status_code` | all | `"ERROR"` when the store call failed (how `tracing-opentelemetry` sets a span's status) |
//!
//! The values of `outcome` are those of [`Outcome::as_str`]: `acquired`, `contention`,
//! `already_ran` and `error` for an acquisition; `renewed`, `not_held`, `deadline` and `error`
//! for a renewal; `released`, `not_held` and `error` for a release.
//!
//! A lease's token never appears in a span: it is the capability to extend or release the
//! lease.

use tracing::Span;
use tracing::field::Empty;

use crate::name::LockName;
use crate::store::lease::{Extension, Lease, Release};

/// The name of the span around an election.
pub const ACQUIRE: &str = "leasehold.acquire";
/// The name of the span around a renewal.
pub const RENEW: &str = "leasehold.renew";
/// The name of the span around a release.
pub const RELEASE: &str = "leasehold.release";

/// How a store call ended: the `outcome` field of the spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Elected.
    Acquired,
    /// The lock stayed held elsewhere for the whole wait.
    Contention,
    /// The period ledger refused the run: this period already ran.
    AlreadyRan,
    /// The lease was renewed.
    Renewed,
    /// The lease was released.
    Released,
    /// The store no longer held the lease (it expired, or was broken).
    NotHeld,
    /// The local deadline passed before the store answered the renewal.
    Deadline,
    /// The store call failed.
    Error,
}

impl Outcome {
    /// The value recorded in the `outcome` field.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Acquired => "acquired",
            Self::Contention => "contention",
            Self::AlreadyRan => "already_ran",
            Self::Renewed => "renewed",
            Self::Released => "released",
            Self::NotHeld => "not_held",
            Self::Deadline => "deadline",
            Self::Error => "error",
        }
    }
}

/// The span of one election; `slot`, `fence` and `outcome` are recorded when it ends.
pub(crate) fn acquire(lock: &LockName, slots: u32, owner: &str, store: &str) -> Span {
    tracing::info_span!(
        "leasehold.acquire",
        lock = %lock,
        slots,
        owner,
        store,
        slot = Empty,
        fence = Empty,
        outcome = Empty,
        otel.status_code = Empty,
    )
}

/// The span of a store call on a held lease: its fields are the same for renewals and releases.
macro_rules! lease_span {
    ($span:ident, $name:literal, $lease:expr, $store:expr) => {
        tracing::$span!(
            $name,
            lock = %$lease.lock,
            slot = $lease.slot,
            fence = $lease.fence,
            owner = %$lease.owner,
            store = $store,
            outcome = Empty,
            otel.status_code = Empty,
        )
    };
}

/// The span of one renewal of `lease`.
pub(crate) fn renew(lease: &Lease, store: &str) -> Span {
    lease_span!(debug_span, "leasehold.renew", lease, store)
}

/// The span of releasing `lease`.
pub(crate) fn release(lease: &Lease, store: &str) -> Span {
    lease_span!(info_span, "leasehold.release", lease, store)
}

/// Records the lease an election got.
pub(crate) fn record_lease(span: &Span, slot: u32, fence: u64) {
    span.record("slot", slot);
    span.record("fence", fence);
}

/// The outcome of a renewal's store call.
pub(crate) fn extension_outcome<E>(answer: &Result<Extension, E>) -> Outcome {
    match answer {
        Ok(Extension::Extended { .. }) => Outcome::Renewed,
        Ok(Extension::NotHeld) => Outcome::NotHeld,
        Err(_) => Outcome::Error,
    }
}

/// The outcome of a release's store call.
pub(crate) fn release_outcome<E>(answer: &Result<Release, E>) -> Outcome {
    match answer {
        Ok(Release::Released) => Outcome::Released,
        Ok(Release::NotHeld) => Outcome::NotHeld,
        Err(_) => Outcome::Error,
    }
}

/// Records how the call ended.
pub(crate) fn record_outcome(span: &Span, outcome: Outcome) {
    span.record("outcome", outcome.as_str());
    if outcome == Outcome::Error {
        span.record("otel.status_code", "ERROR");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_values_are_distinct_snake_case() {
        let all = [
            Outcome::Acquired,
            Outcome::Contention,
            Outcome::AlreadyRan,
            Outcome::Renewed,
            Outcome::Released,
            Outcome::NotHeld,
            Outcome::Deadline,
            Outcome::Error,
        ];
        let mut seen = std::collections::HashSet::new();
        for o in all {
            let s = o.as_str();
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate outcome {s}");
        }
    }
}
