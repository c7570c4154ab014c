//! The leasehold workbench: lease timelines computed by the real [`leasehold::Elector`] (one
//! holder, or N in the group scenario) on a [`leasehold::MemoryStore`] under paused tokio time, and the
//! interactive page that shows them.
//!
//! * [`sim`] runs a scenario and returns its [`sim::Timeline`] (what `leasehold simulate` prints and
//!   `/api/simulate` serves);
//! * [`web`] serves the page (`leasehold workbench`) and the live view of a real store
//!   (`leasehold serve`).

pub mod sim;
pub mod web;
