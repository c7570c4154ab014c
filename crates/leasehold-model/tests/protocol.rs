//! The checker, exhaustively at small sizes: today's rules keep every property; the rules
//! before issue 33 break the ones the adversarial run found broken, and the checker finds each.

#![allow(clippy::print_stdout)] // the traces are the point of a failure

use leasehold_model::properties::{
    AT_LEAST_ONCE, AT_MOST_ONCE, FREE_WITHIN_A_LEASE, NOTHING_PAST_THE_DEADLINE, ONE_ACTION,
    ONE_VALID_HOLDER,
};
use leasehold_model::{LeaseModel, Rules, Setup};
use stateright::{Checker, Model};

/// Checks `setup` to completion and returns the checker.
fn check(setup: Setup) -> impl Checker<LeaseModel> {
    let checked = LeaseModel::new(setup).checker().spawn_bfs().join();
    println!(
        "{} states ({} unique), depth {}",
        checked.state_count(),
        checked.unique_state_count(),
        checked.max_depth()
    );
    checked
}

/// The trace that breaks `property`, printed, or a panic if the checker found none.
fn found(checked: &impl Checker<LeaseModel>, property: &'static str) {
    let path = checked
        .discovery(property)
        .unwrap_or_else(|| panic!("the checker did not find `{property}` broken"));
    println!("`{property}` broken by:");
    for (state, action) in path.into_vec() {
        println!("  {}", state.summary());
        if let Some(action) = action {
            println!("      {action:?}");
        }
    }
}

#[test]
fn today_plain_locks_keep_every_property_with_pauses_a_lost_answer_and_long_actions() {
    check(Setup::plain(Rules::TODAY)).assert_properties();
}

#[test]
fn today_plain_locks_keep_every_property_with_clock_error_below_the_margin() {
    let mut setup = Setup::plain(Rules::TODAY);
    setup.lease = 4;
    setup.margin = 2;
    setup.drift = 1;
    setup.horizon = 8;
    check(setup).assert_properties();
}

#[test]
fn a_clock_error_beyond_the_margin_lets_two_holders_overlap() {
    let mut setup = Setup::plain(Rules::TODAY);
    setup.drift = 2; // margin 1: the local deadline may pass the store's expiry
    found(&check(setup), ONE_VALID_HOLDER);
}

#[test]
fn today_schedules_keep_every_property_through_a_lost_answer() {
    check(Setup::scheduled(Rules::TODAY, &[3])).assert_properties();
}

#[test]
fn today_schedules_keep_every_property_when_the_period_length_changes() {
    let mut setup = Setup::scheduled(Rules::TODAY, &[3, 6]);
    setup.losses = 0;
    check(setup).assert_properties();
}

#[test]
fn today_schedules_keep_every_property_when_the_period_length_changes_and_an_answer_is_lost() {
    check(Setup::scheduled(Rules::TODAY, &[3, 6])).assert_properties();
}

/// A schedule whose period offset moves between runs (3-tick periods from 0, then from 1 or
/// 2: `Job::offset` changed in a deploy) keeps every property, with one lost request or answer.
#[test]
fn today_schedules_keep_every_property_when_the_period_offset_changes() {
    check(Setup::scheduled_with_offsets(
        Rules::TODAY,
        &[(3, 0), (3, 1), (3, 2)],
    ))
    .assert_properties();
}

/// A length and an offset change together (3-tick periods from 0, then 6-tick periods from 1),
/// with one lost request or answer. (Windows stay longer than the lease: a lost claim answer
/// holds the lock for a lease, so a window no longer than the lease can pass without a run —
/// the liveness bound of `docs/correctness.md`.)
#[test]
fn today_schedules_keep_every_property_when_length_and_offset_change_together() {
    check(Setup::scheduled_with_offsets(
        Rules::TODAY,
        &[(3, 0), (6, 1)],
    ))
    .assert_properties();
}

/// The ledger before issue 33 (a bare period number) under an offset change: the numbers of
/// two offsets do not compare, and the checker finds a period skipped or run twice.
#[test]
fn before_issue_33_an_offset_change_breaks_the_ledger() {
    let mut setup = Setup::scheduled_with_offsets(Rules::BEFORE_ISSUE_33, &[(3, 0), (3, 2)]);
    setup.losses = 0;
    let checked = check(setup);
    assert!(
        checked.discovery(AT_LEAST_ONCE).is_some() || checked.discovery(AT_MOST_ONCE).is_some(),
        "an offset change must break the number ledger"
    );
}

/// The gap the checker found in the ledger of issue 33, which kept only the latest claim: a
/// claim of a shorter period granted after a run, and then never started (its answer lost),
/// hid that run from a later claim of a longer period covering it, which ran the longer period
/// a second time. Needs a period length change and a lost answer together; today's ledger keeps
/// the latest run beside the latest claim (the test above).
#[test]
fn issue_33s_ledger_repeats_a_period_after_a_length_change_and_a_lost_claim_answer() {
    let checked = check(Setup::scheduled(Rules::ISSUE_33, &[3, 6]));
    found(&checked, AT_MOST_ONCE);
    assert!(checked.discovery(AT_LEAST_ONCE).is_none());
    assert!(checked.discovery(ONE_ACTION).is_none());
}

/// The library's defaults before issue 33 (no renewal, the action runs on after the loss): a
/// long action runs beside the next holder.
#[test]
fn before_issue_33_a_long_action_runs_twice() {
    let mut rules = Rules::TODAY;
    rules.auto_extend = false;
    rules.cancel_on_lost = false;
    let checked = check(Setup::plain(rules));
    found(&checked, ONE_ACTION);
    found(&checked, NOTHING_PAST_THE_DEADLINE);
    // The store still frees the lock in time: the overlap is the old holder acting on, not the
    // lock staying taken.
    assert!(checked.discovery(FREE_WITHIN_A_LEASE).is_none());
}

/// The ledger before issue 33, by period number: a period length change skips a period (and
/// shortening the period runs one twice).
#[test]
fn before_issue_33_a_period_length_change_skips_or_repeats_a_period() {
    let mut setup = Setup::scheduled(Rules::BEFORE_ISSUE_33, &[2, 4]);
    setup.losses = 0;
    let checked = check(setup);
    found(&checked, AT_LEAST_ONCE);
    found(&checked, AT_MOST_ONCE);
}

/// The ledger before issue 33, where a claim is a run: a claim whose answer is lost is skipped
/// everywhere.
#[test]
fn before_issue_33_a_lost_claim_answer_skips_the_period() {
    let checked = check(Setup::scheduled(Rules::BEFORE_ISSUE_33, &[3]));
    found(&checked, AT_LEAST_ONCE);
}
