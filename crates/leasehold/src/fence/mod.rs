//! Fences checked at the resource: the pieces every fenced sink shares.
//!
//! A fence protects nothing until the resource it guards checks it. Every sink leasehold ships —
//! SQL tables (`leasehold-sql`), HTTP services (`leasehold-axum`), Redis keys (`leasehold-redis`),
//! DynamoDB items (`leasehold-dynamodb`), etcd keys (`leasehold-etcd`) — follows one rule, stated
//! once on [`Admission`]: a write is refused when its resource accepted a higher fence before.
//!
//! A holder that was paused past its lease (a GC pause, a frozen VM, a stalled disk) and wakes up after its successor wrote is
//! refused with a [`StaleFence`], whatever the holder itself still believes.
//!
//! * [`ResourceName`]: what a fence is checked against (a table row, a key, a route), validated
//!   once at the edge ([`MAX_RESOURCE_NAME_LEN`](crate::limits::MAX_RESOURCE_NAME_LEN)).
//! * [`FenceClaim`]: who writes (lock, slot, fence, token tag), and its HTTP header form
//!   ([`FENCE_HEADER`]).
//! * [`FenceRegister`]: "the highest fence per resource", with [`MemoryFences`] in process and
//!   store-backed registers in the store crates.
//! * [`FenceRefusal`]: the refusal of a stale fence told apart from a fenced write's other errors,
//!   the same question on every store's error type.
//! * [`FencedSink`]: the one shape every shipped sink's adapter takes (write a value under a
//!   holder's fence, read the last value back), so one scenario can drive them all;
//!   [`sink_answer`] is the answer every adapter gives for a fenced write's outcome.
//!
//! Fences are per `(lock, slot)`: a resource must be written under one lock (and one slot) only,
//! because fences of different locks or slots are unrelated numbers.

mod claim;
mod refusal;
mod register;
mod resource;
mod sink;

pub use claim::{ClaimError, FENCE_HEADER, FenceClaim};
pub use refusal::FenceRefusal;
pub use register::{Admission, FenceRegister, MemoryFences, StaleFence, admits};
pub use resource::{ResourceName, ResourceNameError};
pub use sink::{FencedSink, SinkAnswer, SinkError, sink_answer};
