//! One contender of a verify run: take the lock, sometimes freeze past the lease, write to the
//! register with the fence, release; again until the run's deadline.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{CancellationToken, Elector, Error, LeaderGuard, LockName, store::Release};
use rand::Rng;
use tokio::time::{Instant, sleep, sleep_until};

use super::history::{History, Op};
use super::register::Register;
use crate::exit::Failure;
use crate::say;

/// What every contender does.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) lock: LockName,
    pub(crate) lease: Duration,
    /// Percent of runs in which the holder freezes for 1.5–3 leases before writing.
    pub(crate) pause_percent: u8,
    pub(crate) deadline: Instant,
}

/// The shared parts of a run.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) plan: Arc<Plan>,
    pub(crate) register: Arc<Register>,
    pub(crate) history: Arc<History>,
    /// Cancelled when a contender meets a permanent error: the run cannot say anything then.
    pub(crate) stop: CancellationToken,
    /// That error (the first one).
    pub(crate) fatal: Arc<std::sync::Mutex<Option<Failure>>>,
}

impl Run {
    /// Stops the run for a permanent error (the first one is kept).
    fn fail(&self, e: Error) {
        let mut fatal = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
        fatal.get_or_insert_with(|| Failure::from(e));
        self.stop.cancel();
    }

    /// The permanent error that stopped the run, if any.
    pub(crate) fn take_fatal(&self) -> Option<Failure> {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Whether an error may pass (the store was unreachable for a moment) rather than stop the run.
fn is_transient(e: &Error) -> bool {
    matches!(e, Error::Store { source, .. } if source.is_transient())
}

/// Contends until the deadline.
pub(crate) async fn contend(id: usize, elector: Elector, run: Run) {
    let mut writes = 0u64;
    while Instant::now() < run.plan.deadline && !run.stop.is_cancelled() {
        let asked = Instant::now();
        match elector.try_acquire(&run.plan.lock).await {
            Ok(leasehold::Outcome::Elected(guard)) => {
                let h = &run.history;
                h.record(Op::Granted {
                    contender: id,
                    asked_ms: h.ms(asked),
                    at_ms: h.now_ms(),
                    fence: guard.fence(),
                    valid_until_ms: h.ms(guard.local_deadline()),
                });
                writes += 1;
                hold(id, guard, &run, (id as u64) << 40 | writes).await;
            }
            Ok(_) => run.history.record(Op::Skipped {
                contender: id,
                at_ms: run.history.now_ms(),
            }),
            Err(e) => {
                run.history.record(Op::StoreError {
                    contender: id,
                    at_ms: run.history.now_ms(),
                    error: say::scrubbed(&e.to_string()),
                });
                if !is_transient(&e) {
                    run.fail(e);
                    break;
                }
                sleep(Duration::from_millis(50)).await;
            }
        }
        // Up to a tenth of the lease between attempts: busy enough to take over at once, light
        // enough for a production store (5 contenders and a 1 s lease: about 100 requests/s).
        // Never past the run's end nor its stop, whatever the lease.
        let pause = run.plan.lease.mul_f64(rand::rng().random_range(0.0..0.1));
        tokio::select! {
            () = sleep_until(leasehold::store::deadline_after(Instant::now(), pause).min(run.plan.deadline)) => {}
            () = run.stop.cancelled() => {}
        }
    }
    elector.settled().await;
}

/// Holds the lease: works (or freezes), writes, releases.
async fn hold(id: usize, guard: LeaderGuard, run: &Run, value: u64) {
    let plan = &run.plan;
    let (pause, work) = {
        let mut rng = rand::rng();
        let pause = rng.random_range(0..100u8) < plan.pause_percent;
        (
            pause.then(|| plan.lease.mul_f64(rng.random_range(1.5..3.0))),
            plan.lease.mul_f64(rng.random_range(0.0..0.25)),
        )
    };
    match pause {
        Some(pause) => {
            run.history.record(Op::Paused {
                contender: id,
                at_ms: run.history.now_ms(),
                fence: guard.fence(),
                pause_ms: pause.as_secs_f64() * 1e3,
            });
            // Frozen: nothing of this contender runs, and it does not look at its lease after.
            sleep_until((Instant::now() + pause).min(plan.deadline)).await;
        }
        None => sleep_until((Instant::now() + work).min(plan.deadline)).await,
    }
    run.register.write(&run.history, id, &guard, value);
    let fence = guard.fence();
    let at_ms = run.history.now_ms();
    let outcome = match guard.release().await {
        Ok(Release::Released) => "released".to_owned(),
        Ok(Release::NotHeld) => "not held".to_owned(),
        Err(e) => say::scrubbed(&e.to_string()),
    };
    run.history.record(Op::Released {
        contender: id,
        at_ms,
        fence,
        outcome,
    });
}
