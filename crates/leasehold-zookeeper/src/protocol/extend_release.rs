//! Extending and releasing a lease: one `set_data` at the version this client last wrote, or,
//! when that version is gone (someone else wrote, or nothing is remembered), a read and then a
//! `set_data` at the version read.

use std::time::Duration;

use leasehold::store::StoreResult;
use leasehold::{
    Lease,
    store::{Extension, Release},
};

use super::{Protocol, written_stat};
use crate::record::{Node, Record, Status, ms_ceil, time};

impl Protocol {
    /// Extends a lease to `ttl` from the ensemble's now, if it has not ended.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        if let Some(node) = self.written.mine(lease)
            && let Some(answer) = self.extend_at(&node, lease, ttl).await?
        {
            return Ok(answer);
        }
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            self.written.forget(lease);
            return Ok(Extension::NotHeld);
        };
        let answer = self.extend_at(&node, lease, ttl).await?;
        Ok(answer.unwrap_or(Extension::NotHeld))
    }

    /// Extends `lease` as `node` shows it: `None` when the node's version changed meanwhile.
    async fn extend_at(
        &self,
        node: &Node,
        lease: &Lease,
        ttl: Duration,
    ) -> StoreResult<Option<Extension>> {
        let now = self.now()?;
        let (true, Some(record)) = (node.is(lease) && node.live_for_holder(now), &node.record)
        else {
            self.written.forget(lease);
            return Ok(Some(Extension::NotHeld));
        };
        let next = Record {
            ttl_ms: ms_ceil(ttl),
            cap_ms: None,
            ..record.clone()
        };
        let written = self
            .write_slot(
                &lease.lock,
                lease.slot,
                Some(node.stat.version),
                &next,
                "an extension",
            )
            .await?;
        Ok(written.map(|stat| {
            let expires_at = time(stat.mtime.saturating_add(next.ttl_ms));
            self.written.refresh(
                lease,
                Node {
                    slot: lease.slot,
                    record: Some(next),
                    stat,
                },
            );
            Extension::Extended { expires_at }
        }))
    }

    /// Releases a lease: marks the slot free, or with `linger` ends it `linger` from now (never
    /// later than it would have ended) and stops its extensions.
    pub(crate) async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let remembered = self.written.take(lease);
        if let Some(node) = remembered
            && let Some(answer) = self.release_at(&node, lease, linger).await?
        {
            return Ok(answer);
        }
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            return Ok(Release::NotHeld);
        };
        let answer = self.release_at(&node, lease, linger).await?;
        Ok(answer.unwrap_or(Release::NotHeld))
    }

    /// Releases `lease` as `node` shows it: `None` when the node's version changed meanwhile.
    async fn release_at(
        &self,
        node: &Node,
        lease: &Lease,
        linger: Duration,
    ) -> StoreResult<Option<Release>> {
        let now = self.now()?;
        let (true, Some(record), Some(end)) = (node.is(lease), &node.record, node.end_ms()) else {
            return Ok(Some(Release::NotHeld));
        };
        let live = node.live_for_holder(now);
        let version = node.stat.version;
        let written = if linger.is_zero() || !live {
            // Freed: with the lock's release node, which wakes its waiters.
            let free = Record {
                status: Status::Free,
                ttl_ms: 0,
                cap_ms: None,
                ..record.clone()
            };
            let path = self.paths.slot(&lease.lock, lease.slot);
            let writes = [(path, free.encode(), version)];
            let results = self
                .write_release("a release", &lease.lock, &writes)
                .await?;
            results.map(|r| {
                if let Some(stat) = written_stat(r.first()) {
                    self.link.clock.observe(stat.mtime);
                }
            })
        } else {
            // Held a while longer: nobody to wake yet.
            let linger = Record {
                status: Status::Linger,
                ttl_ms: ms_ceil(linger),
                cap_ms: Some(end),
                ..record.clone()
            };
            let written = self
                .write_slot(&lease.lock, lease.slot, Some(version), &linger, "a release")
                .await?;
            written.map(drop)
        };
        Ok(written.map(|()| {
            if live {
                Release::Released
            } else {
                Release::NotHeld
            }
        }))
    }
}
