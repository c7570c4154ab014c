//! `GroupElector`: at most `max_leaders` concurrent holders of a lock.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::elector::election_api;
use crate::engine::Engine;
use crate::error::Result;
use crate::events::Event;
use crate::guard::{LeaderContext, LeaderGuard};
use crate::lease::LockState;
use crate::name::{IntoLockName, NameError};
use crate::options::GroupOptions;
use crate::outcome::RunOutcome;
use crate::store::LeaseStore;
use crate::tenant::Tenant;

/// Group election: up to `max_leaders` nodes hold a lock at once, each in its own slot with its own
/// token and fence. Same API as [`Elector`](crate::Elector).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{GroupElector, GroupOptions, MemoryStore};
///
/// let opts = GroupOptions::builder().max_leaders(2).wait(Duration::ZERO).build()?;
/// let group = GroupElector::new(Arc::new(MemoryStore::new()), opts);
/// let a = group.try_acquire("workers").await?.expect("slot 0");
/// let b = group.try_acquire("workers").await?.expect("slot 1");
/// assert_eq!((a.slot(), b.slot()), (0, 1));
/// assert!(group.try_acquire("workers").await?.is_none());
/// assert_eq!(group.state("workers").await?.available(), 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GroupElector {
    engine: Engine,
    options: Arc<GroupOptions>,
}

impl std::fmt::Debug for GroupElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupElector")
            .field("store", &self.engine.store.describe())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl GroupElector {
    /// A group elector.
    pub fn new(store: Arc<dyn LeaseStore>, options: GroupOptions) -> Self {
        let engine = Engine::new(store, options.election.clone(), options.max_leaders);
        Self {
            engine,
            options: Arc::new(options),
        }
    }

    /// A copy with other options, sharing store and event channel.
    pub fn reconfigured(&self, options: GroupOptions) -> Self {
        Self {
            engine: self
                .engine
                .reconfigured(options.election.clone(), options.max_leaders),
            options: Arc::new(options),
        }
    }

    /// The options.
    pub fn options(&self) -> &GroupOptions {
        &self.options
    }

    /// The most concurrent holders.
    pub fn max_leaders(&self) -> u32 {
        self.options.max_leaders
    }

    fn with_engine(&self, engine: Engine) -> Self {
        Self {
            engine,
            options: Arc::clone(&self.options),
        }
    }

    election_api!();
}
