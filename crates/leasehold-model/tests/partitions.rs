//! Partition sets, exhaustively at small sizes (`ShardSetup`): three shards over two nodes,
//! each following the member's rules of `leasehold::partition`. Today's rules keep one owner
//! per shard, rising fences, coverage and balance through joins, leaves, crashes, pauses and a
//! forced release; each rule broken on purpose is caught.

#![allow(clippy::print_stdout)] // the traces are the point of a failure

use leasehold_model::properties::{
    EVERY_SHARD_OWNED, ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE, SHARDS_BALANCED,
};
use leasehold_model::{ShardModel, ShardRule, ShardSetup};
use stateright::Checker;

mod common;

use common::{found, kept};

/// Checks `setup` to completion and returns the checker.
fn check(setup: ShardSetup) -> impl Checker<ShardModel> {
    common::check(ShardModel::new(setup))
}

/// The two-node setup under `rule`, with node 0 a member from the start and node 1 joining at
/// any moment (one join), and `more` on top.
fn joining(rule: ShardRule, more: impl FnOnce(&mut ShardSetup)) -> ShardSetup {
    let mut setup = ShardSetup::two_nodes(rule);
    setup.members = 1;
    setup.joins = 1;
    setup.horizon = 10;
    more(&mut setup);
    setup
}

/// Node 0 alone owns every shard; node 1 joins at any moment, either leaves gracefully, and
/// the one that left may join again: one owner per shard (a shard handed over is released only
/// once its work ended, and taken only then), rising fences, and within a lease and a period
/// of the last change every shard owned by a live member, one of even each.
#[test]
fn today_shards_keep_every_property_through_joins_and_leaves() {
    let setup = joining(ShardRule::Today, |s| {
        s.joins = 2;
        s.leaves = 1;
    });
    check(setup).assert_properties();
}

/// A crash (the node forgets everything; its leases and member slot run out at the store), a
/// graceful leave and a forced release of one shard, each at any moment, beside a join: every
/// property holds within a lease and a period of the last change.
#[test]
fn today_shards_keep_every_property_through_a_crash_a_leave_and_a_forced_release() {
    let setup = joining(ShardRule::Today, |s| {
        s.crashes = 1;
        s.leaves = 1;
        s.forced = 1;
    });
    check(setup).assert_properties();
}

/// A shard forced free under its owner, with the nodes joining in either order (so either may
/// be the one holding two shards): the owner learns of it at its next renewal; when the
/// assignment then gives the free shard to the other member, which saw nothing change and
/// does not read the owners, the owner changes the member group's fingerprint after a period
/// of waiting and the other member takes the shard within the bound.
#[test]
fn today_a_shard_forced_free_is_taken_over_within_the_bound() {
    let mut setup = ShardSetup::two_nodes(ShardRule::Today);
    setup.members = 0;
    setup.joins = 2;
    setup.forced = 1;
    setup.horizon = 10;
    check(setup).assert_properties();
}

/// Two pauses of any length (a node stops renewing, reading and acting, then resumes) over two
/// shards: every property holds with a bound of five ticks. A node that resumes after its
/// local deadline for its member slot but before the store frees it takes a fresh slot beside
/// the old one and counts twice for a tick (the group's weights are counted per slot), so the
/// set may move a shard one way and then back, which costs a period more than a lease and a
/// period.
#[test]
fn today_shards_keep_every_property_through_pauses() {
    let setup = joining(ShardRule::Today, |s| {
        s.shards = 2;
        s.pauses = 2;
        s.settle = 5;
    });
    check(setup).assert_properties();
}

/// The bound is tight: with three ticks (a lease) instead of four, a join leaves a shard
/// unowned at the bound (the old owner notices the join a period later, its work may take the
/// drain to stop, and the newcomer takes the shard at its next period).
#[test]
fn shards_need_a_lease_and_a_period_to_settle_after_a_join() {
    let setup = joining(ShardRule::Today, |s| s.settle = 3);
    let checked = check(setup);
    found(&checked, EVERY_SHARD_OWNED);
    kept(&checked, &[ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE]);
}

/// A node restarted with the same node id while its old member slot is still live (it crashed
/// and joined again within a lease) holds two slots, and the others count it twice until the
/// old one runs out: it gets both of two shards, then hands one over. Coverage and balance are
/// then late for a lease and a period, and hold within two leases.
#[test]
fn a_restart_with_the_same_node_id_counts_twice_until_its_old_member_slot_runs_out() {
    let setup = joining(ShardRule::Today, |s| {
        s.shards = 2;
        s.joins = 2;
        s.crashes = 1;
    });
    let checked = check(setup.clone());
    found(&checked, EVERY_SHARD_OWNED);
    kept(&checked, &[ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE]);
    let mut longer = setup;
    longer.settle = 6;
    longer.horizon = 12;
    check(longer).assert_properties();
}

/// A member that takes every free shard it reads and never hands one over: the store's grant
/// still keeps one owner per shard, but the node that was alone first keeps every shard.
#[test]
fn a_member_ignoring_the_assignment_never_balances() {
    let setup = joining(ShardRule::IgnoresAssignment, |s| s.leaves = 1);
    let checked = check(setup);
    found(&checked, SHARDS_BALANCED);
    kept(
        &checked,
        &[ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE, EVERY_SHARD_OWNED],
    );
}

/// A hand-over that releases the lease at once, while the shard's work is still stopping: the
/// newcomer takes the shard and its work starts beside the old owner's.
#[test]
fn a_hand_over_releasing_before_the_work_ends_lets_two_owners_overlap() {
    let setup = joining(ShardRule::ReleasesBeforeWorkEnds, |s| s.leaves = 1);
    let checked = check(setup);
    found(&checked, ONE_OWNER_PER_SHARD);
    kept(&checked, &[SHARD_FENCES_RISE]);
}

/// A member that sees a free shard wait for another member and does nothing about it: after a
/// forced release, the shard the assignment gives to a member that saw nothing change stays
/// free for good.
#[test]
fn a_member_that_never_nudges_leaves_a_shard_forced_free_unowned() {
    let mut setup = ShardSetup::two_nodes(ShardRule::NoNudge);
    setup.members = 0;
    setup.joins = 2;
    setup.forced = 1;
    setup.horizon = 10;
    let checked = check(setup);
    found(&checked, EVERY_SHARD_OWNED);
    kept(&checked, &[ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE]);
}

/// A store that deletes a shard's record on release, forgetting its fence counter: the next
/// owner after a hand-over gets a fence already handed out.
#[test]
fn a_store_forgetting_the_fence_on_release_lets_a_shards_fence_fall() {
    let setup = joining(ShardRule::ReleaseForgetsFence, |s| s.leaves = 1);
    let checked = check(setup);
    found(&checked, SHARD_FENCES_RISE);
    kept(&checked, &[ONE_OWNER_PER_SHARD]);
}

/// A longer search, not run by default (`cargo test -p leasehold-model --test partitions --
/// --ignored`): a join, a restart, a leave, a crash and a forced release in one setup, with the
/// bound a restart needs. Every property holds; 14.6 million distinct states, about 110 seconds
/// on a loaded two-core machine.
#[test]
#[ignore = "a longer search: 14.6 million states, about 110 seconds"]
fn today_every_change_in_one_setup_keeps_every_property() {
    let setup = joining(ShardRule::Today, |s| {
        s.joins = 2;
        s.leaves = 1;
        s.crashes = 1;
        s.forced = 1;
        s.settle = 6;
    });
    check(setup).assert_properties();
}
