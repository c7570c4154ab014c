//! The limits on what the library and the CLI accept: slot counts, durations and node ids (lock
//! names: [`MAX_LOCK_NAME_LEN`]).
//!
//! Each limit is one constant, enforced where input enters: the options builders, every store's
//! `try_acquire`, `state` and `force_release` (through [`check_slots`]),
//! [`parse_duration`](crate::parse_duration) and the CLI's flags. Beyond a limit the answer is a typed
//! [`LimitError`] naming the value, the limit and its constant, never a panic, an allocation of the
//! requested size or a server-side loop of that length.
//!
//! | limit | constant | value |
//! |---|---|---|
//! | slots of a group (`max_leaders`, `--slots`) | [`MAX_SLOTS`] | 1024 |
//! | any duration (lease, wait, min lease, retry pauses, job periods, …) | [`MAX_DURATION`] | 36500 days (100 years) |
//! | node id (owner recorded with a lease) | [`MAX_NODE_ID_LEN`] | 255 bytes |
//! | lock name | [`MAX_LOCK_NAME_LEN`] | 255 bytes |
//! | fenced resource name | [`MAX_RESOURCE_NAME_LEN`] | 255 bytes |
//! | locks in one page of a listing (`list_locks`, `status --all`) | [`MAX_LIST_LOCKS`] | 100 |
//! | records one listing call reads | [`MAX_LIST_SCAN`] | 1000 |
//! | list cursor | [`MAX_LIST_CURSOR_LEN`] | 32 KiB |
//! | shards of a partition set | [`MAX_SHARDS`] | 65,536 |
//! | weight of one member of a partition set | [`MAX_PARTITION_WEIGHT`] | 64 |
//!
//! Deadline arithmetic goes through [`deadline_after`], which saturates, so even a duration that
//! slipped past a check cannot overflow an [`Instant`].

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

pub use leasehold_rules::{MAX_LOCK_NAME_LEN, MIN_LEASE, MIN_RENEWAL_PERIOD};

/// The most slots a lock may have: the largest
/// [`max_leaders`](crate::ElectionOptionsBuilder::max_leaders), the largest `slots` a store's `try_acquire`, `state`
/// and `force_release` accept, and the largest `--slots` of the CLI.
///
/// Why 1024: the cost of a group operation grows with its slots on some stores even when few are
/// held — DynamoDB reads every slot's item (one `BatchGetItem` per 100 keys, so at most 11), a
/// SQL group acquisition lists the free slots, the memory store keeps a row per slot — so the
/// bound keeps every call cheap (well under a millisecond of server work on Redis, a handful of
/// requests on DynamoDB) and bounded in memory. Redis and SQL scans follow the live holders, not
/// the slot count. A thousand concurrent holders of one lock is far beyond leader election; larger
/// pools belong in a work queue or a semaphore service.
pub const MAX_SLOTS: u32 = 1024;

// The longest duration: one of the input rules, with `parse_duration` (leasehold-rules).
pub use leasehold_rules::{MAX_DURATION, MIN_AUTO_EXTEND_LEASE};

/// The shortest poll interval of a [`LeadershipStream`](crate::lead::LeadershipStream)
/// ([`Elector::leadership_every`](crate::Elector::leadership_every)): 10 ms. Each reading is a
/// store round trip; shorter intervals would turn watching into a busy loop against the store.
pub const MIN_LEADERSHIP_POLL: Duration = Duration::from_millis(10);

/// The largest growth factor of a [`RetryPolicy`](crate::RetryPolicy) (each pause at most ten
/// times the previous one): beyond it the first pause after `initial` would already be the
/// maximum, so the policy would no longer back off gradually.
pub const MAX_RETRY_GROWTH: f64 = 10.0;

/// The longest node id (the owner recorded with each lease), in bytes: the SQL stores keep it in a
/// `VARCHAR(255)` column, which holds 255 characters and so every id of at most 255 bytes.
pub const MAX_NODE_ID_LEN: usize = 255;

/// The longest name of a fenced resource ([`ResourceName`](crate::fence::ResourceName)), in bytes:
/// the SQL fence table keeps it in a `VARCHAR(255)` key column, like lock names.
pub const MAX_RESOURCE_NAME_LEN: usize = 255;

/// The most locks one page of a listing holds
/// ([`LeaseStore::list_locks`](crate::LeaseStore::list_locks), and each store call behind
/// `leasehold status --all`): 100.
///
/// Why 100: a page is an answer an operator reads or a monitor polls. With up to
/// [`MAX_SLOTS`] holders per lock its size is still bounded, and a page is never a reason to hold
/// a store's connection for long; more locks come in further pages.
pub const MAX_LIST_LOCKS: usize = 100;

