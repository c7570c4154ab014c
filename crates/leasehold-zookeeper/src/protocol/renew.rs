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
/// the read (the changed lease is then judged afresh), before it answers a transient error.
const RENEW_ROUNDS: usize = 3;

/// One lease's write in a batch: its index, path, new data, the version read, its TTL in ms.
type Renewal = (usize, String, Vec<u8>, i32, i64);

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

    /// Renews the leases of `leases` at `pending`, writing their answers into `answers`.
    async fn renew_chunk(
        &self,
        leases: &[(Lease, Duration)],
        mut pending: Vec<usize>,
        answers: &mut [Extension],
    ) -> StoreResult<()> {
        for _ in 0..RENEW_ROUNDS {
            let paths: Vec<String> = pending
                .iter()
                .map(|&i| self.paths.slot(&leases[i].0.lock, leases[i].0.slot))
                .collect();
            let nodes = self.read_paths(paths.clone()).await?;
            let now = self.now()?;
            let renewals: Vec<Renewal> = pending
                .iter()
                .zip(paths)
                .zip(nodes)
                .filter_map(|((&i, path), found)| {
                    let (lease, ttl) = &leases[i];
                    let (data, stat) = found?;
                    let node = Node {
                        slot: lease.slot,
                        record: Record::decode(&data),
                        stat,
                    };
                    if !(node.is(lease) && node.live_for_holder(now)) {
                        return None;
                    }
                    let next = Record {
                        ttl_ms: ms_ceil(*ttl),
                        cap_ms: None,
                        ..node.record?
                    };
                    Some((i, path, next.encode(), stat.version, next.ttl_ms))
                })
                .collect();
            if renewals.is_empty() {
                return Ok(());
            }
            let writes: Vec<(String, Vec<u8>, i32)> = renewals
                .iter()
                .map(|(_, path, data, version, _)| (path.clone(), data.clone(), *version))
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
            for ((i, .., ttl_ms), result) in renewals.iter().zip(&results) {
                if let Some(stat) = written_stat(Some(result)) {
                    self.link.clock.observe(stat.mtime);
                    answers[*i] = Extension::Extended {
                        expires_at: time(stat.mtime.saturating_add(*ttl_ms)),
                    };
                }
            }
            return Ok(());
        }
        Err(StoreError::transient(
            "the leases kept changing during a renewal; try again",
        ))
    }
}
