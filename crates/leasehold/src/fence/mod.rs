//! Fences checked at the resource: the pieces every fenced sink shares.
//!
//! A fence protects nothing until the resource it guards checks it. Every sink leasehold ships —
//! SQL tables (`leasehold-sql`), HTTP services (`leasehold-axum`), Redis keys (`leasehold-redis`),
//! DynamoDB items (`leasehold-dynamodb`) — follows one rule, the one [`FenceRegister`] states:
//!
//! > a write carrying fence *f* to resource *r* is accepted only if no write with a fence higher
//! > than *f* was accepted by *r* before; an accepted write records *f* as *r*'s highest fence.
//!
//! Equal fences are the same holder writing again and are accepted. A holder that was paused past
//! its lease (a GC pause, a frozen VM, a stalled disk) and wakes up after its successor wrote is
//! refused with a [`StaleFence`], whatever the holder itself still believes.
//!
//! * [`ResourceName`]: what a fence is checked against (a table row, a key, a route), validated
//!   once at the edge ([`MAX_RESOURCE_NAME_LEN`](crate::limits::MAX_RESOURCE_NAME_LEN)).
//! * [`FenceClaim`]: who writes (lock, slot, fence, token tag), and its HTTP header form
//!   ([`FENCE_HEADER`]).
//! * [`FenceRegister`]: "the highest fence per resource", with [`MemoryFences`] in process and
//!   store-backed registers in the store crates.
//! * [`FencedSink`]: the one shape every shipped sink's adapter takes (write a value under a
//!   holder's fence, read the last value back), so one scenario can drive them all.
//!
//! Fences are per `(lock, slot)`: a resource must be written under one lock (and one slot) only,
//! because fences of different locks or slots are unrelated numbers.

mod claim;
mod register;
mod resource;
mod sink;

pub use claim::{ClaimError, FENCE_HEADER, FenceClaim};
pub use register::{Admission, FenceRegister, MemoryFences, StaleFence, admits};
pub use resource::{ResourceName, ResourceNameError};
pub use sink::{FencedSink, SinkError};
