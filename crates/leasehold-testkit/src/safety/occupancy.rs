//! Enter/exit tracking: who is inside a protected section, and whether they may be.

use std::sync::{Mutex, MutexGuard};

use leasehold::LeaderContext;
use tokio::time::Instant;

use super::violation::{Violation, Visitor};

/// Tracks the holders inside a protected section and records a [`Violation::Overlap`] whenever more
/// than `capacity` of them are inside at once while all believe their leases valid.
///
/// A holder whose lease is already lost (its [`LeaderContext::is_lost`] is true) may still be
/// inside — the core lets an action finish unless `cancel_on_lost` is set — and does not count:
/// the contract is only that two holders never both *believe* they hold the lock. Belief only
/// ever goes from valid to lost, so checking when someone enters catches every overlap.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_testkit::safety::Occupancy;
///
/// let room = Occupancy::new("room", 1);
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("room").await?.elected().expect("free");
/// {
///     let _visit = room.enter("node-a", &guard.context());
///     assert_eq!(room.inside(), 1);
/// }
/// assert_eq!(room.inside(), 0);
/// assert!(room.violations().is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Occupancy {
    name: String,
    capacity: usize,
    started: Instant,
    state: Mutex<OccupancyState>,
}

#[derive(Debug, Default)]
struct OccupancyState {
    next_id: u64,
    inside: Vec<Occupant>,
    max_inside: usize,
    violations: Vec<Violation>,
}

#[derive(Debug)]
struct Occupant {
    id: u64,
    visitor: Visitor,
    ctx: LeaderContext,
}

impl Occupancy {
    /// A section named `name` that at most `capacity` valid holders may be inside at once.
    pub fn new(name: impl Into<String>, capacity: usize) -> Self {
        Self {
            name: name.into(),
            capacity,
            started: Instant::now(),
            state: Mutex::new(OccupancyState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, OccupancyState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The section's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many holders may be inside at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Time since the section was created (the `at` of violations).
    pub(crate) fn since_start(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Enters on behalf of `holder`, whose lease is `ctx`; leaving is dropping the returned
    /// [`Visit`]. Records an overlap if this makes more than `capacity` valid holders inside.
    pub fn enter(&self, holder: &str, ctx: &LeaderContext) -> Visit<'_> {
        let lease = ctx.lease();
        let visitor = Visitor {
            holder: holder.to_owned(),
            slot: lease.slot,
            fence: lease.fence,
        };
        let at = self.since_start();
        let mut st = self.state();
        let id = st.next_id;
        st.next_id += 1;
        st.inside.push(Occupant {
            id,
            visitor,
            ctx: ctx.clone(),
        });
        st.max_inside = st.max_inside.max(st.inside.len());
        if st.inside.len() > self.capacity {
            let valid: Vec<Visitor> = st
                .inside
                .iter()
                .filter(|o| !o.ctx.is_lost())
                .map(|o| o.visitor.clone())
                .collect();
            if valid.len() > self.capacity {
                st.violations.push(Violation::Overlap {
                    resource: self.name.clone(),
                    capacity: self.capacity,
                    inside: valid,
                    at,
                });
            }
        }
        Visit {
            occupancy: self,
            id,
        }
    }

    fn leave(&self, id: u64) {
        self.state().inside.retain(|o| o.id != id);
    }

    /// Holders inside now.
    pub fn inside(&self) -> usize {
        self.state().inside.len()
    }

    /// The most holders that were ever inside at once (valid or not).
    pub fn max_inside(&self) -> usize {
        self.state().max_inside
    }

    /// The overlaps recorded so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.state().violations.clone()
    }

    pub(crate) fn record(&self, violation: Violation) {
        self.state().violations.push(violation);
    }
}

/// A holder's stay inside an [`Occupancy`] or [`FencedResource`](super::FencedResource); dropping
/// it leaves.
#[derive(Debug)]
#[must_use = "dropping the visit leaves at once"]
pub struct Visit<'a> {
    occupancy: &'a Occupancy,
    id: u64,
}

impl Drop for Visit<'_> {
    fn drop(&mut self) {
        self.occupancy.leave(self.id);
    }
}
