//! The properties the checker holds every reachable state to. Each is stated in plain words in
//! `docs/correctness.md`.

use stateright::Property;

use crate::model::LeaseModel;
use crate::rules::Setup;
use crate::shards::{ShardModel, ShardState};
use crate::state::{Phase, SLOTS, State};

/// "At most N holders' local valid windows are open at any real instant" (N: the lock's slots,
/// the most any configuration in force uses).
pub const AT_MOST_N_HOLDERS: &str = "at most N holders believe their lease valid";
/// "No elector keeps its action running past its local deadline."
pub const NOTHING_PAST_THE_DEADLINE: &str = "no action runs past its local deadline";
/// "At most N actions run at any real instant" (the promise the user sees).
pub const AT_MOST_N_ACTIONS: &str = "at most N actions run at a time";
/// "A period runs at most once": no run starts in a period in which a run was already granted.
pub const AT_MOST_ONCE: &str = "each period runs at most once";
/// "A period with its electors up runs at least once, whatever one lost answer."
pub const AT_LEAST_ONCE: &str = "each period runs at least once";
/// "A lock is free within one lease of its last grant or renewal, whoever held it": the store
/// frees a lease `lease` ticks after the grant or renewal it last applied (a release frees it at
/// once), so a crashed, paused or cut-off holder blocks the lock for at most one lease. A lease
/// on a session is held as long as its session (an acquirer's view, under the model's
/// [`SessionRule`](crate::SessionRule)), which is renewed to at most one lease ahead.
pub const FREE_WITHIN_A_LEASE: &str = "a lock is free within one lease of its last renewal";
/// "Each grant's fence is above every fence minted before it for its slot", across release,
/// expiry, takeover, forced release and the clean-up of an idle record.
pub const FENCES_RISE: &str = "every grant's fence is above every earlier one";
/// "The fenced resource never accepts a write of a holder after a write of a later holder of the
/// same slot": a stale holder's delayed write is refused once its successor has written.
pub const WRITES_IN_GRANT_ORDER: &str = "the resource accepts writes in the order of grants";
/// "At most one elector believes it holds each slot at any real instant", apart from a holder an
/// operator forced out, which believes it until it hears so (by design: see the forced release
/// setups). With sessions each slot is a lock, so this is exclusivity per lock.
pub const ONE_HOLDER_PER_SLOT: &str = "at most one holder per slot believes its lease valid";
/// "The store grants a slot only once every earlier holder's local deadline for it has passed":
/// a lease released by its holder, forced out, run out, or lost with its session frees its lock
/// no earlier than its holder stops believing in it.
pub const NO_GRANT_BEFORE_THE_DEADLINE: &str =
    "a slot is granted only after its last holder's deadline";
/// "A session renewal renews only leases the store still holds for their holder": never one an
/// operator forced out (its holder learns of it at the session's next renewal), one released,
/// one that ran out, or one of a lost session.
pub const RENEWS_ONLY_HELD_LEASES: &str = "a renewal renews only leases still held";

/// Every property, in the order above (`RENEWS_ONLY_HELD_LEASES` holds trivially in setups
/// without sessions).
pub fn all() -> Vec<Property<LeaseModel>> {
    vec![
        Property::always(AT_MOST_N_HOLDERS, |m: &LeaseModel, s: &State| {
            valid_holders(s) <= usize::from(m.setup.most_slots())
        }),
        Property::always(NOTHING_PAST_THE_DEADLINE, |_, s: &State| {
            s.electors
                .iter()
                .all(|e| !matches!(e.phase, Phase::Running(h) if h.deadline <= s.now))
        }),
        Property::always(AT_MOST_N_ACTIONS, |m: &LeaseModel, s: &State| {
            s.electors
                .iter()
                .filter(|e| matches!(e.phase, Phase::Running(_)))
                .count()
                <= usize::from(m.setup.most_slots())
        }),
        Property::always(AT_MOST_ONCE, |_, s: &State| !s.twice),
        Property::always(AT_LEAST_ONCE, |_, s: &State| s.missed.is_none()),
        Property::always(FREE_WITHIN_A_LEASE, |m: &LeaseModel, s: &State| {
            (0..SLOTS).all(|slot| {
                s.store
                    .held_until(slot, s.now)
                    .is_none_or(|until| until <= s.now.saturating_add(m.setup.longest_lease()))
            })
        }),
        Property::always(FENCES_RISE, |_, s: &State| !s.fence_fell),
        Property::always(WRITES_IN_GRANT_ORDER, |_, s: &State| !s.out_of_order),
        Property::always(ONE_HOLDER_PER_SLOT, |_, s: &State| {
            (0..SLOTS).all(|slot| holders_of(s, slot) <= 1)
        }),
        Property::always(NO_GRANT_BEFORE_THE_DEADLINE, |_, s: &State| {
            !s.granted_early
        }),
        Property::always(RENEWS_ONLY_HELD_LEASES, |_, s: &State| !s.renewed_unheld),
    ]
}

/// "Some run loses a session that holds two leases, and a lock of it is then taken over":
/// checked in setups with sessions, so that they are known to reach that case.
pub const LOST_SESSION_TAKEN_OVER: &str = "a session lost while holding two leases is taken over";
/// "Some renewal answers `NotHeld` for a forced-out lease and renews the other lease of the
/// session": checked in setups with sessions and a forced release.
pub const FORCED_OUT_BESIDE_A_RENEWAL: &str =
    "a renewal drops a forced-out lease and renews the other";

