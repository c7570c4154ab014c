//! The connection to the ensemble: one lazily opened ZooKeeper session per store, opened again
//! when it expires or closes, and requests with a deadline.

use std::future::Future;
use std::time::Duration;

use leasehold::store::{RequestBudget, StoreResult};
use leasehold::{ErrorKind, store::StoreError};
use tokio::sync::Mutex;
use tokio::time::timeout;
use zookeeper_client::{Client, CreateMode, Error, SessionId};

use crate::classify::{classify, kind_of, needs_new_session, timed_out};
use crate::clock::ServerClock;
use crate::keys::Paths;

/// Where and how to open sessions.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// `host:port,host:port`.
    pub(crate) servers: String,
    /// Digest credentials, if any.
    pub(crate) auth: Option<(String, leasehold::store::Secret)>,
    pub(crate) session_timeout: Duration,
}

/// The ZooKeeper client of a store and its estimate of the ensemble's clock.
pub(crate) struct Link {
    session: Session,
    paths: Paths,
    request_timeout: Duration,
    /// Serialises opening sessions, so concurrent requests share one.
    opening: Mutex<()>,
    /// The current session's client: read on every request, under a plain lock held only to
    /// clone it (requests never wait on an async lock while a session is open).
    client: std::sync::Mutex<Option<Client>>,
    pub(crate) clock: ServerClock,
}

impl Link {
    /// A link to `session.servers`; nothing is contacted until the first request.
    pub(crate) fn new(session: Session, paths: Paths, request_timeout: Duration) -> Self {
        Self {
            session,
            paths,
            request_timeout,
            opening: Mutex::new(()),
            client: std::sync::Mutex::new(None),
            clock: ServerClock::default(),
        }
    }

    /// The client, opening a session first when there is none or it ended (expired, closed,
    /// authentication failed). A new session creates the store's parent nodes if missing and
    /// seeds the clock with one write.
    pub(crate) async fn client(&self) -> StoreResult<Client> {
        if let Some(client) = self.open_client() {
            return Ok(client);
        }
        let _one = self.opening.lock().await;
        // Another request may have opened one while this one waited.
        if let Some(client) = self.open_client() {
            return Ok(client);
        }
        if self.current().is_some() {
            tracing::info!("the ZooKeeper session ended; opening a new one");
        }
        *self.current() = None;
        let client = match timeout(self.request_timeout, self.open()).await {
            Ok(result) => result?,
            Err(_) => return Err(timed_out("the connection", self.request_timeout)),
        };
        *self.current() = Some(client.clone());
        Ok(client)
    }

    /// The slot of the current session's client.
    fn current(&self) -> std::sync::MutexGuard<'_, Option<Client>> {
        // The slot is only ever replaced whole, so a panic elsewhere leaves it usable.
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A clone of the current session's client, if it has one that has not ended.
    fn open_client(&self) -> Option<Client> {
        self.current()
            .as_ref()
            .filter(|c| !c.state().is_terminated())
            .cloned()
    }

    async fn open(&self) -> StoreResult<Client> {
        let mut connector = Client::connector()
            .with_session_timeout(self.session.session_timeout)
            .with_connection_timeout(self.request_timeout);
        if let Some((user, password)) = &self.session.auth {
            let digest = format!("{user}:{}", password.expose());
            connector = connector.with_auth("digest", digest.as_bytes());
        }
        let client = connector
            .connect(&self.session.servers)
            .await
            .map_err(|e| classify("the connection", &e))?;
        self.prepare(&client).await?;
        Ok(client)
    }

    /// Creates `<prefix>/locks` (and its parents) if missing, and writes `<prefix>/clock` to
    /// learn the ensemble's time.
    async fn prepare(&self, client: &Client) -> StoreResult<()> {
        let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        match client.mkdir(&self.paths.locks(), &options).await {
            Ok(()) | Err(Error::NodeExists) => {}
            Err(e) => return Err(classify("creating the store's nodes", &e)),
        }
        let clock = self.paths.clock();
        let stat = match client.set_data(&clock, b"", None).await {
            Ok(stat) => stat,
            Err(Error::NoNode) => match client.create(&clock, b"", &options).await {
                Ok((stat, _)) => stat,
                Err(Error::NodeExists) => client
                    .set_data(&clock, b"", None)
                    .await
                    .map_err(|e| classify("a clock write", &e))?,
                Err(e) => return Err(classify("a clock write", &e)),
            },
            Err(e) => return Err(classify("a clock write", &e)),
        };
        self.clock.observe(stat.mtime);
        Ok(())
    }

    /// Forgets the session `session_id` if it is still the current one, so the next request
    /// opens a session.
    fn forget(&self, session_id: SessionId) {
        let mut slot = self.current();
        if slot.as_ref().is_some_and(|c| c.session_id() == session_id) {
            *slot = None;
        }
    }

    /// The ensemble's time (a lower bound, see [`ServerClock`]), in ms since the epoch.
    pub(crate) fn now_ms(&self) -> StoreResult<i64> {
        self.clock.now_ms().ok_or_else(|| {
            StoreError::transient("no ZooKeeper reply has told the ensemble's time yet")
        })
    }

    /// Runs one write with the request timeout. It is never sent twice: a write whose answer
    /// was lost may have been applied (the core asks again, and the store's reads recognise it).
    pub(crate) async fn write<T, F, Fut>(&self, what: &str, request: F) -> StoreResult<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(what, false, request).await
    }

    /// Runs one read with the request timeout, sending it again within the same budget after a
    /// transient failure (in a new session when the old one ended).
    pub(crate) async fn read<T, F, Fut>(&self, what: &str, request: F) -> StoreResult<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(what, true, request).await
    }

    async fn run<T, F, Fut>(&self, what: &str, resend: bool, mut request: F) -> StoreResult<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let budget = RequestBudget::start(self.request_timeout);
        let late = |total| timed_out(what, total);
        loop {
            let client = match timeout(budget.left(), self.client()).await {
                Ok(client) => client?,
                Err(_) => return Err(late(budget.total())),
            };
            let session_id = client.session_id();
            match timeout(budget.left(), request(client)).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => {
                    if needs_new_session(&e) {
                        self.forget(session_id);
                    }
                    if resend && kind_of(&e) == ErrorKind::Transient && budget.allows_resend() {
                        budget.pause().await;
                        continue;
                    }
                    return Err(classify(what, &e));
                }
                Err(_) => return Err(late(budget.total())),
            }
        }
    }
}
