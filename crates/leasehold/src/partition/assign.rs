//! The assignment: which member should own each shard, as a pure function of the shard count,
//! the live members with their weights, and the current owners.
//!
//! Every member computes it from what it read in the store, so members that read the same
//! state agree on it without talking to each other. It is built to move as little as possible:
//!
//! 1. **Quotas.** Member `i` of weight `wᵢ` (total weight `W`) deserves `n·wᵢ/W` shards; it
//!    gets that number rounded down or up, the round-ups going to the members whose current
//!    holding already reaches past the rounded-down share (they keep one more shard that way),
//!    then to those closest to rounding up, then by node id. The quotas add up to `n`.
//! 2. **Keep.** Each shard stays with its current owner while that owner is a live member
//!    below its quota (its lowest-numbered shards first).
//! 3. **Fill.** Every other shard (free, held by a node that left, or beyond its owner's quota)
//!    goes to the member furthest below its quota (ties: the first node id).
//!
//! So every member ends exactly at its quota (balance within one shard of its weighted share),
//! and the only shards that change hands are those a member holds beyond its quota: no
//! assignment that balances as well moves fewer (see the tests).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

/// The target owner of each of `shards` shards (an index into the members in node-id order),
/// for `members` (node id → weight; weight 0 takes nothing) and `owners` (the current owner of
/// each shard as read; missing entries count as free). `None` only when no member has weight.
pub(crate) fn assign(
    shards: u32,
    members: &BTreeMap<Arc<str>, u32>,
    owners: &[Option<Arc<str>>],
) -> Vec<Option<Arc<str>>> {
    let ids: Vec<(&Arc<str>, u64)> = members
        .iter()
        .filter(|(_, w)| **w > 0)
        .map(|(id, w)| (id, u64::from(*w)))
        .collect();
    let n = shards as usize;
    if ids.is_empty() {
        return vec![None; n];
    }
    let index: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_ref(), i))
        .collect();
    let owner_of = |s: usize| -> Option<usize> {
        owners
            .get(s)
            .and_then(Option::as_ref)
            .and_then(|o| index.get(o.as_ref()).copied())
    };
    let mut current = vec![0u64; ids.len()];
    for s in 0..n {
        if let Some(i) = owner_of(s) {
            current[i] += 1;
        }
    }
    let quota = quotas(u64::from(shards), &ids, &current);

    let mut target: Vec<Option<usize>> = vec![None; n];
    let mut given = vec![0u64; ids.len()];
    for (s, slot) in target.iter_mut().enumerate() {
        if let Some(i) = owner_of(s)
            && given[i] < quota[i]
        {
            *slot = Some(i);
            given[i] += 1;
        }
    }
    // The members still below their quota, furthest below first (ties: the first node id).
    let mut below: BinaryHeap<(u64, Reverse<usize>)> = (0..ids.len())
        .filter(|&i| given[i] < quota[i])
        .map(|i| (quota[i] - given[i], Reverse(i)))
        .collect();
    for slot in target.iter_mut().filter(|t| t.is_none()) {
        // The quotas add up to the shard count, so a member is below its quota here.
        let Some((deficit, Reverse(i))) = below.pop() else {
            break;
        };
        *slot = Some(i);
        if deficit > 1 {
            below.push((deficit - 1, Reverse(i)));
        }
    }
    target
        .into_iter()
        .map(|t| t.map(|i| Arc::clone(ids[i].0)))
        .collect()
}

