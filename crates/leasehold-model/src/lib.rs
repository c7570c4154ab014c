//! A model of leasehold's lease protocol, explored exhaustively at small sizes by the
//! [stateright](https://docs.rs/stateright) model checker.
//!
//! The store is one linearizable register on the real clock: a lock with its lease, fence and
//! period ledger. Electors (two or three) acquire, renew, start a period claim's action, run it
//! and release; every request and answer may be delayed, lost (before or after the store applied
//! it) or repeated (a retry with the same token); electors may pause for any time, and their
//! local deadlines may be off by a bounded clock error. A schedule's period length may change
//! between runs. [`Rules`] selects today's rules or the ones before issue 33, so that the same
//! checker shows the holes those had (see `tests/` and `docs/correctness.md`).
//!
//! ```
//! use leasehold_model::{LeaseModel, Rules, Setup};
//! use stateright::{Checker, Model};
//!
//! let checked = LeaseModel::new(Setup::scheduled(Rules::TODAY, &[3])).checker().spawn_bfs().join();
//! checked.assert_properties();
//! ```

mod model;
pub mod properties;
mod rules;
mod state;

pub use model::{Action, LeaseModel};
pub use rules::{Ledger, Rules, Setup};
pub use state::{
    Answer, Elector, Exchange, Held, Holding, Phase, Record, Request, State, Store, Tick, Token,
};
