//! The runnable examples of [leasehold](https://docs.rs/leasehold), kept in a crate of their own:
//! `cargo run -p leasehold-examples --example nightly_job` builds the library and its own
//! dependencies only, not the test and benchmark tooling the library's examples would pull in
//! as dev-dependencies.
//!
//! | example | what it shows |
//! |---|---|
//! | `nightly_job` | three replicas whose timers fire a second apart: one runs the night's report, the others find it done in the period ledger |
//! | `quickstart` | the async API: `run_if_leader`, a skip while held, `run` with a failing action |
//! | `blocking_quickstart` | the same through `leasehold::blocking` |
//! | `stable_leader` | three replicas `lead` one lock; terms hand over with growing fences |
