//! The list of conformance tests and the `run_all` entry point.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::factory::StoreFactory;
use crate::safety::check::panic_message;

type TestFn = for<'a> fn(&'a dyn StoreFactory) -> BoxFuture<'a, ()>;

/// One named conformance test.
#[derive(Clone, Copy)]
pub struct ConformanceTest {
    name: &'static str,
    run: TestFn,
}

impl fmt::Debug for ConformanceTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConformanceTest").field(&self.name).finish()
    }
}

impl ConformanceTest {
    /// The test's name (its function name in [`conformance`](super)).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Runs the test; it panics if the store breaks the contract.
    ///
    /// # Cancel safety
    ///
    /// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
    /// to the call, so later tests are not affected.
    pub async fn run(&self, factory: &dyn StoreFactory) {
        (self.run)(factory).await;
    }
}

macro_rules! suite {
    ($($test:ident),* $(,)?) => {
        &[$(ConformanceTest {
            name: stringify!($test),
            run: |factory| Box::pin(super::$test(factory)),
        }),*]
    };
}

static TESTS: &[ConformanceTest] = suite![
    elected_run_executes_once,
    sequential_acquisitions_work,
    contention_skips_after_wait,
    independent_names_do_not_block,
    mutual_exclusion,
    group_mutual_exclusion,
    action_error_releases,
    action_panic_releases,
    dropped_future_releases,
    abandoned_wait_leaves_no_lock,
    lost_grant_answer_leaves_no_lock,
    expiry_allows_takeover,
    stale_owner_is_rejected,
    fences_increase,
    group_fences_increase_per_slot,
    min_lease_holds_lock,
    auto_extend_keeps_lease,
    manual_extend_keeps_lease,
    state_snapshots,
    store_state_many_answers_each_lock,
    group_slot_accounting,
    group_expired_slots_reclaimed,
    tenant_scoping,
    force_release_makes_the_holder_lost,
    store_acquire_is_idempotent,
    store_operations_check_the_token,
    store_release_linger_never_lengthens,
    store_extend_after_expiry_is_not_held,
    store_extend_many_answers_each_lease,
    many_leases_renew_together_and_lose_only_the_one_taken,
    restart_with_the_same_node_id_waits_out_old_leases,
    a_session_lost_frees_every_lease_no_earlier_than_its_lease,
    store_group_grants_lowest_free_slot,
    store_force_release_frees_every_slot,
    store_hands_off_to_the_longest_waiter,
    store_rejects_more_than_max_slots,
    store_records_the_longest_node_id,
    names_with_dots_and_slashes_are_independent,
    store_lists_locks_with_holders,
    period_same_period_is_refused,
    period_record_survives_expiry,
    period_earlier_refused_next_granted,
    period_concurrent_claims_grant_once,
    period_already_ran_stops_waiting,
    period_needs_a_single_slot,
    period_length_change_never_refuses_for_ever,
    period_offset_change_skips_no_period,
    period_unstarted_claim_is_taken_over,
    period_unstarted_claim_hides_no_earlier_run,
    period_start_checks_the_token,
    period_lost_claim_answer_still_runs,
    period_clear_without_a_record_is_none,
    period_clear_lets_the_period_run_again,
    period_clear_keeps_the_live_lease,
    period_clear_leaves_other_locks_alone,
];

static PARTITION_TESTS: &[ConformanceTest] = suite![
    partition_joins_balance_with_one_owner_per_shard,
    partition_graceful_leave_hands_over_without_expiry,
    partition_cut_off_member_is_replaced_after_its_leases,
    partition_restart_with_the_same_node_id_counts_once,
];

/// The partition-set cases (issue 39): three members on their own clients share 16 shards.
/// [`run_all`] runs them after [`tests`]; a store's own test file may run them apart.
///
/// ```
/// let names: Vec<_> = leasehold_testkit::conformance::partition_tests().iter().map(|t| t.name()).collect();
/// assert!(names.contains(&"partition_graceful_leave_hands_over_without_expiry"));
/// ```
pub fn partition_tests() -> &'static [ConformanceTest] {
    PARTITION_TESTS
}

/// Every conformance test, in the order [`run_all`] runs them.
///
/// ```
/// let names: Vec<_> = leasehold_testkit::conformance::tests().iter().map(|t| t.name()).collect();
/// assert!(names.contains(&"mutual_exclusion"));
/// ```
pub fn tests() -> &'static [ConformanceTest] {
    TESTS
}

/// The outcome of a suite run: which tests passed and which failed, with their panic messages.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SuiteReport {
    /// The store, as it describes itself.
    pub store: String,
    /// Tests that passed.
    pub passed: Vec<&'static str>,
    /// Tests that failed, with their messages.
    pub failed: Vec<(&'static str, String)>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl SuiteReport {
    /// True when every test passed.
    pub fn is_success(&self) -> bool {
        self.failed.is_empty()
    }
}

impl fmt::Display for SuiteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance of {}: {} passed, {} failed in {:?}",
            self.store,
            self.passed.len(),
            self.failed.len(),
            self.elapsed
        )?;
        for (name, message) in &self.failed {
            writeln!(f, "  FAILED {name}: {message}")?;
        }
        Ok(())
    }
}

/// Runs `tests` one after the other against `factory`, catching each failure, and reports.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn run_tests(factory: &dyn StoreFactory, tests: &[ConformanceTest]) -> SuiteReport {
    let started = Instant::now();
    let mut report = SuiteReport {
        store: factory.make().describe(),
        ..SuiteReport::default()
    };
    for test in tests {
        let test_started = Instant::now();
        match AssertUnwindSafe(test.run(factory)).catch_unwind().await {
            Ok(()) => {
                info!(test = test.name, elapsed = ?test_started.elapsed(), "conformance test passed");
                report.passed.push(test.name);
            }
            Err(payload) => {
                let message = panic_message(&*payload);
                warn!(test = test.name, %message, "conformance test failed");
                report.failed.push((test.name, message));
            }
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// Runs the whole suite against `factory` and panics, naming every failed test and its message,
/// if any failed.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn run_all(factory: &dyn StoreFactory) {
    let report = run_tests(factory, TESTS).await;
    assert!(report.is_success(), "{report}");
    let report = run_tests(factory, PARTITION_TESTS).await;
    assert!(report.is_success(), "{report}");
}
