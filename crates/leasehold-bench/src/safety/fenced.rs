//! Fenced sinks under paused stale holders: the testkit's `stale_holder` scenario, for every sink
//! that applies to a backend, with a lock on that backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use leasehold::LeaseStore;
use leasehold_testkit::stale_holder::{self, FencedSink, MemorySink, StaleHolderConfig};
use serde::Serialize;
use tokio::time::Instant;

use crate::BoxError;
use crate::target::Target;

/// One sink's run on one backend.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FencedRow {
    pub(crate) backend: &'static str,
    pub(crate) sink: String,
    pub(crate) rounds: u64,
    /// Rounds whose stale lease ended by real expiry (the others by a forced release).
    pub(crate) expired: u64,
    pub(crate) stale_rejected: u64,
    /// Stale writes that won a race against the successor's write and were overwritten by it.
    pub(crate) stale_before_successor: u64,
    pub(crate) stale_accepted: u64,
    pub(crate) violations: usize,
    pub(crate) first_violations: Vec<String>,
    pub(crate) errors: usize,
    pub(crate) first_errors: Vec<String>,
    pub(crate) elapsed_s: f64,
}

impl FencedRow {
    /// No stale write accepted, no error, and stale writes were really tried and refused.
    pub(crate) fn passed(&self) -> bool {
        self.violations == 0
            && self.errors == 0
            && self.stale_accepted == 0
            && self.stale_rejected > 0
    }
}

/// The sinks that apply to `t`'s backend: the in-process reference register everywhere, and the
/// backend's own sinks.
async fn sinks(_t: &Target) -> Result<Vec<Box<dyn FencedSink>>, BoxError> {
    let sinks: Vec<Box<dyn FencedSink>> = vec![Box::new(MemorySink::new())];
    Ok(sinks)
}

/// Runs every sink of `t` for `rounds` rounds.
pub(crate) async fn run(t: &Target, rounds: usize) -> Result<Vec<FencedRow>, BoxError> {
    let clients: Vec<Arc<dyn LeaseStore>> = vec![t.client().await?, t.client().await?];
    let next = AtomicUsize::new(0);
    let factory =
        move || Arc::clone(&clients[next.fetch_add(1, Ordering::Relaxed) % clients.len()]);
    let config = StaleHolderConfig {
        rounds,
        // A hundredth of the rounds really wait out a short lease (etcd's shortest is 1 s).
        expire_every: 100,
        expiring_lease: t.backend.shortest_lease(),
        ..StaleHolderConfig::default()
    };
    let mut rows = Vec::new();
    for sink in sinks(t).await? {
        let started = Instant::now();
        let report = stale_holder::run(&factory, sink.as_ref(), &config).await;
        rows.push(FencedRow {
            backend: t.backend.name(),
            sink: report.sink.clone(),
            rounds: report.rounds,
            expired: report.expired,
            stale_rejected: report.stale_rejected,
            stale_before_successor: report.stale_before_successor,
            stale_accepted: report.stale_accepted,
            violations: report.violations.len(),
            first_violations: report.violations.iter().take(5).cloned().collect(),
            errors: report.errors.len(),
            first_errors: report.errors.iter().take(5).cloned().collect(),
            elapsed_s: started.elapsed().as_secs_f64(),
        });
    }
    Ok(rows)
}
