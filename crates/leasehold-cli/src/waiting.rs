//! `run --wait`: while waiting for the lock, saying on stderr who holds it and how much of the
//! wait is left, and (on a skip) who held it.

use std::convert::Infallible;
use std::time::Duration;

use leasehold::{Holder, LeaseStore, LockName, store::LockState};
use tokio::time::{Instant, sleep_until, timeout};

use crate::time_text::{human, printable, until};

/// The shortest `--progress-every`: each report asks the store who holds the lock.
pub(crate) const MIN_PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// How long one report (or the skip message) may spend asking the store who holds the lock.
pub(crate) const STATE_TIMEOUT: Duration = Duration::from_secs(2);

/// Tells (one line to `tell`, which `run` passes to [`say::err`]) once at the start of the wait,
/// then every `every`, that leasehold is waiting for `lock`: who holds it, when that holder's
/// lease expires, and how much of `wait` is left. A moment at which the lock is free or held only
/// by `own` (this node, just granted it) is not reported. Never returns: it is dropped when the
/// wait ends. Cancel-safe.
pub(crate) async fn report(
    store: &dyn LeaseStore,
    lock: &LockName,
    slots: u32,
    own: &str,
    wait: Duration,
    every: Duration,
    mut tell: impl FnMut(&str),
) -> Infallible {
    let start = Instant::now();
    let mut next = start;
    loop {
        sleep_until(next).await;
        next = leasehold::store::deadline_after(next, every);
        if start.elapsed() >= wait {
            // The wait is over: the run's own skip (or start) line follows, not "0ms left".
            return std::future::pending().await;
        }
        let held_by = match timeout(STATE_TIMEOUT, store.state(lock, slots)).await {
            Ok(Ok(state)) if !held_by_another(&state, own) => continue,
            Ok(Ok(state)) => describe(&state),
            Ok(Err(e)) => format!("held elsewhere (the store did not say by whom: {e})"),
            Err(_) => format!(
                "held elsewhere (the store did not say by whom within {})",
                human(STATE_TIMEOUT)
            ),
        };
        let left = wait.saturating_sub(start.elapsed());
        tell(&format!(
            "waiting for lock {lock}, {held_by}; {} of the {} wait left",
            human(left),
            human(wait)
        ));
    }
}

/// True if `state` leaves no slot free and some holder is not `own`.
fn held_by_another(state: &LockState, own: &str) -> bool {
    state.available() == 0 && state.holders.iter().any(|h| h.owner != own)
}

/// Who holds the lock, for the skip message: `held by OWNER (fence F, expires in T)` (or the
/// slots of a full group), or `held elsewhere` if the store does not say.
pub(crate) async fn who_holds(store: &dyn LeaseStore, lock: &LockName, slots: u32) -> String {
    match timeout(STATE_TIMEOUT, store.state(lock, slots)).await {
        Ok(Ok(state)) if !state.is_free() => describe(&state),
        _ => "held elsewhere".to_owned(),
    }
}

/// `held by OWNER (fence F, expires in T)`, or `full (N of M slots held: ...)` for a group.
fn describe(state: &LockState) -> String {
    let one = |h: &Holder| {
        format!(
            "{} (fence {}, expires in {})",
            printable(&h.owner),
            h.fence,
            human(until(h.expires_at))
        )
    };
    match state.holders.as_slice() {
        [h] if state.slots == 1 => format!("held by {}", one(h)),
        holders => format!(
            "full ({} of {} slots held: {})",
            holders.len(),
            state.slots,
            holders.iter().map(one).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::SystemTime;

    use leasehold::{Elector, MemoryStore};

    use super::*;

    fn state(holders: &[&str]) -> LockState {
        let now = SystemTime::now();
        LockState {
            lock: LockName::new("a").unwrap(),
            slots: 1,
            holders: holders
                .iter()
                .map(|owner| Holder {
                    slot: 0,
                    owner: (*owner).to_owned(),
                    fence: 7,
                    acquired_at: now,
                    expires_at: now + Duration::from_secs(60),
                })
                .collect(),
        }
    }

    #[test]
    fn only_another_holder_is_reported() {
        assert!(!held_by_another(&state(&[]), "me"));
        assert!(!held_by_another(&state(&["me"]), "me"), "just granted here");
        assert!(held_by_another(&state(&["web-1:42"]), "me"));
        let text = describe(&state(&["web-1:42"]));
        assert!(
            text.starts_with("held by web-1:42 (fence 7, expires in"),
            "{text}"
        );
    }

    /// The lines `report` says in `run_for_ms` of a `wait` while `web-1:42` holds lock `busy`.
    async fn reported(wait: Duration, every: Duration, run_for_ms: u64) -> Vec<String> {
        let store = Arc::new(MemoryStore::new());
        let lock = LockName::new("busy").unwrap();
        let other = Elector::with_options(
            store.clone(),
            leasehold::ElectionOptions::builder()
                .node_id("web-1:42")
                .build()
                .unwrap(),
        );
        let _held = other.try_acquire(&lock).await.unwrap().elected().unwrap();
        let mut lines = Vec::new();
        let reporting = report(&*store, &lock, 1, "me", wait, every, |line| {
            lines.push(line.to_owned())
        });
        let _ = timeout(Duration::from_millis(run_for_ms), reporting).await;
        lines
    }

    /// Paused time: the first line comes at once, the next after each `every`, each naming the
    /// holder and the time left of the wait.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn says_so_at_the_start_and_then_every_interval() {
        let lines = reported(Duration::from_secs(60), Duration::from_secs(5), 12_500).await;
        assert_eq!(lines.len(), 3, "at 0 s, 5 s and 10 s: {lines:?}");
        for (line, left) in lines.iter().zip(["1m00s", "55.0s", "50.0s"]) {
            assert!(
                line.starts_with("waiting for lock busy, held by web-1:42 (fence "),
                "{line}"
            );
            assert!(
                line.ends_with(&format!("; {left} of the 1m00s wait left")),
                "{line}"
            );
        }
    }

    /// A line falling at the end of the wait is not printed ("0ms left"): the run's skip line
    /// says it.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn nothing_is_said_once_the_wait_is_over() {
        let lines = reported(Duration::from_secs(3), Duration::from_secs(1), 10_000).await;
        assert_eq!(lines.len(), 3, "at 0, 1 and 2 s of a 3 s wait: {lines:?}");
        assert!(lines.iter().all(|l| !l.contains("0ms of")), "{lines:?}");
    }
}
