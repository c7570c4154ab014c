//! The conformance suite: the contract every [`LeaseStore`](leasehold::LeaseStore) must meet,
//! checked through the core electors and through the store trait itself.
//!
//! Each test is a plain `pub async fn(&dyn StoreFactory)` that panics with a clear message when
//! the store breaks the contract, like the `object_store` crate's `integration` functions. A
//! backend's tests call them one by one, or all at once with [`run_all`]:
//!
//! ```no_run
//! # async fn example() {
//! use std::sync::Arc;
//! use leasehold::MemoryStore;
//! use leasehold_testkit::{SharedStore, conformance};
//!
//! let factory = SharedStore::new(Arc::new(MemoryStore::new()));
//! conformance::contention_skips_after_wait(&factory).await;
//! conformance::run_all(&factory).await; // panics naming every failed test
//! # }
//! ```
//!
//! Tests use real time: leases of 300 ms – 30 s and bounds of several hundred milliseconds, so
//! they hold on busy machines and against servers with their own clocks. Lock names are unique
//! per call, so runs against a shared server do not interfere.

mod election;
mod exclusion;
mod expiry;
mod extension;
mod fencing;
mod force;
mod group;
mod hand_off;
mod limits;
mod listing;
mod min_lease;
mod partition;
mod period;
mod release;
mod session;
mod state;
mod store;
mod suite;
mod support;
mod tenant;

pub use election::{
    contention_skips_after_wait, elected_run_executes_once, independent_names_do_not_block,
    sequential_acquisitions_work,
};
pub use exclusion::{group_mutual_exclusion, mutual_exclusion};
pub use expiry::{expiry_allows_takeover, stale_owner_is_rejected};
pub use extension::{auto_extend_keeps_lease, manual_extend_keeps_lease};
pub use fencing::{fences_increase, group_fences_increase_per_slot};
pub use force::{force_release_makes_the_holder_lost, store_force_release_frees_every_slot};
pub use group::{group_expired_slots_reclaimed, group_slot_accounting};
pub use hand_off::store_hands_off_to_the_longest_waiter;
pub use limits::{store_records_the_longest_node_id, store_rejects_more_than_max_slots};
pub use listing::{names_with_dots_and_slashes_are_independent, store_lists_locks_with_holders};
pub use min_lease::min_lease_holds_lock;
pub use partition::{
    partition_cut_off_member_is_replaced_after_its_leases,
    partition_graceful_leave_hands_over_without_expiry,
    partition_joins_balance_with_one_owner_per_shard,
    partition_restart_with_the_same_node_id_counts_once,
};
pub use period::{
    period_already_ran_stops_waiting, period_clear_keeps_the_live_lease,
    period_clear_leaves_other_locks_alone, period_clear_lets_the_period_run_again,
    period_clear_without_a_record_is_none, period_concurrent_claims_grant_once,
    period_earlier_refused_next_granted, period_length_change_never_refuses_for_ever,
    period_lost_claim_answer_still_runs, period_needs_a_single_slot,
    period_offset_change_skips_no_period, period_record_survives_expiry,
    period_same_period_is_refused, period_start_checks_the_token,
    period_unstarted_claim_hides_no_earlier_run, period_unstarted_claim_is_taken_over,
};
pub use release::{
    abandoned_wait_leaves_no_lock, action_error_releases, action_panic_releases,
    dropped_future_releases, lost_grant_answer_leaves_no_lock,
};
pub use session::{
    a_session_lost_frees_every_lease_no_earlier_than_its_lease,
    many_leases_renew_together_and_lose_only_the_one_taken,
    restart_with_the_same_node_id_waits_out_old_leases, store_extend_many_answers_each_lease,
};
pub use state::{state_snapshots, store_state_many_answers_each_lock};
pub use store::{
    store_acquire_is_idempotent, store_extend_after_expiry_is_not_held,
    store_group_grants_lowest_free_slot, store_operations_check_the_token,
    store_release_linger_never_lengthens,
};
pub use suite::{ConformanceTest, SuiteReport, partition_tests, run_all, run_tests, tests};
pub use tenant::tenant_scoping;
