//! The peer: `rslock`, the most used Rust Redis lock crate (Redlock, one instance here, so its
//! quorum is one), driven the way its users drive it.

use std::time::Duration;

use rslock::LockManager;

use crate::BoxError;

/// Two rslock managers on one server: one per "process" where a scenario needs two.
#[derive(Clone)]
pub(crate) struct Rslock {
    pub(crate) manager: LockManager,
    pub(crate) other: LockManager,
}

impl Rslock {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            manager: LockManager::new(vec![url.to_owned()]),
            other: LockManager::new(vec![url.to_owned()]),
        }
    }

    /// `lock` (SET NX PX) and `unlock` (compare-and-delete script) of a resource nobody else uses.
    pub(crate) async fn round_trip(&self, resource: &str) -> Result<(), BoxError> {
        let lock = self
            .manager
            .lock(resource.as_bytes(), Duration::from_secs(30))
            .await
            .map_err(|e| format!("rslock lock: {e:?}"))?;
        self.manager.unlock(&lock).await;
        Ok(())
    }

    /// One `lock()` (which retries 3 × 0–200 ms by itself), the section, `unlock`: `false` when
    /// `lock()` gave up.
    pub(crate) async fn section(
        &self,
        resource: &str,
        section: Duration,
    ) -> Result<bool, BoxError> {
        match self
            .manager
            .lock(resource.as_bytes(), Duration::from_secs(1))
            .await
        {
            Ok(lock) => {
                tokio::time::sleep(section).await;
                self.manager.unlock(&lock).await;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }
}
