//! The fenced resource the simulated actions write to.

use std::collections::BTreeMap;

use crate::sim::timeline::{Resource, SlotResource};

/// A resource that accepts a write only if its fence is at least the highest fence it has
/// accepted in the writer's slot: a holder whose lease was taken over writes with a lower fence
/// than its successor, so its writes after the successor's are rejected. Fences are minted per
/// `(lock, slot)`, so each slot is its own fencing domain, and fences of different slots are never
/// compared.
#[derive(Debug, Default)]
pub(crate) struct FencedResource {
    slots: BTreeMap<u32, SlotState>,
    last_writer: Option<usize>,
}

/// One slot's fencing domain; it exists from the slot's first accepted write on.
#[derive(Debug)]
struct SlotState {
    highest: u64,
    last_writer: usize,
    writes: u32,
    rejected: u32,
}

impl FencedResource {
    /// Offers a write by candidate `writer` holding `fence` in `slot`; true if accepted.
    pub(crate) fn write(&mut self, writer: usize, slot: u32, fence: u64) -> bool {
        let accepted = match self.slots.get_mut(&slot) {
            None => {
                self.slots.insert(
                    slot,
                    SlotState {
                        highest: fence,
                        last_writer: writer,
                        writes: 1,
                        rejected: 0,
                    },
                );
                true
            }
            Some(s) if leasehold::fence::admits(fence, Some(s.highest)) => {
                s.highest = fence;
                s.last_writer = writer;
                s.writes = s.writes.saturating_add(1);
                true
            }
            Some(s) => {
                s.rejected = s.rejected.saturating_add(1);
                false
            }
        };
        if accepted {
            self.last_writer = Some(writer);
        }
        accepted
    }

    /// What the frame shows; `names` maps candidate indexes to node ids.
    pub(crate) fn snapshot(&self, names: &[String]) -> Resource {
        let name = |i: usize| names.get(i).cloned().unwrap_or_default();
        let slots: Vec<SlotResource> = self
            .slots
            .iter()
            .map(|(&slot, s)| SlotResource {
                slot,
                highest_fence: s.highest,
                last_writer: name(s.last_writer),
                writes: s.writes,
                rejected: s.rejected,
            })
            .collect();
        Resource {
            last_writer: self.last_writer.map(name),
            writes: slots.iter().fold(0u32, |n, s| n.saturating_add(s.writes)),
            rejected: slots.iter().fold(0u32, |n, s| n.saturating_add(s.rejected)),
            slots,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_fence_after_a_higher_one_is_rejected_within_its_slot_only() {
        let mut r = FencedResource::default();
        assert!(r.write(0, 0, 1));
        assert!(r.write(1, 0, 2));
        assert!(!r.write(0, 0, 1));
        assert!(r.write(1, 0, 2), "the same fence may write again");
        assert!(
            r.write(2, 1, 1),
            "slot 1 has its own fences: 1 < 2 does not matter"
        );
        let names = ["a", "b", "c"].map(String::from);
        let s = r.snapshot(&names);
        assert_eq!(
            (s.last_writer.as_deref(), s.writes, s.rejected),
            (Some("c"), 4, 1)
        );
        let slots: Vec<_> = s
            .slots
            .iter()
            .map(|x| {
                (
                    x.slot,
                    x.highest_fence,
                    x.last_writer.as_str(),
                    x.writes,
                    x.rejected,
                )
            })
            .collect();
        assert_eq!(slots, [(0, 2, "b", 3, 1), (1, 1, "c", 1, 0)]);
    }
}
