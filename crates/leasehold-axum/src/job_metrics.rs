//! Per-job metrics of [`LeaderJobs`](crate::LeaderJobs), through the `metrics` facade.
//!
//! Install any `metrics` recorder (for example `metrics-exporter-prometheus`) before starting
//! the jobs. Every metric carries a `job` label (the job's name as configured, a fixed set per
//! application); `reason` and `outcome` take the few values listed. The core's per-lock metrics
//! (`leasehold_attempts_total`, … see [`leasehold::metrics`]) are recorded as well.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `leasehold_job_attempts_total` | counter | `job` | attempts at the job's lock (about one per period per node) |
//! | `leasehold_job_runs_total` | counter | `job` | attempts where this node was elected and ran the action |
//! | `leasehold_job_skips_total` | counter | `job`, `reason` = `already_ran` \| `contention` \| `store_error` | attempts that did not run: the period already ran (on another node), another node held the lock, or the store failed |
//! | `leasehold_job_period` | gauge | `job` | the last period this node ran the job for (the period id on the store's clock; see [`leasehold::Period`]) |
//! | `leasehold_job_failures_total` | counter | `job`, `reason` = `error` \| `panic` \| `cancelled` \| `lost` | actions that failed, panicked, were cancelled at shutdown, or lost their lease while running |
//! | `leasehold_job_duration_seconds` | histogram | `job` | how long each action ran |
//! | `leasehold_job_shutdowns_total` | counter | `job`, `outcome` = `clean` \| `cancelled` | jobs stopped at shutdown (`cancelled`: the grace period ran out) |
//! | `leasehold_job_shutdown_seconds` | histogram | `job` | time from the shutdown signal to the job having stopped and released |
//!
//! They are families of the core's registry ([`leasehold::metrics::FAMILIES`], source
//! [`Jobs`](leasehold::metrics::Source::Jobs)): their help texts are described to the recorder
//! when the jobs start, and `PrometheusMetrics` (feature `prometheus`) gives the two
//! histograms their buckets. The attempts and runs counters of a job appear at its first
//! attempt (runs at 0 until it runs here); the other series at their first event.
//!
//! ```
//! assert_eq!(leasehold_axum::job_metrics::RUNS, "leasehold_job_runs_total");
//! ```

use leasehold::schedule::{JobEvent, JobOutcome};
use metrics::{counter, gauge, histogram};

// The names come from the core's registry of families ([`leasehold::metrics::FAMILIES`]), with
// their help texts and buckets.

/// `leasehold_job_attempts_total`
pub const ATTEMPTS: &str = leasehold::metrics::JOB_ATTEMPTS;
/// `leasehold_job_runs_total`
pub const RUNS: &str = leasehold::metrics::JOB_RUNS;
/// `leasehold_job_skips_total`
pub const SKIPS: &str = leasehold::metrics::JOB_SKIPS;
/// `leasehold_job_period`
pub const PERIOD: &str = leasehold::metrics::JOB_PERIOD;
/// `leasehold_job_failures_total`
pub const FAILURES: &str = leasehold::metrics::JOB_FAILURES;
/// `leasehold_job_duration_seconds`
pub const DURATION: &str = leasehold::metrics::JOB_DURATION_SECONDS;
/// `leasehold_job_shutdowns_total`
pub const SHUTDOWNS: &str = leasehold::metrics::JOB_SHUTDOWNS;
/// `leasehold_job_shutdown_seconds`
pub const SHUTDOWN_SECONDS: &str = leasehold::metrics::JOB_SHUTDOWN_SECONDS;

/// Records one schedule event of `job` (the hook installed on the core schedule).
pub(crate) fn record(job: &str, event: &JobEvent) {
    let job = job.to_owned();
    match event {
        JobEvent::Attempt { .. } => {
            counter!(ATTEMPTS, "job" => job.clone()).increment(1);
            // The runs counter exists from the first attempt, at 0 until a run: a node that
            // never runs the job says so, and `increase()` sees the first run.
            counter!(RUNS, "job" => job).increment(0);
        }
        JobEvent::Elected { period } => {
            if let Some(period) = period {
                // Period ids of realistic periods are far below 2^53, exact in an f64.
                #[allow(clippy::cast_precision_loss)]
                gauge!(PERIOD, "job" => job.clone()).set(*period as f64);
            }
            counter!(RUNS, "job" => job).increment(1);
        }
        JobEvent::Skipped => counter!(SKIPS, "job" => job, "reason" => "contention").increment(1),
        JobEvent::AlreadyRan(_) => {
            counter!(SKIPS, "job" => job, "reason" => "already_ran").increment(1);
        }
        JobEvent::StoreError => {
            counter!(SKIPS, "job" => job, "reason" => "store_error").increment(1);
        }
        JobEvent::Finished { took, outcome, .. } => {
            histogram!(DURATION, "job" => job.clone()).record(took.as_secs_f64());
            let reason = match outcome {
                JobOutcome::Failed => "error",
                JobOutcome::Panicked => "panic",
                JobOutcome::Cancelled => "cancelled",
                JobOutcome::Lost => "lost",
                _ => return,
            };
            counter!(FAILURES, "job" => job, "reason" => reason).increment(1);
        }
        JobEvent::Stopped {
            took,
            cancelled_action,
        } => {
            let outcome = if *cancelled_action {
                "cancelled"
            } else {
                "clean"
            };
            histogram!(SHUTDOWN_SECONDS, "job" => job.clone()).record(took.as_secs_f64());
            counter!(SHUTDOWNS, "job" => job, "outcome" => outcome).increment(1);
        }
        _ => {}
    }
}
