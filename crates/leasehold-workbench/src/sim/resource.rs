//! The fenced resource the simulated actions write to.

use std::collections::BTreeMap;

use crate::sim::timeline::Resource;

/// A resource that accepts a write only if its fence is at least the highest fence it has
/// accepted: a holder whose lease was taken over writes with a lower fence than its successor,
/// so its writes after the successor's are rejected. Fences are minted per `(lock, slot)`, so
/// each slot is its own fencing domain.
#[derive(Debug, Default)]
pub(crate) struct FencedResource {
    highest: BTreeMap<u32, u64>,
    last_writer: Option<usize>,
    writes: u32,
    rejected: u32,
}

impl FencedResource {
    /// Offers a write by candidate `writer` holding `fence` in `slot`; true if accepted.
    pub(crate) fn write(&mut self, writer: usize, slot: u32, fence: u64) -> bool {
        if leasehold::fence::admits(fence, self.highest.get(&slot).copied()) {
            self.highest.insert(slot, fence);
            self.last_writer = Some(writer);
            self.writes = self.writes.saturating_add(1);
            true
        } else {
            self.rejected = self.rejected.saturating_add(1);
            false
        }
    }

    /// What the frame shows; `names` maps candidate indexes to node ids.
    pub(crate) fn snapshot(&self, names: &[String]) -> Resource {
        Resource {
            highest_fence: self.highest.values().copied().max(),
            last_writer: self.last_writer.and_then(|i| names.get(i).cloned()),
            writes: self.writes,
            rejected: self.rejected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_fence_after_a_higher_one_is_rejected_per_slot() {
        let mut r = FencedResource::default();
        assert!(r.write(0, 0, 1));
        assert!(r.write(1, 0, 2));
        assert!(!r.write(0, 0, 1));
        assert!(r.write(1, 0, 2), "the same fence may write again");
        assert!(r.write(2, 1, 1), "slot 1 has its own fences");
        let names = ["a", "b", "c"].map(String::from);
        let s = r.snapshot(&names);
        assert_eq!(
            (
                s.highest_fence,
                s.last_writer.as_deref(),
                s.writes,
                s.rejected
            ),
            (Some(2), Some("c"), 4, 1)
        );
    }
}