/// Each member's quota: its share `n·w/W` rounded down, plus one for as many members as the
/// rounding left shards over — first those whose `current` holding exceeds the rounded-down
/// share, then those with the largest remainder, then in node-id order.
fn quotas(n: u64, ids: &[(&Arc<str>, u64)], current: &[u64]) -> Vec<u64> {
    let total: u64 = ids.iter().map(|(_, w)| w).sum();
    let mut quota: Vec<u64> = ids.iter().map(|(_, w)| n * w / total).collect();
    let left = n - quota.iter().sum::<u64>();
    let remainder = |i: usize| n * ids[i].1 % total;
    let mut up: Vec<usize> = (0..ids.len()).filter(|&i| remainder(i) > 0).collect();
    up.sort_by_key(|&i| (Reverse(current[i] > quota[i]), Reverse(remainder(i)), i));
    for &i in up.iter().take(usize::try_from(left).unwrap_or(usize::MAX)) {
        quota[i] += 1;
    }
    quota
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> Arc<str> {
        Arc::from(format!("node-{n}"))
    }

    fn members(weights: &[u32]) -> BTreeMap<Arc<str>, u32> {
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| (id(i), *w))
            .collect()
    }

    fn count(target: &[Option<Arc<str>>], who: &str) -> u64 {
        target.iter().filter(|t| t.as_deref() == Some(who)).count() as u64
    }

    /// The fewest shards any balanced assignment must take from their live owners: over every
    /// choice of which members round up, the shards held beyond the quota.
    fn least_moves(n: u64, weights: &[u32], current: &[u64]) -> u64 {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let floor: Vec<u64> = weights.iter().map(|w| n * u64::from(*w) / total).collect();
        let left = n - floor.iter().sum::<u64>();
        let can_round: Vec<usize> = (0..weights.len())
            .filter(|&i| !(n * u64::from(weights[i])).is_multiple_of(total))
            .collect();
        let mut best = u64::MAX;
        for mask in 0u32..(1 << can_round.len()) {
            if u64::from(mask.count_ones()) != left {
                continue;
            }
            let mut quota = floor.clone();
            for (bit, &i) in can_round.iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    quota[i] += 1;
                }
            }
            let moves = (0..weights.len())
                .map(|i| current[i].saturating_sub(quota[i]))
                .sum();
            best = best.min(moves);
        }
        best
    }

    /// Checks balance, coverage and minimal movement of one assignment.
    fn check(n: u32, weights: &[u32], owners: &[Option<Arc<str>>]) {
        let live = members(weights);
        let target = assign(n, &live, owners);
        assert_eq!(target.len(), n as usize);
        assert!(
            target.iter().all(Option::is_some),
            "every shard has an owner"
        );
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut current = Vec::new();
        for (i, w) in weights.iter().enumerate() {
            let share = u64::from(n) * u64::from(*w);
            let got = count(&target, &id(i));
            assert!(
                got * total >= share - share % total && got * total < share + total,
                "{weights:?} {owners:?}: member {i} got {got} of {n}"
            );
            current.push(count(owners, &id(i)));
        }
        let moved = (0..n as usize)
            .filter(|&s| {
                owners[s].as_ref().is_some_and(|o| live.contains_key(o)) && target[s] != owners[s]
            })
            .count() as u64;
        assert_eq!(
            moved,
            least_moves(u64::from(n), weights, &current),
            "{weights:?} {owners:?} -> {target:?}"
        );
        // A balanced, fully owned state is kept as it is; assigning again changes nothing.
        assert_eq!(assign(n, &live, &target), target, "not a fixed point");
    }

    /// Every owner vector of up to 5 shards over up to 3 members (and a node that left), with
    /// weights 1 to 3: balance, coverage, minimal movement and the fixed point, exhaustively.
    #[test]
    fn balanced_and_minimal_on_every_small_case() {
        let mut cases = 0;
        for m in 1..=3usize {
            for wmask in 0..3usize.pow(m as u32) {
                let weights: Vec<u32> = (0..m)
                    .map(|i| (wmask / 3usize.pow(i as u32) % 3) as u32 + 1)
                    .collect();
                for n in 1..=5u32 {
                    // Each shard: free, one of the members, or a node that is not a member.
                    let choices = m + 2;
                    for omask in 0..choices.pow(n) {
                        let owners: Vec<Option<Arc<str>>> = (0..n)
                            .map(|s| match omask / choices.pow(s) % choices {
                                0 => None,
                                1 => Some(Arc::from("gone")),
                                k => Some(id(k - 2)),
                            })
                            .collect();
                        check(n, &weights, &owners);
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 10_000, "{cases}");
    }

    /// A node joining 1,024 shards balanced over k nodes takes exactly its quota, all from nodes
    /// above theirs: the minimum.
    #[test]
    fn a_join_moves_only_what_the_new_node_needs() {
        for k in 1..16usize {
            let before = members(&vec![1; k]);
            let start = assign(1024, &before, &[]);
            let after = members(&vec![1; k + 1]);
            let target = assign(1024, &after, &start);
            let moved = start.iter().zip(&target).filter(|(a, b)| a != b).count();
            let joined = count(&target, &id(k));
            assert_eq!(moved as u64, joined, "{k} -> {}", k + 1);
            assert!(joined == 1024 / (k as u64 + 1) || joined == 1024 / (k as u64 + 1) + 1);
            // and a leave moves only the leaver's shards
            let back = assign(1024, &before, &target);
            let moved_back = target.iter().zip(&back).filter(|(a, b)| a != b).count();
            assert_eq!(moved_back as u64, joined, "leave of {}", k);
        }
    }

    #[test]
    fn weights_share_in_proportion() {
        let live: BTreeMap<Arc<str>, u32> = [(id(0), 1), (id(1), 3)].into_iter().collect();
        let target = assign(100, &live, &[]);
        assert_eq!(count(&target, &id(0)), 25);
        assert_eq!(count(&target, &id(1)), 75);
    }

    #[test]
    fn the_same_state_gives_the_same_answer_whatever_the_order_read() {
        let forward: BTreeMap<Arc<str>, u32> = (0..5).map(|i| (id(i), 1)).collect();
        let backward: BTreeMap<Arc<str>, u32> = (0..5).rev().map(|i| (id(i), 1)).collect();
        let owners: Vec<Option<Arc<str>>> = (0..37).map(|s| Some(id(s % 3))).collect();
        // Equal text in other allocations.
        let copies: Vec<Option<Arc<str>>> =
            owners.iter().map(|o| o.as_deref().map(Arc::from)).collect();
        let a = assign(37, &forward, &owners);
        assert_eq!(a, assign(37, &backward, &copies));
        assert_eq!(a, assign(37, &forward, &owners));
    }

    #[test]
    fn no_member_owns_nothing() {
        assert_eq!(assign(3, &BTreeMap::new(), &[]), vec![None, None, None]);
        let zero: BTreeMap<Arc<str>, u32> = [(id(0), 0)].into_iter().collect();
        assert_eq!(assign(2, &zero, &[]), vec![None, None]);
    }
}
