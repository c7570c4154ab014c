//! Letting go: freeing, in the background, a lease this elector no longer wants but may still
//! hold, through transient store errors.
//!
//! Three paths leave such a lease: a release that failed with a transient error (the lock would
//! otherwise stay taken until the lease's expiry), a grant that arrived after its caller stopped
//! waiting, and an acquisition attempt answered with a transient error that the store applied
//! all the same (the answer was lost, or the connection dropped after the commit). The first two
//! know the lease; for the third only the token is known, so its lease is looked for among the
//! lock's holders recorded with this elector's node id and released with that token — a
//! release the store grants only to the token's own lease, so a sibling task's lease under the
//! same node id is never touched. Nothing is acquired to find out: a lock that the attempt did
//! not take stays free for others.
//!
//! Each is one counted cleanup task ([`Cleanup`]), so the stop paths wait for it; it retries
//! transient errors with growing pauses for at most [`LET_GO_PATIENCE`] and never past the
//! lease's end, after which the lease ends at its expiry as before.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::{Instant, sleep, timeout_at};
use tracing::{debug, warn};

use crate::cleanup::Cleanup;
use crate::error::StoreResult;
use crate::limits::LET_GO_PATIENCE;
use crate::name::LockName;
use crate::store::contract::LeaseStore;
use crate::store::lease::{Lease, Release, Token};

/// The first pause between tries; each following one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_millis(800);

/// A lease to let go of.
pub(crate) enum Unwanted {
    /// A lease whose grant was read, released with `linger` (less the time since, so a retry
    /// never keeps the lock longer than the first release would have).
    Lease { lease: Lease, linger: Duration },
    /// The live slot of `lock` (among `slots`) that `token` holds, if it holds one: an
    /// acquisition attempt answered with an error may have been granted it. Looked for among
    /// the holders recorded with `owner`.
    Token {
        lock: LockName,
        slots: u32,
        owner: Arc<str>,
        token: Token,
    },
}

impl Unwanted {
    fn lock(&self) -> &LockName {
        match self {
            Self::Lease { lease, .. } => &lease.lock,
            Self::Token { lock, .. } => lock,
        }
    }

    /// Reports that letting go failed for `why`: a warning for a lease known to be granted, a
    /// debug line for a token that may hold nothing (a campaign through a long outage lets go
    /// of one every half lease).
    fn given_up(&self, why: &dyn std::fmt::Display) {
        match self {
            Self::Lease { lease, .. } => {
                warn!(lock = %lease.lock, slot = lease.slot, error = %why, "could not release a lease this elector no longer wants; it ends at its expiry");
            }
            Self::Token { lock, .. } => {
                debug!(lock = %lock, error = %why, "could not free the lease an attempt answered with an error may have been granted; if it was, it ends at its expiry");
            }
        }
    }
}

/// Lets go of `unwanted` in a cleanup task of `cleanup`, trying until `ends` (when the lease
/// ends, as far as this process can tell) or for [`LET_GO_PATIENCE`], whichever comes first.
pub(crate) fn release_in_background(
    store: &Arc<dyn LeaseStore>,
    cleanup: &Cleanup,
    unwanted: Unwanted,
    ends: Instant,
) {
    let Ok(handle) = Handle::try_current() else {
        warn!(lock = %unwanted.lock(), "no runtime to free a lease this elector no longer wants; it ends at its expiry");
        return;
    };
    let store = Arc::clone(store);
    cleanup.spawn_on(&handle, async move {
        until_done(&*store, &unwanted, ends).await;
    });
}

async fn until_done(store: &dyn LeaseStore, unwanted: &Unwanted, ends: Instant) {
    let started = Instant::now();
    let give_up_at = ends.min(started + LET_GO_PATIENCE);
    let mut pause = FIRST_PAUSE;
    loop {
        let error = match timeout_at(give_up_at, once(store, unwanted, started.elapsed())).await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(_) => {
                unwanted.given_up(&"the store did not answer in time");
                return;
            }
        };
        if !error.is_transient() || Instant::now() + pause >= give_up_at {
            unwanted.given_up(&error);
            return;
        }
        debug!(lock = %unwanted.lock(), error = %error, "freeing an unwanted lease failed; retrying");
        sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// One try; `Ok` once `unwanted` is not held (released now, or no longer held).
async fn once(store: &dyn LeaseStore, unwanted: &Unwanted, since: Duration) -> StoreResult<()> {
    match unwanted {
        Unwanted::Lease { lease, linger } => {
            store.release(lease, linger.saturating_sub(since)).await?;
            debug!(lock = %lease.lock, slot = lease.slot, "released an unwanted lease");
            Ok(())
        }
        Unwanted::Token {
            lock,
            slots,
            owner,
            token,
        } => {
            let state = store.state(lock, *slots).await?;
            for holder in state.holders.iter().filter(|h| *h.owner == **owner) {
                let lease = Lease {
                    lock: lock.clone(),
                    slot: holder.slot,
                    owner: holder.owner.clone(),
                    token: *token,
                    fence: holder.fence,
                    acquired_at: holder.acquired_at,
                    expires_at: holder.expires_at,
                    period: None,
                };
                if store.release(&lease, Duration::ZERO).await? == Release::Released {
                    debug!(lock = %lock, slot = holder.slot, fence = holder.fence,
                        "released a lease granted to an attempt answered with an error");
                    return Ok(());
                }
            }
            Ok(())
        }
    }
}
