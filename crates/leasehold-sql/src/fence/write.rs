//! `FencedWrite`: the transaction [`SqlFences::fenced`](super::SqlFences::fenced) hands out, its
//! resource's fence already advanced.

use std::ops::{Deref, DerefMut};

use leasehold::fence::ResourceName;
use sqlx::{Database, Transaction};

use super::error::FenceError;
use crate::classify::classify;

/// An open transaction in which `resource`'s fence has been advanced to `fence`: write through
/// `&mut *write` (it dereferences to the `sqlx` connection), then [`commit`](Self::commit).
/// Dropping it without committing rolls everything back, the fence included.
///
/// The fence row stays locked until the transaction ends: a concurrent writer of the same
/// resource waits for it (and is refused if its fence is lower).
#[must_use = "a fenced write is rolled back unless committed"]
pub struct FencedWrite<DB: Database> {
    tx: Transaction<'static, DB>,
    resource: ResourceName,
    fence: u64,
    previous: Option<u64>,
}

impl<DB: Database> std::fmt::Debug for FencedWrite<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedWrite")
            .field("resource", &self.resource)
            .field("fence", &self.fence)
            .field("previous", &self.previous)
            .finish_non_exhaustive()
    }
}

impl<DB: Database> FencedWrite<DB> {
    pub(crate) fn new(
        tx: Transaction<'static, DB>,
        resource: ResourceName,
        fence: u64,
        previous: Option<u64>,
    ) -> Self {
        Self {
            tx,
            resource,
            fence,
            previous,
        }
    }

    /// The resource written.
    pub fn resource(&self) -> &ResourceName {
        &self.resource
    }

    /// The fence this transaction writes under.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The resource's fence before this transaction (`None` for its first write); equal to
    /// [`fence`](Self::fence) when the same holder writes again.
    pub fn previous(&self) -> Option<u64> {
        self.previous
    }

    /// The `sqlx` transaction, for APIs that take one.
    pub fn transaction(&mut self) -> &mut Transaction<'static, DB> {
        &mut self.tx
    }

    /// Commits the fence and your writes together.
    ///
    /// # Errors
    ///
    /// [`FenceError::Store`] when the commit fails (then nothing was kept).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future may leave the commit applied or not.
    pub async fn commit(self) -> Result<(), FenceError> {
        self.tx.commit().await.map_err(|e| classify(e).into())
    }

    /// Rolls back the fence and your writes (dropping the write does the same, later).
    ///
    /// # Errors
    ///
    /// [`FenceError::Store`] when the database cannot be told (it rolls back when the
    /// connection closes).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an interrupted rollback still ends in a rollback.
    pub async fn rollback(self) -> Result<(), FenceError> {
        self.tx.rollback().await.map_err(|e| classify(e).into())
    }
}

impl<DB: Database> Deref for FencedWrite<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.tx
    }
}

impl<DB: Database> DerefMut for FencedWrite<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}
