//! A model of leasehold's lease protocol, explored exhaustively at small sizes by the
//! [stateright](https://docs.rs/stateright) model checker.
//!
//! The store is one linearizable register on the real clock: a lock with one or two slots, its
//! leases, a fence counter per slot (seeded from the clock, forgotten when the idle record is
//! cleaned up) and the period ledger. Electors (two or three) acquire, renew, start a period
//! claim's action, run it, write once to a fenced resource and release; every request and answer
//! may be delayed, lost (before or after the store applied it), retried with the same token or
//! duplicated (a copy the store applies again later); writes land any time later; electors may
//! pause for any time, and their local deadlines may be off by a bounded clock error. An operator
//! may force a release; the lease may change at any moment, the slot count and a schedule's
//! period length and offset between runs. With sessions ([`Setup::sessions`]) the slots are
//! locks of their own and the electors of one process share a session: the store keeps a
//! session record per process that the lock records refer to, one request renews the session
//! and answers for each lease, and an operator forces out one lease by revoking its token in
//! the session record. [`Rules`] selects today's rules or the ones before
//! issue 33, so that the same checker shows the holes those had (see `tests/` and
//! `docs/correctness.md`).
//!
//! [`ShardModel`] checks partition sets beside it: a few shards over two nodes that join, leave,
//! crash, pause and restart, each following the member's rules of `leasehold::partition` (the
//! core's assignment, ported as [`assign`]), under [`properties::shards`]: one owner per shard,
//! rising fences per shard, coverage and balance within a bound of the last change, and no
//! member given more than its even share (a node id counted once).
//! [`ShardRule`] breaks one rule on purpose.
//!
//! ```
//! use leasehold_model::{ShardModel, ShardRule, ShardSetup};
//! use stateright::{Checker, Model};
//!
//! let mut setup = ShardSetup::two_nodes(ShardRule::Today);
//! setup.members = 1; // node 0 alone at the start
//! setup.joins = 1; // node 1 joins at any moment
//! ShardModel::new(setup).checker().spawn_bfs().join().assert_properties();
//! ```
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
mod shards;
mod state;

pub use model::{Action, LeaseModel};
pub use rules::{Ledger, NO_PROCESS, Rules, SessionRule, Setup, ShardRule, ShardSetup};
pub use shards::{
    Believed, HandOver, MAX_SHARDS, MemberSlot, NODES, Node, ShardAction, ShardLease, ShardModel,
    ShardState, ShardStore, Status, assign,
};
pub use state::{
    Accepted, Answer, Attached, Elector, Exchange, Fence, Held, Holding, OnSession, PROCESSES,
    Phase, Process, Record, Request, SLOTS, Session, State, Store, Tick, Token, Write,
};
