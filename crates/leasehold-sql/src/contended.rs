//! Whether this store's releases recently found waiters in hand-off's line (PostgreSQL). While
//! they do, a release looks through the line at once; otherwise it first tries the release of a
//! lock nobody waits for — as cheap as a release without hand-off — and only if that changed
//! nothing runs the second statement. Store-wide rather than per lock: contended locks are
//! often fresh names (a job per run), and the cost of a wrong guess is one statement either way.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How long after a release found waiters the store's releases still expect them.
pub(crate) const CONTENDED_MEMORY: Duration = Duration::from_secs(1);

/// When a release of this store last found someone in a line.
#[derive(Default)]
pub(crate) struct Contended(Mutex<Option<Instant>>);

impl Contended {
    fn last(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if a release found waiters within [`CONTENDED_MEMORY`].
    pub(crate) fn likely(&self) -> bool {
        self.last()
            .is_some_and(|at| at.elapsed() < CONTENDED_MEMORY)
    }

    /// What a release found: someone still in the line (or a keep), or nobody.
    pub(crate) fn note(&self, waiting: bool) {
        if waiting {
            *self.last() = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiters_are_expected_for_a_while_after_a_release_found_some() {
        let contended = Contended::default();
        assert!(!contended.likely());
        contended.note(false);
        assert!(!contended.likely());
        contended.note(true);
        assert!(contended.likely());
        tokio::time::sleep(CONTENDED_MEMORY).await;
        assert!(!contended.likely());
    }
}
