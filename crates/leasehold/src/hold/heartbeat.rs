//! The heartbeat: on a store that [renews in batches](crate::LeaseStore::renews_in_batches),
//! the renewals of every lease an elector holds fall on the same beats and go to the store as
//! one request per beat, however many leases there are.
//!
//! Each lease keeps its own watchdog (its deadline, its retries, its lost signal); the
//! heartbeat only decides *when* a watchdog renews and *how* the renewal travels. A beat falls
//! at `origin + k × period` for the renewal period in use, so every lease with that period
//! renews on the same instants; a lease acquired between two beats renews at the next one,
//! sooner than its period would have it, never later. The renewals that arrive for a beat are
//! gathered for [`GATHER`] and sent as one [`extend_many`](crate::LeaseStore::extend_many).
//!
//! On any other store the heartbeat changes nothing: each lease renews a period after its
//! last renewal, with its own [`extend`](crate::LeaseStore::extend), spread over the period.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::{StoreError, StoreResult};
use crate::limits::deadline_after;
use crate::store::batch::answer_each;
use crate::store::contract::LeaseStore;
use crate::store::lease::{Extension, Lease};

/// How long the first renewal of a beat waits for the others before the batch is sent: the
/// watchdogs of one beat wake on the same instant, so a short wait gathers them all. The local
/// deadline is unaffected (it counts from before the wait), so the wait only ever makes the
/// store's expiry later than the holder believes, never earlier.
const GATHER: Duration = Duration::from_millis(2);

/// One renewal waiting for its beat's request.
type Waiting = (Lease, Duration, oneshot::Sender<StoreResult<Extension>>);

/// An elector's renewals on one store.
pub(crate) struct Heartbeat {
    store: Arc<dyn LeaseStore>,
    /// Whether the store renews in batches (read once).
    batching: bool,
    /// The instant every beat grid counts from.
    origin: Instant,
    /// The renewals gathered for the next request, if one is being gathered.
    gathering: Arc<Mutex<Vec<Waiting>>>,
}

impl Heartbeat {
    /// The heartbeat of an elector on `store`.
    pub(crate) fn new(store: Arc<dyn LeaseStore>) -> Self {
        Self {
            batching: store.renews_in_batches(),
            store,
            origin: Instant::now(),
            gathering: Arc::default(),
        }
    }

    /// When a lease renewed every `period`, last renewed at `now`, renews next: a period
    /// later, or on a batching store the last beat at or before that (always after `now`).
    pub(crate) fn next_renewal(&self, now: Instant, period: Duration) -> Instant {
        let due = deadline_after(now, period);
        if !self.batching || period.is_zero() {
            return due;
        }
        let since = due.saturating_duration_since(self.origin).as_nanos();
        let past_beat = since % period.as_nanos();
        // `past_beat < period`, which is a `Duration`: it fits in a u64 of nanoseconds.
        let beat = due - Duration::from_nanos(u64::try_from(past_beat).unwrap_or(0));
        // A period longer than a deadline can be (`due` saturated short of it) puts the beat at
        // or before `now`: renewing then would renew again at once, for ever. Such a lease
        // renews at the saturated deadline, that is never.
        if beat > now { beat } else { due }
    }

    /// Extends `lease` to end `ttl` from now: with the store's own `extend` on a store without
    /// batches, else in the one request of this beat.
    ///
    /// # Errors
    ///
    /// The store's answer for this lease, as [`LeaseStore::extend`] gives it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops only this lease's wait for its answer: the request, sent or
    /// not, goes on for the other leases of the beat.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        if !self.batching {
            return self.store.extend(lease, ttl).await;
        }
        let (answer, wait) = oneshot::channel();
        let first = {
            let mut gathering = self
                .gathering
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            gathering.push((lease.clone(), ttl, answer));
            gathering.len() == 1
        };
        if first {
            tokio::spawn(send_batch(
                Arc::clone(&self.store),
                Arc::clone(&self.gathering),
            ));
        }
        wait.await.unwrap_or_else(|_| {
            Err(StoreError::transient(
                "the renewal batch ended without an answer for this lease",
            ))
        })
    }
}

