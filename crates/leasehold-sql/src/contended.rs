//! Whether this store recently met contention on a lock it hands off (PostgreSQL): an
//! acquisition refused, or a release that found waiters in hand-off's line. While it did, its
//! acquisitions and releases run the statements that keep the line at once; otherwise each first
//! tries the statement for a lock nobody waits for — as cheap as one without hand-off — and only
//! if that changed nothing runs the second. Store-wide rather than per lock: contended locks are
//! often fresh names (a job per run), and the cost of a wrong guess is one statement either way.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How long after meeting contention the store still expects it.
pub(crate) const CONTENDED_MEMORY: Duration = Duration::from_secs(1);

/// When this store last met contention.
#[derive(Default)]
pub(crate) struct Contended(Mutex<Option<Instant>>);

impl Contended {
    fn last(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if the store met contention within [`CONTENDED_MEMORY`].
    pub(crate) fn likely(&self) -> bool {
        self.last()
            .is_some_and(|at| at.elapsed() < CONTENDED_MEMORY)
    }

    /// The store met contention now.
    pub(crate) fn note(&self) {
        *self.last() = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn contention_is_expected_for_a_while_after_it_was_met() {
        let contended = Contended::default();
        assert!(!contended.likely());
        contended.note();
        assert!(contended.likely());
        tokio::time::sleep(CONTENDED_MEMORY).await;
        assert!(!contended.likely());
    }
}
