//! `Assignment`: the whole partition set as a member last saw it — who owns which shard, who
//! should, the live members and their weights.

use std::collections::HashMap;
use std::sync::Arc;

/// One live member of a partition set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// Its node id ([`ElectionOptions::node_id`](crate::ElectionOptions::node_id)).
    pub node: Arc<str>,
    /// Its weight, as its member slot records it (a node id counts once: if a restart left
    /// two slots with its node id, the newest one's weight).
    pub weight: u32,
    /// The shards it owns, as last read.
    pub owned: u32,
    /// The shards the assignment gives it.
    pub target: u32,
}

/// The assignment of a partition set as this member last read and computed it.
///
/// Owners come from the store (the shard locks' holders) as of the member's last reading,
/// corrected by what this member knows of its own shards; targets are what the assignment
/// function gives each shard for the live members. A member rereads only while the set is
/// changing (see the manual page), so in a settled set the view is the settled state.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore, partition::PartitionSet};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let mut partition = PartitionSet::builder("orders", 4).build()?.join(&elector).await?;
/// let view = partition.wait_settled().await;
/// assert_eq!(view.members().len(), 1);
/// assert_eq!(view.owned_by(elector.options().node_id()), vec![0, 1, 2, 3]);
/// assert!(view.joining().is_empty() && view.leaving().is_empty());
/// partition.leave().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    pub(crate) members: Vec<Member>,
    pub(crate) owners: Vec<Option<Arc<str>>>,
    pub(crate) target: Vec<Option<Arc<str>>>,
}

impl Assignment {
    /// Builds the view; `members` are (node id, weight) in node-id order.
    pub(crate) fn new(
        members: impl IntoIterator<Item = (Arc<str>, u32)>,
        owners: Vec<Option<Arc<str>>>,
        target: Vec<Option<Arc<str>>>,
    ) -> Self {
        let (owned, targeted) = (tally(&owners), tally(&target));
        let members = members
            .into_iter()
            .map(|(node, weight)| Member {
                owned: owned.get(&*node).copied().unwrap_or(0),
                target: targeted.get(&*node).copied().unwrap_or(0),
                node,
                weight,
            })
            .collect();
        Self {
            members,
            owners,
            target,
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> u32 {
        u32::try_from(self.owners.len()).unwrap_or(u32::MAX)
    }

    /// The live members in node-id order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The node that owns `shard`, as last read (`None`: free, or past the last shard).
    pub fn owner(&self, shard: u32) -> Option<&str> {
        self.owners.get(shard as usize)?.as_deref()
    }

    /// The member the assignment gives `shard` to.
    pub fn target(&self, shard: u32) -> Option<&str> {
        self.target.get(shard as usize)?.as_deref()
    }

    /// The shards `node` owns, in order.
    pub fn owned_by(&self, node: &str) -> Vec<u32> {
        shards_where(&self.owners, |o| o == Some(node))
    }

    /// The shards whose owner is not (yet) the one the assignment gives them to: free shards,
    /// shards of a node that left, shards on their way to a new member.
    pub fn moving(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (shard, (owner, target)) in self.owners.iter().zip(&self.target).enumerate() {
            if owner != target {
                out.extend(u32::try_from(shard).ok());
            }
        }
        out
    }

    /// True when every shard is owned by the member the assignment gives it to.
    pub fn is_settled(&self) -> bool {
        !self.owners.is_empty() && self.owners == self.target
    }

    /// Members still taking up their share: they own fewer shards than the assignment gives
    /// them (a node that just joined, or one taking over from a node that left).
    pub fn joining(&self) -> Vec<&str> {
        self.members
            .iter()
            .filter(|m| m.owned < m.target)
            .map(|m| &*m.node)
            .collect()
    }

    /// Nodes that still own shards but are no longer members (they left or crashed, and their
    /// shard leases have not ended yet), in node-id order.
    pub fn leaving(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .owners
            .iter()
            .flatten()
            .map(|o| &**o)
            .filter(|o| self.members.iter().all(|m| &*m.node != *o))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// How many shards each node appears on.
fn tally(of: &[Option<Arc<str>>]) -> HashMap<&str, u32> {
    let mut n: HashMap<&str, u32> = HashMap::new();
    for o in of.iter().flatten() {
        *n.entry(&**o).or_insert(0) += 1;
    }
    n
}

fn shards_where(of: &[Option<Arc<str>>], keep: impl Fn(Option<&str>) -> bool) -> Vec<u32> {
    of.iter()
        .enumerate()
        .filter(|(_, o)| keep(o.as_deref()))
        .filter_map(|(s, _)| u32::try_from(s).ok())
        .collect()
}
