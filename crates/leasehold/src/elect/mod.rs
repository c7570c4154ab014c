//! Electing: the `Elector`, the acquisition loop behind every way of getting a lease, running
//! an action under it, and the stable leader (`lead`, `leadership`).

pub(crate) mod acquire;
pub(crate) mod elector;
pub(crate) mod guarded_stream;
pub(crate) mod lead;
pub(crate) mod leading;
pub(crate) mod run;
pub(crate) mod shared;
pub(crate) mod start;