/// The most records (SQL rows, Redis keys, DynamoDB items, etcd keys) one
/// [`list_locks`](crate::LeaseStore::list_locks) call reads to find its locks: 1000, plus the
/// slots of the one lock the page ends on where a store completes it (at most [`MAX_SLOTS`]).
///
/// Why: stores keep records that hold no lease (SQL rows and DynamoDB items stay after release so
/// fences survive; Redis hashes and etcd ledger keys outlive their leases), so finding live locks
/// means reading past dead ones. Bounding what one call reads keeps every call a bounded,
/// index-ordered read (a `LIMIT`, a `SCAN … COUNT`, a `Scan` with `Limit`, a range with a limit),
/// never a scan of the whole table or keyspace; a page that found few or no locks still says
/// where the next one starts.
pub const MAX_LIST_SCAN: usize = 1000;

/// The longest [`ListCursor`](crate::store::ListCursor) a store writes or reads: 32 KiB, room
/// for a position and [`MAX_LIST_LOCKS`] lock names of the longest length (a Redis cursor
/// carries the names of one `SCAN` reply that did not fit in its page).
pub const MAX_LIST_CURSOR_LEN: usize = 32 * 1024;

/// The most shards a [`PartitionSet`](crate::partition::PartitionSet) may have: 65,536.
///
/// Why: every shard is a lock of its own, held by one member with a lease that member renews,
/// and the assignment is computed over all shards each time it changes. 65,536 keeps the
/// computation in the milliseconds and a member's register of held leases small, while leaving
/// room for far more shards than members (a member holds one lease per shard it owns: spread
/// over 16 members, 65,536 shards are 4,096 leases each). The shard number in a shard lock's
/// name then has at most five digits.
pub const MAX_SHARDS: u32 = 65_536;

/// The largest [weight](crate::partition::PartitionSetBuilder::weight) of one member of a
/// partition set: 64.
///
/// Why: 64 lets one large node count for 64 small ones, and keeps the suffix that records the
/// weight in the member's slot (`#64`) short. Each member holds one slot of the set's member
/// group, so a set has at most [`MAX_SLOTS`] members, whatever their weights.
pub const MAX_PARTITION_WEIGHT: u32 = 64;

/// A value beyond one of the [limits](self).
///
/// Stores return it inside a permanent [`StoreError`](crate::store::StoreError) (see
/// [`StoreError::limit`](crate::store::StoreError::limit)); the options builders inside
/// [`OptionsError::Limit`](crate::error::OptionsError::Limit).
///
/// ```
/// use leasehold::{limits::{LimitError, MAX_SLOTS}};
/// use leasehold::store::{check_slots};
///
/// assert_eq!(check_slots(3), Ok(3));
/// let e = check_slots(MAX_SLOTS + 1).unwrap_err();
/// assert_eq!(e, LimitError::TooManySlots { slots: MAX_SLOTS + 1, max: MAX_SLOTS });
/// assert!(e.to_string().contains("at most 1024"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// More slots than [`MAX_SLOTS`].
    #[error("{slots} slots requested; at most {max} are allowed (leasehold::limits::MAX_SLOTS)")]
    TooManySlots {
        /// The requested slot count.
        slots: u32,
        /// [`MAX_SLOTS`].
        max: u32,
    },
    /// A duration longer than [`MAX_DURATION`].
    #[error(
        "{what} of {} is longer than the maximum of {} (leasehold::limits::MAX_DURATION)",
        Human(*value),
        Human(*max)
    )]
    DurationTooLong {
        /// What the duration was for (`"lease"`, `"wait"`, …).
        what: &'static str,
        /// The rejected duration.
        value: Duration,
        /// [`MAX_DURATION`].
        max: Duration,
    },
    /// A duration shorter than the minimum its use allows (a leadership poll interval below
    /// [`MIN_LEADERSHIP_POLL`]).
    #[error(
        "{what} of {} is shorter than the minimum of {} (leasehold::{constant})",
        Human(*value),
        Human(*min)
    )]
    DurationTooShort {
        /// What the duration was for.
        what: &'static str,
        /// The rejected duration.
        value: Duration,
        /// The minimum allowed.
        min: Duration,
        /// The name of the constant that sets the minimum (e.g. `"MIN_LEADERSHIP_POLL"`).
        constant: &'static str,
    },
    /// A node id longer than [`MAX_NODE_ID_LEN`] bytes.
    #[error(
        "node id is {len} bytes long; at most {max} bytes are allowed (leasehold::limits::MAX_NODE_ID_LEN; \
         it starts with {prefix:?})"
    )]
    NodeIdTooLong {
        /// Its length in bytes.
        len: usize,
        /// [`MAX_NODE_ID_LEN`].
        max: usize,
        /// Its first characters.
        prefix: String,
    },
}

