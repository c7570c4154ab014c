//! `Target`: one opened backend — the store leasehold drives, its floor on the same client, the
//! peer where one exists — and new clients of it for scenarios that need several.

use std::sync::Arc;

use leasehold::{LeaseStore, LockName, MemoryStore, store::Token};

use crate::BoxError;
use crate::backend::{Backend, open_client};
use crate::floor::{self, Floor};
use crate::peer::{EtcdLock, Peer, Rslock};

/// One backend, opened.
pub(crate) struct Target {
    pub(crate) backend: Backend,
    pub(crate) url: String,
    /// The store the elector drives.
    pub(crate) store: Arc<dyn LeaseStore>,
    /// The floor, on the same client as `store`.
    pub(crate) floor: Floor,
    /// The peer: rslock on Redis, etcd's lock API on etcd.
    pub(crate) peer: Option<Peer>,
    /// The memory backend's one instance (every "client" of it).
    memory: Arc<MemoryStore>,
    /// Makes lock names unique to this run.
    run: String,
}

impl Target {
    pub(crate) async fn open(backend: Backend, url: &str) -> Result<Self, BoxError> {
        let memory = Arc::new(MemoryStore::new());
        let (store, floor) = floor::open(backend, url, &memory).await?;
        Ok(Self {
            backend,
            url: url.to_owned(),
            store,
            floor,
            peer: match backend {
                Backend::Redis => Some(Peer::Rslock(Rslock::new(url))),
                Backend::Etcd => Some(Peer::EtcdLock(Box::new(
                    EtcdLock::connect(&hosts(url)).await?,
                ))),
                _ => None,
            },
            memory,
            run: Token::random().to_hex()[..12].to_owned(),
        })
    }

    /// A new client of the same backend with its own connections, as another process would have.
    pub(crate) async fn client(&self) -> Result<Arc<dyn LeaseStore>, BoxError> {
        self.client_at(&self.url).await
    }

    /// A new client at another URL of the same server (through the fault proxy, say).
    pub(crate) async fn client_at(&self, url: &str) -> Result<Arc<dyn LeaseStore>, BoxError> {
        open_client(self.backend, url, &self.memory).await
    }

    /// A lock name unique to this run, scenario, side and index.
    pub(crate) fn lock(&self, what: &str, i: usize) -> Result<LockName, BoxError> {
        Ok(LockName::new(self.resource(what, i))?)
    }

    /// The same, as a plain string (for the peers).
    pub(crate) fn resource(&self, what: &str, i: usize) -> String {
        format!("bench-{}-{what}-{i}", self.run)
    }
}

/// The hosts of a `scheme://[user@]host:port[,host:port…][/path][?…]` URL (`host:port`), as
/// etcd-client takes its endpoints.
pub(crate) fn hosts(url: &str) -> Vec<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hosts = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    hosts.split(',').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn etcd_endpoints_come_from_the_url() {
        assert_eq!(
            super::hosts("etcd://u:p@127.0.0.1:23790,127.0.0.1:23791/bench?x=1"),
            ["127.0.0.1:23790", "127.0.0.1:23791"]
        );
        assert_eq!(super::hosts("etcd://h:1"), ["h:1"]);
    }
}
