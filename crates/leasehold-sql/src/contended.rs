//! What this store recently met on the locks it hands off (PostgreSQL): an acquisition refused,
//! a release that found waiters in hand-off's line. After either, for [`CONTENDED_MEMORY`], its
//! acquisitions (respectively releases) run the statement that keeps the line at once;
//! otherwise each first tries the statement for a lock nobody waits for — as cheap as one
//! without hand-off — and runs the second only if that changed nothing. Kept apart because they
//! differ: the tasks of one process queued on one lock are refused (their own elector holds it)
//! and are never recorded, so their releases find nobody. Store-wide rather than per lock:
//! contended locks are often fresh names (a job per run), and a wrong guess costs one statement.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How long after meeting contention the store still expects it.
pub(crate) const CONTENDED_MEMORY: Duration = Duration::from_secs(1);

/// When this store's acquisitions were last refused, and when its releases last found waiters.
#[derive(Default)]
pub(crate) struct Contended {
    refused: Mutex<Option<Instant>>,
    waiters: Mutex<Option<Instant>>,
}

fn recent(at: &Mutex<Option<Instant>>) -> bool {
    at.lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some_and(|at| at.elapsed() < CONTENDED_MEMORY)
}

fn now(at: &Mutex<Option<Instant>>) {
    *at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
}

impl Contended {
    /// True if an acquisition was refused within [`CONTENDED_MEMORY`].
    pub(crate) fn refusal_likely(&self) -> bool {
        recent(&self.refused)
    }

    /// True if a release found waiters within [`CONTENDED_MEMORY`].
    pub(crate) fn waiters_likely(&self) -> bool {
        recent(&self.waiters)
    }

    /// An acquisition was refused now.
    pub(crate) fn refused(&self) {
        now(&self.refused);
    }

    /// A release found waiters now.
    pub(crate) fn found_waiters(&self) {
        now(&self.waiters);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn contention_is_expected_for_a_while_after_it_was_met() {
        let contended = Contended::default();
        assert!(!contended.refusal_likely() && !contended.waiters_likely());
        contended.refused();
        assert!(contended.refusal_likely() && !contended.waiters_likely());
        contended.found_waiters();
        assert!(contended.waiters_likely());
        tokio::time::sleep(CONTENDED_MEMORY).await;
        assert!(!contended.refusal_likely() && !contended.waiters_likely());
    }
}