/// Checks a slot count against [`MAX_SLOTS`] and returns it. Every store calls it first in
/// `try_acquire`, `state` and `force_release`, so all stores answer the same.
///
/// # Errors
///
/// [`LimitError::TooManySlots`] above [`MAX_SLOTS`].
///
/// ```
/// assert!(leasehold::store::check_slots(leasehold::limits::MAX_SLOTS).is_ok());
/// assert!(leasehold::store::check_slots(u32::MAX).is_err());
/// ```
pub fn check_slots(slots: u32) -> Result<u32, LimitError> {
    if slots > MAX_SLOTS {
        return Err(LimitError::TooManySlots {
            slots,
            max: MAX_SLOTS,
        });
    }
    Ok(slots)
}

/// Checks a duration against [`MAX_DURATION`] and returns it; `what` names it in the error.
///
/// # Errors
///
/// [`LimitError::DurationTooLong`] above [`MAX_DURATION`].
///
/// ```
/// use std::time::Duration;
/// use leasehold::limits::MAX_DURATION;
/// use leasehold::store::{check_duration};
///
/// assert_eq!(check_duration("lease", MAX_DURATION), Ok(MAX_DURATION));
/// let e = check_duration("lease", Duration::MAX).unwrap_err();
/// assert!(e.to_string().starts_with("lease of "), "{e}");
/// ```
pub fn check_duration(what: &'static str, value: Duration) -> Result<Duration, LimitError> {
    if value > MAX_DURATION {
        return Err(LimitError::DurationTooLong {
            what,
            value,
            max: MAX_DURATION,
        });
    }
    Ok(value)
}

/// Checks a node id's length against [`MAX_NODE_ID_LEN`] (the rest of the node-id rule, non-empty
/// and without control characters, is [`validate_node_id`](crate::options::validate_node_id)'s).
pub(crate) fn check_node_id_len(id: &str) -> Result<(), LimitError> {
    if id.len() > MAX_NODE_ID_LEN {
        return Err(LimitError::NodeIdTooLong {
            len: id.len(),
            max: MAX_NODE_ID_LEN,
            prefix: id.chars().take(32).collect(),
        });
    }
    Ok(())
}

/// `start + after`, saturating instead of overflowing: the one place deadlines are computed.
///
/// `after` counts as at most [`MAX_DURATION`] (a deadline further out than that is never
/// needed), and if the clock cannot represent even that, the step is halved until it can. So a
/// deadline is never more than 100 years away, converts to a wall-clock time without overflow,
/// and can never panic, whatever duration slipped past the checks.
///
/// ```
/// use std::time::Duration;
/// use leasehold::limits::MAX_DURATION;
/// use leasehold::store::{deadline_after};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let now = tokio::time::Instant::now();
/// assert_eq!(deadline_after(now, Duration::from_secs(1)), now + Duration::from_secs(1));
/// assert_eq!(deadline_after(now, Duration::MAX), now + MAX_DURATION); // no panic
/// # }
/// ```
pub fn deadline_after(start: Instant, after: Duration) -> Instant {
    let mut step = after.min(MAX_DURATION);
    loop {
        if let Some(at) = start.checked_add(step) {
            return at;
        }
        if step.is_zero() {
            return start;
        }
        step /= 2;
    }
}

/// Displays a duration compactly: whole days as `36500d`, else as `Debug` does (`1.5s`).
pub(crate) struct Human(pub(crate) Duration);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 && d.as_secs() >= 86_400 && d.as_secs().is_multiple_of(86_400) {
            write!(f, "{}d", d.as_secs() / 86_400)
        } else {
            write!(f, "{d:?}")
        }
    }
}

// Tuning constants of the background work and of what listeners and tenants get.

/// How long the stop paths of [`Schedule`](crate::Schedule), the blocking facade and the
/// integrations (`leasehold-axum`, the CLI) wait at most for an elector to
/// [settle](crate::Elector::settled): for the store to answer an acquisition that was in flight
/// when they stopped, and the release of a lease it granted late. A store that has not answered
/// by then is treated as unreachable; such a lease then ends at its expiry.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the core keeps trying, in the background, to free a lease it no longer wants while
/// the store fails transiently: a release that failed, a grant that came after its caller
/// stopped waiting, or an acquisition attempt answered with an error that the store may have
/// applied. Never past the lease's end. A store that has not answered by then is treated as
/// unreachable, and the lease ends at its expiry. The stop paths wait for this work (within
/// [`SETTLE_TIMEOUT`]), so an unreachable store delays them by at most
/// this much.
pub const LET_GO_PATIENCE: Duration = Duration::from_secs(3);

