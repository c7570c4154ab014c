//! Safety runs: the testkit's fenced-resource checker against each backend, without and with
//! injected connection faults; then the store's own state of the lock, which must be free.

mod chaos;
pub(crate) mod fenced;
mod observed;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, LockName};
use leasehold_testkit::fault::{FaultControl, FaultyStore, Op};
use leasehold_testkit::proxy::{FaultProxy, loopback_authority, via_proxy};
use leasehold_testkit::safety::{self, SafetyConfig};
use serde::Serialize;
use tokio::time::Instant;

use crate::BoxError;
use crate::target::Target;
use chaos::Injected;
use observed::{Seen, SeenLocks};

/// Contenders of every safety run.
const CONTENDERS: usize = 8;

/// What one safety run saw.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SafetyRow {
    pub(crate) backend: &'static str,
    /// "none", "fault store" or "fault store + TCP proxy".
    pub(crate) faults: &'static str,
    pub(crate) contenders: usize,
    pub(crate) rounds: usize,
    pub(crate) lease_ms: u64,
    pub(crate) runs: u64,
    pub(crate) skips: u64,
    /// Rounds that ended in a store error (the injected faults, surfacing).
    pub(crate) errors: u64,
    /// Runs whose lease was lost by the end of the action.
    pub(crate) lost: u64,
    /// Faults the fault store injected.
    pub(crate) injected: u64,
    /// Connection cuts through the proxy.
    pub(crate) proxy_cuts: u64,
    pub(crate) accepted_writes: u64,
    /// Stale writes the fenced resource rejected (its job, not a violation).
    pub(crate) rejected_writes: u64,
    pub(crate) max_inside: usize,
    pub(crate) violations: usize,
    pub(crate) first_violations: Vec<String>,
    /// Holders of the lock right after the run (leases stranded by lost answers, left to expire).
    pub(crate) held_at_end: u32,
    /// Time until a fresh client held the lock after the run.
    pub(crate) recovered_ms: Option<f64>,
    /// Holders left once the fresh client had taken and released the lock (must be 0).
    pub(crate) leaked: u32,
    pub(crate) elapsed_s: f64,
    pub(crate) first_errors: Vec<String>,
}

impl SafetyRow {
    /// No violation, nothing leaked, the lock was usable again, and something ran.
    pub(crate) fn passed(&self) -> bool {
        self.violations == 0 && self.leaked == 0 && self.recovered_ms.is_some() && self.runs > 0
    }
}

/// One safety run on `t`: `rounds` rounds per contender, with injected faults or without.
pub(crate) async fn run(t: &Target, rounds: usize, faults: bool) -> Result<SafetyRow, BoxError> {
    let lease = if faults {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(2)
    };
    let config = SafetyConfig {
        contenders: CONTENDERS,
        rounds,
        max_action: Duration::from_millis(2),
        lease,
        // Short, so a run of 8 × 2,000 rounds stays within seconds even when most rounds skip.
        wait: Duration::from_millis(5),
        ..SafetyConfig::default()
    };
    let proxy = match (
        faults && t.backend.is_networked(),
        loopback_authority(&t.url),
    ) {
        (true, Some((_, addr))) => Some(FaultProxy::start(addr).await?),
        _ => None,
    };
    let url = proxy
        .as_ref()
        .and_then(|p| via_proxy(&t.url, p.addr()))
        .unwrap_or_else(|| t.url.clone());
    let seen: Seen = Arc::new(Mutex::new(BTreeSet::new()));
    let mut stores = Vec::with_capacity(CONTENDERS);
    let mut controls: Vec<FaultControl> = Vec::new();
    for _ in 0..CONTENDERS {
        let client = t.client_at(&url).await?;
        let client: Arc<dyn LeaseStore> = if faults {
            let (store, control) = FaultyStore::new(client);
            controls.push(control);
            store
        } else {
            client
        };
        stores.push(SeenLocks::wrap(client, &seen));
    }
    let next = AtomicUsize::new(0);
    let factory = move || Arc::clone(&stores[next.fetch_add(1, Ordering::Relaxed) % stores.len()]);
    let injected = Cell::new(Injected::default());
    let started = Instant::now();
    let report = tokio::select! {
        report = safety::check(&factory, &config) => report?,
        () = chaos::drive(&controls, proxy.as_ref(), lease, &injected) => {
            return Err("the fault driver stopped".into());
        }
    };
    for c in &controls {
        c.heal_all();
    }
    if let Some(p) = &proxy {
        p.heal().await;
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let lock = seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .next()
        .cloned()
        .ok_or("the safety run never tried to acquire")?;
    let held_at_end = t.store.state(&lock, 1).await?.active();
    let recovered_ms = recover(t, &lock, lease).await?;
    let leaked = t.store.state(&lock, 1).await?.active();
    Ok(SafetyRow {
        backend: t.backend.name(),
        faults: match (faults, proxy.is_some()) {
            (false, _) => "none",
            (true, false) => "fault store",
            (true, true) => "fault store + TCP proxy",
        },
        contenders: CONTENDERS,
        rounds,
        lease_ms: u64::try_from(lease.as_millis()).unwrap_or(u64::MAX),
        runs: report.runs,
        skips: report.skips,
        errors: report.errors,
        lost: report.lost,
        injected: controls
            .iter()
            .map(|c| Op::ALL.iter().map(|op| c.injected(*op)).sum::<u64>())
            .sum(),
        proxy_cuts: injected.get().cuts,
        accepted_writes: report.accepted_writes,
        rejected_writes: report.rejected_writes,
        max_inside: report.max_inside,
        violations: report.violations.len(),
        first_violations: report
            .violations
            .iter()
            .take(5)
            .map(ToString::to_string)
            .collect(),
        held_at_end,
        recovered_ms,
        leaked,
        elapsed_s,
        first_errors: report.first_errors,
    })
}

/// How long a fresh client takes to hold `lock` after the run (a stranded lease must expire
/// within `lease`); `None` if it never did.
async fn recover(t: &Target, lock: &LockName, lease: Duration) -> Result<Option<f64>, BoxError> {
    let options = ElectionOptions::builder()
        .wait(lease + Duration::from_secs(5))
        .lease(Duration::from_secs(5))
        .build()?;
    let elector = Elector::with_options(t.store.clone(), options);
    let started = Instant::now();
    let Some(guard) = elector.try_acquire(lock).await?.elected() else {
        return Ok(None);
    };
    let took = started.elapsed().as_secs_f64() * 1000.0;
    guard.release().await?;
    Ok(Some(took))
}
