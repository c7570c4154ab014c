//! The fenced register the contenders write to: the resource a deployment protects, checking
//! fences with the same rule as every leasehold sink — or, with `--no-fence-check`, not at all.

use leasehold::LeaderContext;
use leasehold::fence::{MemoryFences, ResourceName};

use super::history::{History, Op};

/// A register holding the last accepted value.
#[derive(Debug)]
pub(crate) struct Register {
    resource: ResourceName,
    fences: MemoryFences,
    check: bool,
}

impl Register {
    pub(crate) fn new(resource: ResourceName, check: bool) -> Self {
        Self {
            resource,
            fences: MemoryFences::new(),
            check,
        }
    }

    /// Writes `value` with the fence of `ctx`, recording the write (and what the register had
    /// seen before it) in `history` in the same step.
    pub(crate) fn write(
        &self,
        history: &History,
        contender: usize,
        ctx: &LeaderContext,
        value: u64,
    ) {
        let fence = ctx.fence();
        history.record_with(|| {
            let highest_before = self.fences.highest_now(&self.resource);
            let accepted = if self.check {
                self.fences.admit_now(&self.resource, fence).is_admitted()
            } else {
                // No check: every write lands; the highest is kept only for the history.
                let _ = self.fences.admit_now(&self.resource, fence);
                true
            };
            let op = Op::Write {
                contender,
                at_ms: history.now_ms(),
                fence,
                value,
                highest_before,
                accepted,
            };
            (op, ())
        });
    }
}
