//! `FencedResource`: an in-process stand-in for an external resource that checks fences.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use leasehold::LeaderContext;

use super::occupancy::{Occupancy, Visit};
use super::violation::{Violation, Visitor};

/// A write refused because its fence was lower than one the resource already accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write by {holder} with fence {fence} rejected: fence {highest} was already accepted")]
pub struct Rejected {
    /// The writer.
    pub holder: String,
    /// The writer's fence.
    pub fence: u64,
    /// The highest fence accepted before.
    pub highest: u64,
}

/// A thread-safe, in-process resource protected by one lock (or one slot of a group lock), the
/// way an external system should protect itself with fencing tokens:
///
/// * [`write`](Self::write) rejects any fence lower than the highest already accepted (equal
///   fences are the same holder writing again and are accepted);
/// * [`enter`](Self::enter) tracks who is inside and records a [`Violation`] if two holders are
///   inside at once while both believe their leases valid, or if a fence is issued twice.
///
/// ```
/// use leasehold_testkit::safety::FencedResource;
///
/// let resource = FencedResource::new("ledger");
/// assert!(resource.write(5, "node-a").is_ok());
/// assert!(resource.write(5, "node-a").is_ok());
/// let stale = resource.write(4, "node-b").unwrap_err();
/// assert_eq!((stale.fence, stale.highest), (4, 5));
/// assert_eq!((resource.accepted_writes(), resource.rejected_writes(), resource.highest_fence()), (2, 1, Some(5)));
/// ```
#[derive(Debug)]
pub struct FencedResource {
    occupancy: Occupancy,
    state: Mutex<FenceState>,
}

#[derive(Debug, Default)]
struct FenceState {
    highest: Option<u64>,
    accepted: u64,
    rejected: u64,
    fences_seen: HashMap<u64, String>,
}

impl FencedResource {
    /// A resource named `name` (used in violation reports).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            occupancy: Occupancy::new(name, 1),
            state: Mutex::new(FenceState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, FenceState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        self.occupancy.name()
    }

    /// Accepts a write carrying `fence` unless a higher fence was accepted before.
    pub fn write(&self, fence: u64, holder: &str) -> Result<(), Rejected> {
        let mut st = self.state();
        match st.highest {
            Some(highest) if !leasehold::fence::admits(fence, Some(highest)) => {
                st.rejected += 1;
                Err(Rejected {
                    holder: holder.to_owned(),
                    fence,
                    highest,
                })
            }
            _ => {
                st.highest = Some(fence);
                st.accepted += 1;
                Ok(())
            }
        }
    }

    /// Writes with the fence of `ctx`; a rejection while `ctx` still believes its lease valid is
    /// also recorded as [`Violation::StaleWriteWhileValid`].
    pub fn write_with(&self, holder: &str, ctx: &LeaderContext) -> Result<(), Rejected> {
        let lease = ctx.lease();
        let outcome = self.write(lease.fence, holder);
        if let Err(rejected) = &outcome
            && !ctx.is_lost()
        {
            self.occupancy.record(Violation::StaleWriteWhileValid {
                resource: self.name().to_owned(),
                visitor: Visitor {
                    holder: holder.to_owned(),
                    slot: lease.slot,
                    fence: lease.fence,
                },
                highest: rejected.highest,
                at: self.occupancy.since_start(),
            });
        }
        outcome
    }

    /// Enters on behalf of `holder` holding the lease `ctx` (see [`Occupancy::enter`]); also
    /// records a [`Violation::DuplicateFence`] if another acquisition already entered with the same
    /// fence.
    pub fn enter(&self, holder: &str, ctx: &LeaderContext) -> Visit<'_> {
        let lease = ctx.lease();
        let earlier = self
            .state()
            .fences_seen
            .insert(lease.fence, holder.to_owned());
        if let Some(first) = earlier {
            self.occupancy.record(Violation::DuplicateFence {
                resource: self.name().to_owned(),
                first,
                second: Visitor {
                    holder: holder.to_owned(),
                    slot: lease.slot,
                    fence: lease.fence,
                },
                at: self.occupancy.since_start(),
            });
        }
        self.occupancy.enter(holder, ctx)
    }

    /// Writes accepted so far.
    pub fn accepted_writes(&self) -> u64 {
        self.state().accepted
    }

    /// Writes rejected as stale so far.
    pub fn rejected_writes(&self) -> u64 {
        self.state().rejected
    }

    /// The highest fence accepted.
    pub fn highest_fence(&self) -> Option<u64> {
        self.state().highest
    }

    /// The most holders inside at once (valid or not).
    pub fn max_inside(&self) -> usize {
        self.occupancy.max_inside()
    }

    /// Violations recorded so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.occupancy.violations()
    }
}
