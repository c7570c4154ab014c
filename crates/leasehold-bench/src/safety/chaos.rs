//! The fault driver of a safety run: while the contenders run, it keeps injecting connection
//! faults into random contenders' stores (through the testkit's `FaultyStore`) and, for network
//! backends, cuts their TCP connections (through the testkit's `FaultProxy`).

use std::time::Duration;

use leasehold_testkit::fault::{Fault, FaultControl, Op};
use leasehold_testkit::proxy::FaultProxy;
use rand::Rng;
use tokio::time::sleep;

/// What the driver did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Injected {
    /// Connection cuts through the proxy.
    pub(crate) cuts: u64,
}

/// Injects faults until dropped (it never returns). `lease` sizes the slow answers, which are
/// made longer than the lease so the holder gets an already expired lease.
pub(crate) async fn drive(
    controls: &[FaultControl],
    proxy: Option<&FaultProxy>,
    lease: Duration,
    injected: &std::cell::Cell<Injected>,
) {
    if controls.is_empty() {
        return std::future::pending().await;
    }
    loop {
        let (pause, pick, what, times) = {
            let mut rng = rand::rng();
            (
                Duration::from_millis(rng.random_range(20..80)),
                rng.random_range(0..controls.len()),
                rng.random_range(0..10u8),
                rng.random_range(1..=3u64),
            )
        };
        sleep(pause).await;
        let c = &controls[pick];
        match what {
            // A refused or timed-out request: it never reaches the store.
            0..=3 => {
                let op = [Op::TryAcquire, Op::Extend, Op::Release][usize::from(what % 3)];
                c.fail(op, Fault::transient().times(times));
            }
            // The store applied the request but the answer was lost: a granted lease, or a
            // release, the caller does not know about. The lease is left to expire.
            4 => c.fail(Op::TryAcquire, Fault::transient().times(1).after_apply()),
            5 => c.fail(Op::Release, Fault::transient().times(1).after_apply()),
            // A reply slower than the lease: the lease has expired by the time it arrives.
            6 => {
                c.delay_answer(Op::TryAcquire, lease + Duration::from_millis(50));
                sleep(Duration::from_millis(30)).await;
                c.delay_answer(Op::TryAcquire, Duration::ZERO);
            }
            // Every connection through the proxy is closed for a moment.
            _ => {
                if let Some(proxy) = proxy {
                    proxy.cut().await;
                    sleep(Duration::from_millis(30)).await;
                    proxy.heal().await;
                    let mut done = injected.get();
                    done.cuts += 1;
                    injected.set(done);
                }
            }
        }
    }
}