/// The cases a setup must reach (`sometimes` properties: the checker must find an example):
/// with sessions, a lost session taken over, and with a forced release as well, a forced-out
/// lease dropped by a renewal that renews the other lease.
pub fn coverage(setup: &Setup) -> Vec<Property<LeaseModel>> {
    let mut cases = Vec::new();
    if setup.has_sessions() {
        cases.push(Property::sometimes(
            LOST_SESSION_TAKEN_OVER,
            |_, s: &State| s.lost_session_taken_over,
        ));
        if setup.forced > 0 {
            cases.push(Property::sometimes(
                FORCED_OUT_BESIDE_A_RENEWAL,
                |_, s: &State| s.forced_out_beside_a_renewal,
            ));
        }
    }
    cases
}

/// How many electors, not forced out of it, hold slot `slot` with a local deadline still ahead.
fn holders_of(s: &State, slot: usize) -> usize {
    let forced = s.forced_out.get(slot).copied().flatten();
    s.electors
        .iter()
        .filter(|e| match e.phase {
            Phase::Starting(h) | Phase::Running(h) => {
                usize::from(h.slot) == slot && h.deadline > s.now && forced != Some(h.token)
            }
            _ => false,
        })
        .count()
}

/// How many electors hold a lease whose local deadline is still ahead.
fn valid_holders(s: &State) -> usize {
    s.electors
        .iter()
        .filter(|e| match e.phase {
            Phase::Starting(h) | Phase::Running(h) => h.deadline > s.now,
            _ => false,
        })
        .count()
}

/// Partition sets ([`ShardModel`](crate::ShardModel)): "at most one node believes it owns each
/// shard at any real instant" — owns it (its work runs) or is handing it over, before its local
/// deadline — apart from an owner an operator forced out, which believes it until its next
/// renewal, by design.
pub const ONE_OWNER_PER_SHARD: &str = "at most one node believes it owns each shard";
/// Partition sets: "each grant of a shard has a fence above every fence minted before it for
/// that shard", across hand-overs, expiry, takeover, crashes and forced releases.
pub const SHARD_FENCES_RISE: &str = "each shard's fences rise across moves";
/// Partition sets (coverage): "once the set has gone [`settle`](crate::ShardSetup::settle)
/// ticks without a change, every shard is owned by a live member", which holds its lease at the
/// store and believes it.
pub const EVERY_SHARD_OWNED: &str = "every shard is owned within the bound of the last change";
/// Partition sets (balance): "once the set has gone [`settle`](crate::ShardSetup::settle) ticks
/// without a change, each live member owns its share of the shards rounded down or up".
pub const SHARDS_BALANCED: &str = "each live member owns within one of even";
/// Partition sets: "some run moves a shard from one node to the other and the set then goes
/// the bound without a change": checked in every partition setup, so that coverage and
/// balance are known to be judged after a move.
pub const A_SHARD_MOVES_AND_SETTLES: &str = "a shard moves and the set settles";
/// Partition sets (minimal movement): "a member's reading never gives it more than its even
/// share" — the shards divided by the nodes holding a member slot (a node id once, however many
/// slots it holds), rounded up. A member given more takes shards (or keeps them from the
/// others) that it must give back once nothing else changed: moves no change of members asked
/// for.
pub const NO_SHARE_ABOVE_EVEN: &str = "a member is never given more than its even share";

/// The properties of a partition set, in the order above.
pub fn shards() -> Vec<Property<ShardModel>> {
    vec![
        Property::always(ONE_OWNER_PER_SHARD, |m: &ShardModel, s: &ShardState| {
            (0..usize::from(m.setup.shards)).all(|shard| owners_of(s, shard) <= 1)
        }),
        Property::always(SHARD_FENCES_RISE, |_, s: &ShardState| !s.fence_fell),
        Property::always(EVERY_SHARD_OWNED, |m: &ShardModel, s: &ShardState| {
            !s.calm(&m.setup) || every_shard_owned(m, s)
        }),
        Property::always(SHARDS_BALANCED, |m: &ShardModel, s: &ShardState| {
            !s.calm(&m.setup) || balanced(m, s)
        }),
        Property::sometimes(
            A_SHARD_MOVES_AND_SETTLES,
            |m: &ShardModel, s: &ShardState| s.moved && s.calm(&m.setup) && every_shard_owned(m, s),
        ),
        Property::always(NO_SHARE_ABOVE_EVEN, |_, s: &ShardState| !s.over_share),
    ]
}

/// How many nodes believe they own `shard`, not counting an owner forced out.
fn owners_of(s: &ShardState, shard: usize) -> usize {
    let forced = s.forced_out.get(shard).copied().flatten();
    s.nodes
        .iter()
        .filter_map(|n| n.believes(shard, s.now))
        .filter(|&fence| forced != Some(fence))
        .count()
}

/// True if every shard is owned by a live member that believes it and holds it at the store.
fn every_shard_owned(m: &ShardModel, s: &ShardState) -> bool {
    (0..usize::from(m.setup.shards)).all(|shard| {
        s.store.live(shard, s.now).is_some_and(|lease| {
            s.nodes.get(usize::from(lease.node)).is_some_and(|n| {
                n.live()
                    && n.owned
                        .get(shard)
                        .copied()
                        .flatten()
                        .is_some_and(|b| b.fence == lease.fence && b.deadline > s.now)
            })
        })
    })
}

/// True if each live member owns the shard count divided by the live members, rounded down or
/// up.
fn balanced(m: &ShardModel, s: &ShardState) -> bool {
    let live = s.nodes.iter().filter(|n| n.live()).count();
    let shards = usize::from(m.setup.shards);
    let (low, high) = (shards / live.max(1), shards.div_ceil(live.max(1)));
    s.nodes
        .iter()
        .filter(|n| n.live())
        .all(|n| (low..=high).contains(&n.owns()))
}
