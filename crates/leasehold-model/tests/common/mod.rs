//! What every model test does with a checker: run it to completion, print the trace that broke a
//! property, assert that others held.

#![allow(clippy::print_stdout, dead_code)] // the traces are the point of a failure

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use leasehold_model::{ShardState, State};
use stateright::{Checker, Model};

/// A state that prints as one line of a trace.
pub(crate) trait Summary {
    fn summary(&self) -> String;
}

impl Summary for State {
    fn summary(&self) -> String {
        State::summary(self)
    }
}

impl Summary for ShardState {
    fn summary(&self) -> String {
        ShardState::summary(self)
    }
}

/// Checks `model` to completion (breadth first) and returns the checker, having printed the
/// states explored and the time taken.
pub(crate) fn check<M>(model: M) -> impl Checker<M>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq + 'static,
    M::Action: Clone + PartialEq,
{
    let started = Instant::now();
    let checked = model.checker().spawn_bfs().join();
    println!(
        "{} states ({} unique), depth {}, {:.1} s",
        checked.state_count(),
        checked.unique_state_count(),
        checked.max_depth(),
        started.elapsed().as_secs_f64()
    );
    checked
}

/// The trace that breaks `property`, printed, or a panic if the checker found none.
pub(crate) fn found<M>(checked: &impl Checker<M>, property: &'static str)
where
    M: Model,
    M::State: Summary + Clone + PartialEq,
    M::Action: Debug + Clone + PartialEq,
{
    let path = checked
        .discovery(property)
        .unwrap_or_else(|| panic!("the checker did not find `{property}` broken"));
    println!("`{property}` broken by:");
    for (state, action) in path.into_vec() {
        println!("  {}", state.summary());
        if let Some(action) = action {
            println!("      {action:?}");
        }
    }
}

/// Asserts that the checker found none of `kept` broken.
pub(crate) fn kept<M>(checked: &impl Checker<M>, kept: &[&'static str])
where
    M: Model,
    M::State: Clone + PartialEq,
    M::Action: Clone + PartialEq,
{
    for property in kept {
        assert!(checked.discovery(property).is_none(), "`{property}` broken");
    }
}
