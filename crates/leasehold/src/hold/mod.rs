//! Holding a lease: the guard and context the caller sees, the shared cell behind them, the
//! watchdog that renews it, the heartbeat that puts an elector's renewals on one beat, suspend
//! detection for its local deadline, and the register of the leases an elector holds.

pub(crate) mod cell;
pub(crate) mod guard;
pub(crate) mod heartbeat;
pub(crate) mod held;
pub(crate) mod state;
pub(crate) mod suspend;
pub(crate) mod watchdog;
