//! `MemoryStore`: the in-process reference store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::StoreResult;
use crate::lease::{AcquireRequest, Extension, Holder, Lease, LockState, Release, Token};
use crate::limits::{check_slots, deadline_after};
use crate::name::LockName;
use crate::signal::{ReleaseNotifier, ReleaseSignal};
use crate::store::LeaseStore;

/// An in-process store: a map behind a mutex, timed by the tokio clock.
///
/// Because it uses `tokio::time::Instant`, tests and simulations on paused tokio time are
/// deterministic. It wakes waiters on release. Leases are visible only inside this process, so it
/// coordinates tasks, not machines; use it for tests, simulations and single-process services.
/// Fences start at 1 and never repeat while the store lives.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let ran = elector.run_if_leader("job", |_| async { 7 }).await?;
/// assert_eq!(ran, Some(7));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    locks: Mutex<HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>>,
    notifier: ReleaseNotifier,
    epoch: (Instant, SystemTime),
}

#[derive(Debug, Clone)]
struct Row {
    fence: u64,
    holder: Option<Held>,
}

#[derive(Debug, Clone)]
struct Held {
    owner: Arc<str>,
    token: Token,
    acquired_at: Instant,
    expires_at: Instant,
}

impl Held {
    fn live(&self, now: Instant) -> bool {
        self.expires_at > now
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            locks: Mutex::new(HashMap::default()),
            notifier: ReleaseNotifier::default(),
            epoch: (Instant::now(), SystemTime::now()),
        }
    }

    fn wall(&self, at: Instant) -> SystemTime {
        self.epoch.1 + at.saturating_duration_since(self.epoch.0)
    }

    fn with_rows<T>(
        &self,
        f: impl FnOnce(&mut HashMap<LockName, Vec<Row>, foldhash::fast::RandomState>) -> T,
    ) -> T {
        let mut guard = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    fn holder(&self, slot: usize, fence: u64, held: &Held) -> Holder {
        Holder {
            slot: u32::try_from(slot).unwrap_or(u32::MAX),
            owner: String::from(&*held.owner),
            fence,
            acquired_at: self.wall(held.acquired_at),
            expires_at: self.wall(held.expires_at),
        }
    }

    fn lease(&self, lock: &LockName, slot: u32, fence: u64, held: &Held) -> Lease {
        Lease {
            lock: lock.clone(),
            slot,
            owner: String::from(&*held.owner),
            token: held.token,
            fence,
            acquired_at: self.wall(held.acquired_at),
            expires_at: self.wall(held.expires_at),
        }
    }
}

fn slot_index(slot: u32) -> usize {
    usize::try_from(slot).unwrap_or(usize::MAX)
}

#[async_trait]
impl LeaseStore for MemoryStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        let wanted = slot_index(check_slots(req.slots)?);
        let now = Instant::now();
        let granted = self.with_rows(|locks| {
            // Rows exist only for slots ever granted: a lock's vector grows one slot at a time,
            // never to the requested slot count.
            let rows = locks.entry(req.lock.clone()).or_default();
            let used = rows.len().min(wanted);
            if let Some((slot, row)) = rows[..used].iter().enumerate().find(|(_, r)| {
                r.holder
                    .as_ref()
                    .is_some_and(|h| h.token == req.token && h.live(now))
            }) {
                let held = row.holder.as_ref()?;
                return Some((slot, row.fence, held.clone()));
            }
            let free = rows[..used]
                .iter()
                .position(|r| r.holder.as_ref().is_none_or(|h| !h.live(now)));
            let slot = match free {
                Some(slot) => slot,
                None if used < wanted => {
                    rows.push(Row {
                        fence: 0,
                        holder: None,
                    });
                    used
                }
                None => return None,
            };
            let row = rows.get_mut(slot)?;
            row.fence += 1;
            let held = row.holder.insert(Held {
                owner: Arc::clone(&req.owner),
                token: req.token,
                acquired_at: now,
                expires_at: deadline_after(now, req.ttl),
            });
            Some((slot, row.fence, held.clone()))
        });
        Ok(granted.map(|(slot, fence, held)| {
            self.lease(
                &req.lock,
                u32::try_from(slot).unwrap_or(u32::MAX),
                fence,
                &held,
            )
        }))
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let now = Instant::now();
        let extended = self.with_rows(|locks| {
            let held = locks
                .get_mut(&lease.lock)?
                .get_mut(slot_index(lease.slot))?
                .holder
                .as_mut()
                .filter(|h| h.token == lease.token && h.live(now))?;
            held.expires_at = deadline_after(now, ttl);
            Some(held.expires_at)
        });
        Ok(match extended {
            Some(at) => Extension::Extended {
                expires_at: self.wall(at),
            },
            None => Extension::NotHeld,
        })
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let now = Instant::now();
        let freed = self.with_rows(|locks| {
            let row = locks
                .get_mut(&lease.lock)?
                .get_mut(slot_index(lease.slot))?;
            let held = row
                .holder
                .as_mut()
                .filter(|h| h.token == lease.token && h.live(now))?;
            if linger.is_zero() {
                row.holder = None;
                Some(true)
            } else {
                held.expires_at = held.expires_at.min(deadline_after(now, linger));
                Some(false)
            }
        });
        match freed {
            None => Ok(Release::NotHeld),
            Some(freed) => {
                if freed {
                    self.notifier.notify(&lease.lock);
                }
                Ok(Release::Released)
            }
        }
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        let now = Instant::now();
        let holders = self.with_rows(|locks| {
            let Some(rows) = locks.get(lock) else {
                return Vec::new();
            };
            rows.iter()
                .take(slot_index(slots))
                .enumerate()
                .filter_map(|(slot, row)| {
                    let held = row.holder.as_ref().filter(|h| h.live(now))?;
                    Some(self.holder(slot, row.fence, held))
                })
                .collect()
        });
        Ok(LockState {
            lock: lock.clone(),
            slots,
            holders,
        })
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        check_slots(slots)?;
        let now = Instant::now();
        let freed: Vec<Holder> = self.with_rows(|locks| {
            let Some(rows) = locks.get_mut(lock) else {
                return Vec::new();
            };
            rows.iter_mut()
                .take(slot_index(slots))
                .enumerate()
                .filter_map(|(slot, row)| {
                    let held = row.holder.take_if(|h| h.live(now))?;
                    Some(self.holder(slot, row.fence, &held))
                })
                .collect()
        });
        if !freed.is_empty() {
            self.notifier.notify(lock);
        }
        Ok(freed)
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        Some(self.notifier.subscribe(lock))
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "memory".to_owned()
    }
}
