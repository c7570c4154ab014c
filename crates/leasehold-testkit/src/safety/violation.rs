//! What the safety checker reports as a violation.

use std::fmt;
use std::time::Duration;

/// One holder inside a resource, as named in a [`Violation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visitor {
    /// The holder's id (node id of the contender).
    pub holder: String,
    /// The lease's slot.
    pub slot: u32,
    /// The lease's fence.
    pub fence: u64,
}

impl fmt::Display for Visitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (slot {}, fence {})",
            self.holder, self.slot, self.fence
        )
    }
}

/// A breach of the lease contract seen by a [`FencedResource`](super::FencedResource) or an
/// [`Occupancy`](super::Occupancy). `at` is the time since the resource was created.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// More holders were inside at once than the lock allows, all believing their leases valid.
    Overlap {
        /// The resource.
        resource: String,
        /// How many holders the lock allows (1 for single-leader locks).
        capacity: usize,
        /// The holders inside whose leases were valid, the newcomer last.
        inside: Vec<Visitor>,
        /// When.
        at: Duration,
    },
    /// A write was rejected as stale while its holder still believed its lease valid: someone
    /// with a higher fence had written during that holder's lease.
    StaleWriteWhileValid {
        /// The resource.
        resource: String,
        /// The rejected holder.
        visitor: Visitor,
        /// The highest fence accepted before.
        highest: u64,
        /// When.
        at: Duration,
    },
    /// A group lease named a slot outside `0..slots`.
    SlotOutOfRange {
        /// The lock.
        resource: String,
        /// The holder given the bad slot.
        visitor: Visitor,
        /// The number of slots asked for.
        slots: usize,
        /// When.
        at: Duration,
    },
    /// Two acquisitions of the same lock (and slot) carried the same fence.
    DuplicateFence {
        /// The resource.
        resource: String,
        /// The earlier holder of the fence.
        first: String,
        /// The later one.
        second: Visitor,
        /// When.
        at: Duration,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Overlap {
                resource,
                capacity,
                inside,
                at,
            } => {
                write!(
                    f,
                    "{resource} at {at:?}: {} valid holders inside (at most {capacity}):",
                    inside.len()
                )?;
                for v in inside {
                    write!(f, " {v};")?;
                }
                Ok(())
            }
            Self::StaleWriteWhileValid {
                resource,
                visitor,
                highest,
                at,
            } => write!(
                f,
                "{resource} at {at:?}: write by {visitor} rejected (highest fence {highest}) while its lease was believed valid"
            ),
            Self::SlotOutOfRange {
                resource,
                visitor,
                slots,
                at,
            } => write!(
                f,
                "{resource} at {at:?}: {visitor} was granted a slot outside 0..{slots}"
            ),
            Self::DuplicateFence {
                resource,
                first,
                second,
                at,
            } => write!(
                f,
                "{resource} at {at:?}: fence {} issued to {first} and again to {second}",
                second.fence
            ),
        }
    }
}
