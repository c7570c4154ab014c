//! Renewing many leases at once: the heartbeat's one read and one write for every lease a
//! process holds on this ensemble.

use std::collections::HashMap;
use std::time::Duration;

use leasehold::Lease;
use leasehold::store::{Extension, StoreError, StoreResult};
use zookeeper_client::{Error, MultiWriteError};

use super::{Protocol, written_stat};
use crate::record::{Node, Record, ms_ceil, time};

/// The most leases one multi-read and one `multi` carry: a slot's path and record take well
/// under 200 bytes, so a request stays far below ZooKeeper's `jute.maxbuffer` (1 MiB).
const RENEW_BATCH: usize = 2_000;

/// How often a batch reads again after its write was refused because a node changed since
/// the read or this client's last write (the changed lease is then judged afresh), before it
/// answers a transient error.
const RENEW_ROUNDS: usize = 3;

/// One lease's write in a batch: its index, path, new record and the version it expects.
type Renewal = (usize, String, Record, i32);

impl Protocol {
    /// Extends every lease of `leases` still held to its TTL from the ensemble's now: the
    /// answer for each, in order. A lease named twice is renewed once.
    pub(crate) async fn extend_many(
        &self,
        leases: &[(Lease, Duration)],
    ) -> StoreResult<Vec<Extension>> {
        let mut first = HashMap::new();
        let of: Vec<usize> = leases
            .iter()
            .enumerate()
            .map(|(i, (l, _))| *first.entry((&l.lock, l.slot, l.token)).or_insert(i))
            .collect();
        let distinct: Vec<usize> = (0..leases.len()).filter(|&i| of[i] == i).collect();
        let mut answers = vec![Extension::NotHeld; leases.len()];
        for chunk in distinct.chunks(RENEW_BATCH) {
            self.renew_chunk(leases, chunk.to_vec(), &mut answers)
                .await?;
        }
        Ok(of.iter().map(|&f| answers[f]).collect())
    }

    /// The nodes of the leases of `leases` at `pending`: as this client last wrote them where it
    /// remembers them and `remembered` is true, else read (one multi-read for the rest).
    async fn nodes_of(
        &self,
        leases: &[(Lease, Duration)],
        pending: &[usize],
        remembered: bool,
    ) -> StoreResult<Vec<Option<Node>>> {
        let mut nodes: Vec<Option<Node>> = pending
            .iter()
            .map(|&i| {
                remembered
                    .then(|| self.written.mine(&leases[i].0))
                    .flatten()
            })
            .collect();
        let unknown: Vec<usize> = (0..pending.len()).filter(|&k| nodes[k].is_none()).collect();
        if unknown.is_empty() {
            return Ok(nodes);
        }
        let paths = unknown
            .iter()
            .map(|&k| {
                let lease = &leases[pending[k]].0;
                self.paths.slot(&lease.lock, lease.slot)
            })
            .collect();
        for (&k, found) in unknown.iter().zip(self.read_paths(paths).await?) {
            let slot = leases[pending[k]].0.slot;
            nodes[k] = found.map(|(data, stat)| Node {
                slot,
                record: Record::decode(&data),
                stat,
            });
        }
        Ok(nodes)
    }

    /// Renews the leases of `leases` at `pending`, writing their answers into `answers`. The
    /// first round writes at the versions this client remembers writing (one `multi`, no read);
    /// a round refused because a node changed reads every node it still renews.
    async fn renew_chunk(
        &self,
        leases: &[(Lease, Duration)],
        mut pending: Vec<usize>,
        answers: &mut [Extension],
    ) -> StoreResult<()> {
        for round in 0..=RENEW_ROUNDS {
            let nodes = self.nodes_of(leases, &pending, round == 0).await?;
            let now = self.now()?;
            let renewals: Vec<Renewal> = pending
                .iter()
                .zip(nodes)
                .filter_map(|(&i, found)| {
                    let (lease, ttl) = &leases[i];
                    let node = found?;
                    if !(node.is(lease) && node.live_for_holder(now)) {
                        self.written.forget(lease);
                        return None;
                    }
                    let next = Record {
                        ttl_ms: ms_ceil(*ttl),
                        cap_ms: None,
                        ..node.record?
                    };
                    let path = self.paths.slot(&lease.lock, lease.slot);
                    Some((i, path, next, node.stat.version))
                })
                .collect();
            if renewals.is_empty() {
                return Ok(());
            }
            let writes: Vec<(String, Vec<u8>, i32)> = renewals
                .iter()
                .map(|(_, path, next, version)| (path.clone(), next.encode(), *version))
                .collect();
            let done = self
                .link
                .write("a renewal", |c| {
                    let writes = writes.clone();
                    async move {
                        let mut w = c.new_multi_writer();
                        for (path, data, version) in &writes {
                            w.add_set_data(path, data, Some(*version))?;
                        }
                        match w.commit().await {
                            Ok(results) => Ok(Some(results)),
                            Err(MultiWriteError::OperationFailed {
                                source: Error::BadVersion | Error::NoNode,
                                ..
                            }) => Ok(None),
                            Err(e) => Err(Error::from(e)),
                        }
                    }
                })
                .await?;
            let Some(results) = done else {
                // A node changed since the read: read them again.
                pending = renewals.iter().map(|r| r.0).collect();
                continue;
            };
            for ((i, _, next, _), result) in renewals.into_iter().zip(&results) {
                if let Some(stat) = written_stat(Some(result)) {
                    self.link.clock.observe(stat.mtime);
                    answers[i] = Extension::Extended {
                        expires_at: time(stat.mtime.saturating_add(next.ttl_ms)),
                    };
                    let lease = &leases[i].0;
                    let node = Node {
                        slot: lease.slot,
                        record: Some(next),
                        stat,
                    };
                    self.written.refresh(lease, node);
                }
            }
            return Ok(());
        }
        Err(StoreError::transient(
            "the leases kept changing during a renewal; try again",
        ))
    }
}