/// Waits [`GATHER`], then sends every renewal gathered by then as one `extend_many` and hands
/// each its answer.
async fn send_batch(store: Arc<dyn LeaseStore>, gathering: Arc<Mutex<Vec<Waiting>>>) {
    tokio::time::sleep(GATHER).await;
    let batch = std::mem::take(&mut *gathering.lock().unwrap_or_else(PoisonError::into_inner));
    let (leases, answers): (Vec<_>, Vec<_>) = batch
        .into_iter()
        .map(|(lease, ttl, answer)| ((lease, ttl), answer))
        .unzip();
    let asked = leases.len();
    let mut results = store.extend_many(&leases).await;
    if results.len() != asked {
        let answered = results.len();
        results = answer_each(
            Err(StoreError::permanent(format!(
                "the store answered {answered} of the {asked} renewals it was sent"
            ))),
            asked,
        );
    }
    for (answer, result) in answers.into_iter().zip(results) {
        // A watchdog that stopped waiting has nothing to hear.
        let _ = answer.send(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[tokio::test(start_paused = true)]
    async fn beats_fall_on_one_grid_and_never_after_the_period() {
        let beat = Heartbeat::new(Arc::new(MemoryStore::new()));
        let period = Duration::from_secs(1);
        let origin = beat.origin;
        // Renewed on a beat: the next beat, a full period later.
        assert_eq!(beat.next_renewal(origin, period), origin + period);
        // Renewed between beats: the next beat, sooner than a period.
        let between = origin + Duration::from_millis(1_300);
        assert_eq!(beat.next_renewal(between, period), origin + 2 * period);
        // Always after now, never after now + period.
        for ms in [1, 250, 999, 1_000, 1_001, 7_777] {
            let now = origin + Duration::from_millis(ms);
            let next = beat.next_renewal(now, period);
            assert!(next > now && next <= now + period, "{ms} ms: {next:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_period_past_every_deadline_renews_at_the_saturated_one_not_at_once() {
        let beat = Heartbeat::new(Arc::new(MemoryStore::new()));
        let now = beat.origin + Duration::from_millis(1_300);
        for period in [
            Duration::MAX / 3,
            Duration::MAX,
            crate::limits::MAX_DURATION * 2,
        ] {
            let next = beat.next_renewal(now, period);
            assert!(
                next > now + crate::limits::MAX_DURATION / 2,
                "{period:?}: next renewal {:?} after now",
                next - now
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_without_batches_renews_a_period_after_the_last_renewal() {
        let beat = Heartbeat {
            batching: false,
            ..Heartbeat::new(Arc::new(MemoryStore::new()))
        };
        let now = beat.origin + Duration::from_millis(1_300);
        assert_eq!(
            beat.next_renewal(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_beat_sends_one_request_with_an_answer_for_each_lease() {
        use crate::store::{AcquireRequest, Acquisition};
        let store = Arc::new(MemoryStore::new());
        let beat = Arc::new(Heartbeat::new(store.clone()));
        let ttl = Duration::from_secs(3);
        let mut leases = Vec::new();
        for name in ["a", "b", "c"] {
            let req = AcquireRequest::new(
                crate::LockName::new(name).unwrap(),
                1,
                "node-a",
                crate::store::Token::random(),
                ttl,
            );
            let Ok(Acquisition::Elected(lease)) = store.try_acquire(&req).await else {
                panic!("{name} was not granted");
            };
            leases.push(lease);
        }
        // `c` is released: its renewal alone is refused.
        store.release(&leases[2], Duration::ZERO).await.unwrap();
        let answers = futures::future::join_all(leases.iter().map(|lease| {
            let beat = Arc::clone(&beat);
            async move { beat.extend(lease, ttl).await }
        }))
        .await;
        assert!(matches!(answers[0], Ok(Extension::Extended { .. })));
        assert!(matches!(answers[1], Ok(Extension::Extended { .. })));
        assert!(matches!(answers[2], Ok(Extension::NotHeld)));
        assert!(beat.gathering.lock().unwrap().is_empty());
    }
}
