//! Extending and releasing a lease: `set_data` at the version read.

use std::time::Duration;

use leasehold::store::StoreResult;
use leasehold::{
    Lease,
    store::{Extension, Release},
};

use super::Protocol;
use crate::record::{Record, Status, ms_ceil, time};

impl Protocol {
    /// Extends a lease to `ttl` from the ensemble's now, if it has not ended.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            return Ok(Extension::NotHeld);
        };
        let now = self.now()?;
        let (true, Some(record)) = (node.is(lease) && node.live_for_holder(now), &node.record)
        else {
            return Ok(Extension::NotHeld);
        };
        let next = Record {
            ttl_ms: ms_ceil(ttl),
            cap_ms: None,
            ..record.clone()
        };
        match self
            .write_slot(
                &lease.lock,
                lease.slot,
                Some(node.stat.version),
                &next,
                "an extension",
            )
            .await?
        {
            Some(stat) => Ok(Extension::Extended {
                expires_at: time(stat.mtime.saturating_add(next.ttl_ms)),
            }),
            None => Ok(Extension::NotHeld),
        }
    }

    /// Releases a lease: marks the slot free, or with `linger` ends it `linger` from now (never
    /// later than it would have ended) and stops its extensions.
    pub(crate) async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            return Ok(Release::NotHeld);
        };
        let now = self.now()?;
        let (true, Some(record), Some(end)) = (node.is(lease), &node.record, node.end_ms()) else {
            return Ok(Release::NotHeld);
        };
        let live = node.live_for_holder(now);
        let next = if linger.is_zero() || !live {
            Record {
                status: Status::Free,
                ttl_ms: 0,
                cap_ms: None,
                ..record.clone()
            }
        } else {
            Record {
                status: Status::Linger,
                ttl_ms: ms_ceil(linger),
                cap_ms: Some(end),
                ..record.clone()
            }
        };
        let written = self
            .write_slot(
                &lease.lock,
                lease.slot,
                Some(node.stat.version),
                &next,
                "a release",
            )
            .await?;
        Ok(if written.is_some() && live {
            Release::Released
        } else {
            Release::NotHeld
        })
    }
}
