//! The peers: what a Rust user would otherwise pick on the same server. On Redis, `rslock`, the
//! most used Rust Redis lock crate (Redlock, one instance here, so its quorum is one); on etcd,
//! etcd's own lock API (the v3lock service's `Lock`/`Unlock`, through etcd-client's
//! `LockClient`). Each is driven the way its users drive it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, LockOptions};
use rslock::LockManager;
use tokio::time::Instant;

use crate::BoxError;

/// The peer of a backend, where it has one.
#[derive(Clone)]
pub(crate) enum Peer {
    /// rslock on Redis.
    Rslock(Rslock),
    /// etcd's v3lock service.
    EtcdLock(Box<EtcdLock>),
}

impl Peer {
    /// The peer's side name in the report.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Rslock(_) => crate::outcome::PEERS[0],
            Self::EtcdLock(_) => crate::outcome::PEERS[1],
        }
    }

    /// One lock and unlock of a resource nobody else uses.
    pub(crate) async fn round_trip(&self, resource: &str) -> Result<(), BoxError> {
        match self {
            Self::Rslock(p) => p.round_trip(resource).await,
            Self::EtcdLock(p) => p.round_trip(resource).await,
        }
    }

    /// One lock attempt that gives up after about a second, the section, unlock: `false` when
    /// the attempt gave up.
    pub(crate) async fn section(
        &self,
        resource: &str,
        section: Duration,
    ) -> Result<bool, BoxError> {
        match self {
            Self::Rslock(p) => p.section(resource, section).await,
            Self::EtcdLock(p) => p.section(resource, section).await,
        }
    }

    /// Hand-off: a holder on one client, a waiter on another; the time from the holder's unlock
    /// until the waiter holds the lock. `waited` is how long the waiter waits before the unlock.
    pub(crate) async fn handoff(
        &self,
        resource: &str,
        waited: Duration,
    ) -> Result<Duration, BoxError> {
        match self {
            Self::Rslock(p) => p.handoff(resource, waited).await,
            Self::EtcdLock(p) => p.handoff(resource, waited).await,
        }
    }
}

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

    /// `lock` on one manager; `acquire_no_guard` (looping over `lock()`) on the other.
    async fn handoff(&self, resource: &str, waited: Duration) -> Result<Duration, BoxError> {
        let ttl = Duration::from_secs(30);
        let held = self
            .manager
            .lock(resource.as_bytes(), ttl)
            .await
            .map_err(|e| format!("rslock lock: {e:?}"))?;
        let waiter = self.other.clone();
        let name = resource.to_owned();
        let task = tokio::spawn(async move {
            let taken = waiter.acquire_no_guard(name.as_bytes(), ttl).await;
            (Instant::now(), taken)
        });
        tokio::time::sleep(waited).await;
        let released = Instant::now();
        self.manager.unlock(&held).await;
        let (at, taken) = task.await?;
        self.other
            .unlock(&taken.map_err(|e| format!("rslock acquire: {e:?}"))?)
            .await;
        Ok(at - released)
    }
}

/// The TTL of the etcd peer's session leases: longer than any run, so no keep-alive traffic is
/// measured (a crashed bench leaves its leases to expire after it).
const ETCD_SESSION_TTL_SECS: i64 = 600;

/// Where the etcd peer's lock names live.
const V3LOCK_PREFIX: &str = "leasehold-bench-v3lock/";

/// etcd's v3lock service (`Lock`/`Unlock`) through etcd-client, as Go's `concurrency.Mutex`
/// users drive it: each caller holds a session — an etcd lease granted once — and `Lock(name,
/// lease)` waits (server-side, through a watch on the previous waiter's key) until the caller's
/// key is the oldest under `name`; `Unlock(key)` deletes it. v3lock keys are `name/<lease id>`, so
/// two concurrent callers must not share a session: sessions are pooled, one per concurrent
/// caller, granted on first use. Two clients, one per "process" where a scenario needs two.
#[derive(Clone)]
pub(crate) struct EtcdLock {
    client: Client,
    other: Client,
    sessions: Arc<Mutex<Vec<i64>>>,
}

/// A session lease borrowed from the pool; returned by [`EtcdLock::put_back`].
struct Session(i64);

impl EtcdLock {
    /// Connects two clients to `endpoints` (`host:port[,host:port…]`).
    pub(crate) async fn connect(endpoints: &[String]) -> Result<Self, BoxError> {
        Ok(Self {
            client: Client::connect(endpoints, None).await?,
            other: Client::connect(endpoints, None).await?,
            sessions: Arc::new(Mutex::new(Vec::new())),
        })
    }

    async fn session(&self, client: &Client) -> Result<Session, BoxError> {
        let pooled = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop();
        if let Some(id) = pooled {
            return Ok(Session(id));
        }
        let granted = client
            .clone()
            .lease_grant(ETCD_SESSION_TTL_SECS, None)
            .await?;
        Ok(Session(granted.id()))
    }

    fn put_back(&self, session: Session) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(session.0);
    }

    /// `Lock` with a session, returning the lock key.
    async fn lock(client: &Client, resource: &str, session: &Session) -> Result<Vec<u8>, BoxError> {
        let held = client
            .clone()
            .lock(
                format!("{V3LOCK_PREFIX}{resource}"),
                Some(LockOptions::new().with_lease(session.0)),
            )
            .await?;
        Ok(held.key().to_vec())
    }

    /// `Lock` + `Unlock` of a resource nobody else uses.
    async fn round_trip(&self, resource: &str) -> Result<(), BoxError> {
        let session = self.session(&self.client).await?;
        let key = Self::lock(&self.client, resource, &session).await?;
        self.client.clone().unlock(key).await?;
        self.put_back(session);
        Ok(())
    }

    /// `Lock` with a 1 s deadline (a cancelled `Lock` removes its waiter key on the server), the
    /// section, `Unlock`.
    async fn section(&self, resource: &str, section: Duration) -> Result<bool, BoxError> {
        let session = self.session(&self.client).await?;
        let locked = tokio::time::timeout(
            Duration::from_secs(1),
            Self::lock(&self.client, resource, &session),
        )
        .await;
        let ran = match locked {
            Ok(key) => {
                let key = key?;
                tokio::time::sleep(section).await;
                self.client.clone().unlock(key).await?;
                true
            }
            Err(_) => false,
        };
        // A session whose `Lock` was cancelled is not reused: its waiter key may linger until
        // the server has seen the cancellation.
        if ran {
            self.put_back(session);
        }
        Ok(ran)
    }

    /// The holder locks on one client; the waiter's `Lock` on the other client waits on the
    /// server until the holder's `Unlock`.
    async fn handoff(&self, resource: &str, waited: Duration) -> Result<Duration, BoxError> {
        let mine = self.session(&self.client).await?;
        let theirs = self.session(&self.other).await?;
        let held = Self::lock(&self.client, resource, &mine).await?;
        let other = self.other.clone();
        let name = format!("{V3LOCK_PREFIX}{resource}");
        let lease = theirs.0;
        let task = tokio::spawn(async move {
            let taken = other
                .clone()
                .lock(name, Some(LockOptions::new().with_lease(lease)))
                .await;
            (Instant::now(), taken)
        });
        tokio::time::sleep(waited).await;
        let released = Instant::now();
        self.client.clone().unlock(held).await?;
        let (at, taken) = task.await?;
        self.other.clone().unlock(taken?.key().to_vec()).await?;
        self.put_back(mine);
        self.put_back(theirs);
        Ok(at - released)
    }
}
