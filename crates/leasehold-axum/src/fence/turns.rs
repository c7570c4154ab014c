//! One request per resource at a time: an async mutex per resource, forgotten when idle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use leasehold::fence::ResourceName;
use tokio::sync::OwnedMutexGuard;

/// The resources with a request inside (or waiting for) the fenced service.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    entries: Mutex<HashMap<ResourceName, Entry>>,
}

/// A resource's mutex and how many [`Turn`]s (holding or waiting) use it.
#[derive(Debug)]
struct Entry {
    mutex: Arc<tokio::sync::Mutex<()>>,
    users: usize,
}

impl Turns {
    fn entries(&self) -> MutexGuard<'_, HashMap<ResourceName, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until no other request for `resource` holds its turn (first come, first served),
    /// and returns this request's turn, held until it is dropped.
    ///
    /// Cancel safety: dropping the future gives up the place in line and forgets the resource
    /// if nobody else uses it.
    pub(crate) async fn take(self: &Arc<Self>, resource: &ResourceName) -> Turn {
        let mutex = {
            let mut entries = self.entries();
            let entry = entries.entry(resource.clone()).or_insert_with(|| Entry {
                mutex: Arc::default(),
                users: 0,
            });
            entry.users += 1;
            Arc::clone(&entry.mutex)
        };
        // Made before waiting, so that a dropped wait also leaves.
        let mut turn = Turn {
            turns: Arc::clone(self),
            resource: resource.clone(),
            guard: None,
        };
        turn.guard = Some(mutex.lock_owned().await);
        turn
    }

    /// How many resources have a request holding or waiting for a turn.
    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }

    fn leave(&self, resource: &ResourceName) {
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(resource) {
            entry.users = entry.users.saturating_sub(1);
            if entry.users == 0 {
                entries.remove(resource);
            }
        }
    }
}

/// A request's exclusive turn on one resource; the next request's turn starts when it drops.
#[derive(Debug)]
pub(crate) struct Turn {
    turns: Arc<Turns>,
    resource: ResourceName,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.turns.leave(&self.resource);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_second_turn_waits_and_idle_resources_are_forgotten() {
        let turns = Arc::new(Turns::default());
        let (a, b) = (
            ResourceName::new("a").unwrap(),
            ResourceName::new("b").unwrap(),
        );
        let first = turns.take(&a).await;
        let other = turns.take(&b).await; // another resource: no wait
        assert_eq!(turns.len(), 2);
        let second = turns.take(&a);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending());
        drop(first);
        let second = second.await;
        drop((second, other));
        assert_eq!(turns.len(), 0);
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_no_entry_behind() {
        let turns = Arc::new(Turns::default());
        let a = ResourceName::new("a").unwrap();
        let first = turns.take(&a).await;
        {
            let waiting = turns.take(&a);
            tokio::pin!(waiting);
            assert!(futures::poll!(waiting.as_mut()).is_pending());
        } // dropped while waiting
        drop(first);
        assert_eq!(turns.len(), 0);
    }
}
