//! Per-job metrics of [`LeaderJobs`](crate::LeaderJobs), through the `metrics` facade.
//!
//! Install any `metrics` recorder (for example `metrics-exporter-prometheus`) before starting
//! the jobs. Every metric carries a `job` label (the job's name as configured, a fixed set per
//! application); `reason` and `outcome` take the few values listed. The core's per-lock metrics
//! (`leasehold_attempts_total`, … see [`leasehold::metrics`]) are recorded as well.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `leasehold_job_attempts_total` | counter | `job` | scheduled ticks that tried the lock |
//! | `leasehold_job_runs_total` | counter | `job` | ticks where this node was elected and ran the action |
//! | `leasehold_job_skips_total` | counter | `job`, `reason` = `contention` \| `store_error` | ticks that did not run |
//! | `leasehold_job_failures_total` | counter | `job`, `reason` = `error` \| `panic` \| `cancelled` | actions that failed, panicked, or were cancelled at shutdown |
//! | `leasehold_job_duration_seconds` | histogram | `job` | how long each action ran |
//! | `leasehold_job_shutdowns_total` | counter | `job`, `outcome` = `clean` \| `cancelled` | jobs stopped at shutdown (`cancelled`: the grace period ran out) |
//! | `leasehold_job_shutdown_seconds` | histogram | `job` | time from the shutdown signal to the job having stopped and released |
//!
//! ```
//! assert_eq!(leasehold_axum::job_metrics::RUNS, "leasehold_job_runs_total");
//! ```

use leasehold::{JobEvent, JobOutcome};
use metrics::{counter, histogram};

/// `leasehold_job_attempts_total`
pub const ATTEMPTS: &str = "leasehold_job_attempts_total";
/// `leasehold_job_runs_total`
pub const RUNS: &str = "leasehold_job_runs_total";
/// `leasehold_job_skips_total`
pub const SKIPS: &str = "leasehold_job_skips_total";
/// `leasehold_job_failures_total`
pub const FAILURES: &str = "leasehold_job_failures_total";
/// `leasehold_job_duration_seconds`
pub const DURATION: &str = "leasehold_job_duration_seconds";
/// `leasehold_job_shutdowns_total`
pub const SHUTDOWNS: &str = "leasehold_job_shutdowns_total";
/// `leasehold_job_shutdown_seconds`
pub const SHUTDOWN_SECONDS: &str = "leasehold_job_shutdown_seconds";

/// Records one schedule event of `job` (the hook installed on the core schedule).
pub(crate) fn record(job: &str, event: &JobEvent) {
    let job = job.to_owned();
    match *event {
        JobEvent::Attempt => counter!(ATTEMPTS, "job" => job).increment(1),
        JobEvent::Elected => counter!(RUNS, "job" => job).increment(1),
        JobEvent::Skipped => counter!(SKIPS, "job" => job, "reason" => "contention").increment(1),
        JobEvent::StoreError => {
            counter!(SKIPS, "job" => job, "reason" => "store_error").increment(1);
        }
        JobEvent::Finished { took, outcome } => {
            histogram!(DURATION, "job" => job.clone()).record(took.as_secs_f64());
            let reason = match outcome {
                JobOutcome::Failed => "error",
                JobOutcome::Panicked => "panic",
                JobOutcome::Cancelled => "cancelled",
                _ => return,
            };
            counter!(FAILURES, "job" => job, "reason" => reason).increment(1);
        }
        JobEvent::Stopped {
            took,
            cancelled_action,
        } => {
            let outcome = if cancelled_action {
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
