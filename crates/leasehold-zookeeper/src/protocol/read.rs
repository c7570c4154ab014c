//! Reading the holders and slots of a lock, and the forced release that frees what it read.

use async_trait::async_trait;
use leasehold::store::{ForceRound, ForcedRound, StoreResult};
use leasehold::{Holder, LockName};
use zookeeper_client::Error;

use super::{Protocol, written_stat};
use crate::keys::slot_of;
use crate::record::{Node, Record, Status};

/// Most slot nodes one multi-read of [`Protocol::holders_many`] asks for: a reply of that many
/// slot records (about 200 bytes each) stays far under the server's `jute.maxbuffer` (1 MiB by
/// default).
const READ_BATCH: usize = 1_000;

impl Protocol {
    /// The live holders of `slots` of `lock`, by slot.
    pub(crate) async fn holders(&self, lock: &LockName, slots: &[u32]) -> StoreResult<Vec<Holder>> {
        let read = self.read(lock, slots, false).await?;
        let now = self.now()?;
        Ok(self.live_holders(read.slots.iter().filter_map(|(_, n)| n.as_ref()), now))
    }

    /// The live holders of slots `0..slots` of each of `locks`, lock by lock: one multi-read of
    /// every slot node per [`READ_BATCH`] nodes, however many other locks the store holds.
    pub(crate) async fn holders_many(
        &self,
        locks: &[LockName],
        slots: u32,
    ) -> StoreResult<Vec<Vec<Holder>>> {
        let paths: Vec<(usize, u32, String)> = locks
            .iter()
            .enumerate()
            .flat_map(|(i, lock)| {
                (0..slots).map(move |slot| (i, slot, self.paths.slot(lock, slot)))
            })
            .collect();
        let mut nodes: Vec<Vec<Node>> = locks.iter().map(|_| Vec::new()).collect();
        for chunk in paths.chunks(READ_BATCH) {
            let found = self
                .read_paths(chunk.iter().map(|(_, _, path)| path.clone()).collect())
                .await?;
            for ((i, slot, _), found) in chunk.iter().zip(found) {
                if let Some((data, stat)) = found {
                    nodes[*i].push(Node {
                        slot: *slot,
                        record: Record::decode(&data),
                        stat,
                    });
                }
            }
        }
        let now = self.now()?;
        Ok(nodes
            .iter()
            .map(|nodes| self.live_holders(nodes.iter(), now))
            .collect())
    }

    /// The holders of `nodes` that nobody else may take at `now` (store time, ms).
    fn live_holders<'a>(&self, nodes: impl Iterator<Item = &'a Node>, now: i64) -> Vec<Holder> {
        nodes
            .filter(|n| n.record.is_some() && n.live_for_others(now, self.tolerance_ms))
            .filter_map(Node::holder)
            .collect()
    }

    /// The slot numbers of `lock`'s nodes (one `get_children`), sorted.
    pub(crate) async fn slots_of(&self, lock: &LockName) -> StoreResult<Vec<u32>> {
        let path = self.paths.lock(lock);
        let children = self
            .link
            .read("a read", |c| {
                let path = path.clone();
                async move {
                    match c.list_children(&path).await {
                        Ok(children) => Ok(children),
                        Err(Error::NoNode) => Ok(Vec::new()),
                        Err(e) => Err(e),
                    }
                }
            })
            .await?;
        let mut slots: Vec<u32> = children.iter().filter_map(|c| slot_of(c)).collect();
        slots.sort_unstable();
        Ok(slots)
    }
}

#[async_trait]
impl ForceRound for Protocol {
    /// One round of a forced release ([`forced_release`](leasehold::store::forced_release)):
    /// marks every live slot of `lock` among `slots` free whatever its token (one `multi` at the
    /// versions read; a changed lock is read again by the next round), and returns the holders
    /// as they were.
    async fn force_round(&self, lock: &LockName, slots: u32) -> StoreResult<ForcedRound> {
        let all: Vec<u32> = (0..slots).collect();
        let read = self.read(lock, &all, false).await?;
        let now = self.now()?;
        let live: Vec<(String, Vec<u8>, i32, Holder)> = read
            .slots
            .iter()
            .filter_map(|(_, n)| n.as_ref())
            .filter(|n| n.live_for_others(now, self.tolerance_ms))
            .filter_map(|n| {
                let record = n.record.as_ref()?;
                let free = Record {
                    status: Status::Free,
                    ttl_ms: 0,
                    cap_ms: None,
                    ..record.clone()
                };
                Some((
                    self.paths.slot(lock, n.slot),
                    free.encode(),
                    n.stat.version,
                    n.holder()?,
                ))
            })
            .collect();
        if live.is_empty() {
            return Ok(ForcedRound::default());
        }
        let writes: Vec<(String, Vec<u8>, i32)> = live
            .iter()
            .map(|(p, d, v, _)| (p.clone(), d.clone(), *v))
            .collect();
        let done = self
            .write_release("a forced release", lock, &writes)
            .await?;
        if let Some(results) = done {
            for stat in results.iter().filter_map(|r| written_stat(Some(r))) {
                self.link.clock.observe(stat.mtime);
            }
            return Ok(ForcedRound {
                freed: live.into_iter().map(|(_, _, _, h)| h).collect(),
                changed: false,
            });
        }
        Ok(ForcedRound {
            freed: Vec::new(),
            changed: true,
        })
    }
}