/// How many events a slow listener may fall behind before it misses some
/// (it then sees [`RecvError::Lagged`](tokio::sync::broadcast::error::RecvError::Lagged)).
pub const EVENT_BUFFER: usize = 256;

/// The shortest period length: 1 ms (period ids are counted in whole milliseconds of the store
/// clock).
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// The default namespace prefix.
pub const DEFAULT_TENANT_PREFIX: &str = "tenant";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_exact_bounds() {
        assert_eq!(check_slots(MAX_SLOTS), Ok(MAX_SLOTS));
        assert_eq!(
            check_slots(MAX_SLOTS + 1),
            Err(LimitError::TooManySlots {
                slots: MAX_SLOTS + 1,
                max: MAX_SLOTS
            })
        );
        assert_eq!(check_duration("wait", MAX_DURATION), Ok(MAX_DURATION));
        let over = MAX_DURATION + Duration::from_nanos(1);
        assert_eq!(
            check_duration("wait", over),
            Err(LimitError::DurationTooLong {
                what: "wait",
                value: over,
                max: MAX_DURATION
            })
        );
        assert!(check_node_id_len(&"n".repeat(MAX_NODE_ID_LEN)).is_ok());
        assert!(matches!(
            check_node_id_len(&"n".repeat(MAX_NODE_ID_LEN + 1)),
            Err(LimitError::NodeIdTooLong {
                len: 256,
                max: 255,
                ..
            })
        ));
    }

    #[test]
    fn messages_name_the_value_the_limit_and_the_constant() {
        let msg = check_duration("lease", Duration::from_secs(40_000 * 86_400))
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "lease of 40000d is longer than the maximum of 36500d (leasehold::limits::MAX_DURATION)"
        );
        let msg = check_slots(u32::MAX).unwrap_err().to_string();
        assert!(
            msg.contains("4294967295") && msg.contains("1024") && msg.contains("MAX_SLOTS"),
            "{msg}"
        );
    }

    /// The duration grammar's message for a text beyond the maximum states it as the limits
    /// print it (the rules crate writes it without `Human`).
    #[test]
    fn the_duration_texts_maximum_is_stated_as_the_limits_state_it() {
        let msg = crate::parse_duration("36501d")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(&format!("maximum of {} ", Human(MAX_DURATION))),
            "{msg}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_saturate() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, Duration::ZERO), now);
        assert_eq!(deadline_after(now, MAX_DURATION), now + MAX_DURATION);
        assert_eq!(deadline_after(now, Duration::MAX), now + MAX_DURATION);
    }

    /// A memory store that counts the renewal requests it gets.
    #[derive(Default)]
    struct Renewals {
        inner: crate::MemoryStore,
        renewals: std::sync::atomic::AtomicU64,
    }

    #[async_trait::async_trait]
    impl crate::store::StoreLayer for Renewals {
        fn inner(&self) -> &dyn crate::LeaseStore {
            &self.inner
        }

        async fn around<T: Send>(
            &self,
            call: crate::store::StoreCall,
            answer: crate::store::StoreAnswer<'_, T>,
        ) -> crate::error::StoreResult<T> {
            use crate::store::StoreCall::{Extend, ExtendMany};
            if matches!(call, Extend | ExtendMany) {
                self.renewals
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            answer.await
        }
    }

    /// Options built around the checks (as only this crate can) with `Duration::MAX` everywhere:
    /// every deadline saturates, nothing panics (acquire, wait, renew, extend, release), and no
    /// renewal comes round at once for ever.
    #[tokio::test(start_paused = true)]
    async fn durations_that_slip_past_the_checks_saturate() {
        use std::sync::Arc;

        use crate::{ElectionOptions, Elector};

        let options = ElectionOptions {
            wait: Duration::MAX,
            lease: Duration::MAX,
            min_lease: Duration::MAX,
            auto_extend: true,
            ..ElectionOptions::default()
        };
        let store = Arc::new(Renewals::default());
        let a = Elector::with_options(store.clone(), options.clone());
        let b = Elector::with_options(store.clone(), options);
        let Ok(crate::Outcome::Elected(guard)) = a.try_acquire("slipped").await else {
            panic!("a free lock must be granted");
        };
        let waiting = tokio::time::timeout(Duration::from_secs(10), b.try_acquire("slipped"));
        assert!(waiting.await.is_err(), "the contender keeps waiting");
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!guard.is_lost());
        let renewals = store.renewals.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            renewals <= 1,
            "a lease whose renewal period is past every deadline renews never, not at once: \
             {renewals} renewals in an hour"
        );
        assert!(guard.local_deadline() > Instant::now() + MAX_DURATION / 2);
        let released = guard.release().await;
        assert!(released.is_ok(), "{released:?}");
    }
}
