//! Holding a lease: the guard and context the caller sees, the shared cell behind them, the
//! watchdog that renews it, and suspend detection for its local deadline.

pub(crate) mod cell;
pub(crate) mod guard;
pub(crate) mod suspend;
pub(crate) mod watchdog;
