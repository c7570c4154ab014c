//! Electing: the engine that waits, retries and runs an action under a lease, the `Elector` over
//! it, and the stable leader (`lead`, `leadership`).

pub(crate) mod acquire;
pub(crate) mod elector;
pub(crate) mod engine;
pub(crate) mod guarded_stream;
pub(crate) mod lead;
pub(crate) mod shared;
pub(crate) mod start;
