//! Partition sets, exhaustively at small sizes (`ShardSetup`): three shards over two nodes,
//! each following the member's rules of `leasehold::partition`. Today's rules keep one owner
//! per shard, rising fences, coverage and balance through joins, leaves, crashes, pauses and a
//! forced release; each rule broken on purpose is caught.

#![allow(clippy::print_stdout)] // the traces are the point of a failure

use leasehold_model::properties::{
    EVERY_SHARD_OWNED, NO_SHARE_ABOVE_EVEN, ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE, SHARDS_BALANCED,
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
/// shards: every property holds within a lease and a period, as after a crash. A node that
/// resumes after its local deadline for its member slot but before the store frees it releases
/// that slot by its token before it takes a fresh one, so it never holds two.
#[test]
fn today_shards_keep_every_property_through_pauses() {
    let setup = joining(ShardRule::Today, |s| {
        s.shards = 2;
        s.pauses = 2;
        s.settle = 4;
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
/// and joined again within a lease) holds two slots until the old one runs out, and counts
/// once (a node id counts once, `read::members`): nobody hands a shard over for it, the
/// restarted node takes its old shards as their leases end, and coverage and balance come
/// within a lease and a period, as after any crash.
#[test]
fn a_restart_with_the_same_node_id_counts_once_and_settles_within_a_lease_and_a_period() {
    let setup = joining(ShardRule::Today, |s| {
        s.shards = 2;
        s.joins = 2;
        s.crashes = 1;
    });
    check(setup).assert_properties();
}

/// The rule before the fix, counting the group's weights per live slot: the restarted node
/// counts twice until its old slot runs out, so the readings give it more than its even share
/// (it takes shards it hands back when the old slot runs out), and coverage and balance are
/// late for the bound of a lease and a period; they hold within two leases.
#[test]
fn counting_every_member_slot_moves_shards_after_a_restart_and_settles_late() {
    let setup = joining(ShardRule::CountsEverySlot, |s| {
        s.shards = 2;
        s.joins = 2;
        s.crashes = 1;
    });
    let checked = check(setup.clone());
    found(&checked, NO_SHARE_ABOVE_EVEN);
    found(&checked, EVERY_SHARD_OWNED);
    kept(&checked, &[ONE_OWNER_PER_SHARD, SHARD_FENCES_RISE]);
    let mut longer = setup;
    longer.settle = 6;
    longer.horizon = 12;
    let checked = check(longer);
    found(&checked, NO_SHARE_ABOVE_EVEN);
    kept(
        &checked,
        &[
            ONE_OWNER_PER_SHARD,
            SHARD_FENCES_RISE,
            EVERY_SHARD_OWNED,
            SHARDS_BALANCED,
        ],
    );
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
/// --ignored`): a join, a restart, a leave, a crash and a forced release in one setup, with a
/// bound of five ticks. Every property holds; 12.9 million distinct states, about 70 seconds on
/// a loaded two-core machine. With four ticks the checker finds a shard unowned: a node
/// restarted beside its old process's shard lease reads that shard as free (it holds no shard
/// under its node id) and, after a forced release, the rounding gives it to the other member,
/// which reads it as the restarted node's; they agree once the old lease ends, and the shard is
/// taken a tick after that.
#[test]
#[ignore = "a longer search: 12.9 million states, about 70 seconds"]
fn today_every_change_in_one_setup_keeps_every_property() {
    let setup = joining(ShardRule::Today, |s| {
        s.joins = 2;
        s.leaves = 1;
        s.crashes = 1;
        s.forced = 1;
        s.settle = 5;
    });
    check(setup).assert_properties();
}
