//! The connection to the cluster: one lazily connected etcd client over every endpoint, and
//! requests with a deadline that fail over to another endpoint when refused.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, KvClient, TlsOptions};
use leasehold::ErrorKind;
use leasehold::store::{RequestBudget, StoreResult};
use tokio::sync::OnceCell;
use tokio::time::timeout;

use crate::classify::{classify, kind_of, never_applied, timed_out};
use crate::options::EtcdOptions;

/// HTTP/2 pings while a stream (a watch, a keep-alive) is open, so a member that vanished under
/// it is noticed. etcd answers pings more often than every 5 s, or pings on a connection without
/// streams, with GOAWAY ("too many pings"), so pings are 10 s apart and only while streams run;
/// requests themselves are bounded by the request timeout.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// The TLS settings for `etcds://`: the system roots, plus the configured CA and client identity.
pub(crate) fn tls_options(options: &EtcdOptions) -> Result<TlsOptions, String> {
    let read = |what: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
    };
    let mut tls = TlsOptions::new().with_native_roots();
    if let Some(ca) = &options.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read("ca_file", ca)?));
    }
    if let (Some(cert), Some(key)) = (&options.cert_file, &options.key_file) {
        tls = tls.identity(Identity::from_pem(
            read("cert_file", cert)?,
            read("key_file", key)?,
        ));
    }
    Ok(tls)
}

/// `etcds://` needs a rustls crypto provider; when the build enables several, none is chosen
/// automatically, so pick ring unless the application installed one.
pub(crate) fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The etcd client of a store.
pub(crate) struct Link {
    endpoints: Vec<String>,
    connect: ConnectOptions,
    client: OnceCell<Client>,
    request_timeout: Duration,
}

impl Link {
    /// A link to `endpoints`; nothing is contacted until the first request.
    pub(crate) fn new(
        endpoints: Vec<String>,
        connect: ConnectOptions,
        request_timeout: Duration,
        connect_timeout: Duration,
    ) -> Self {
        let connect = connect
            .with_connect_timeout(connect_timeout)
            .with_keep_alive(KEEP_ALIVE_INTERVAL, request_timeout)
            .with_keep_alive_while_idle(false)
            // A member cut off from the majority answers "no leader" at once instead of
            // holding requests until they time out; the request is then sent elsewhere.
            .with_require_leader(true);
        Self {
            endpoints,
            connect,
            client: OnceCell::new(),
            request_timeout,
        }
    }

    /// A link on a client the application built.
    pub(crate) fn from_client(client: Client, request_timeout: Duration) -> Self {
        Self {
            endpoints: Vec::new(),
            connect: ConnectOptions::new(),
            client: OnceCell::new_with(Some(client)),
            request_timeout,
        }
    }

    /// The per-request budget.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The client, connected on first use (with credentials, that authenticates).
    pub(crate) async fn client(&self) -> StoreResult<Client> {
        Ok(self.connected().await?.clone())
    }

    /// The client itself, connected on first use: requests clone only the part they use (a
    /// whole `Client` is nine gRPC clients, each a channel handle).
    async fn connected(&self) -> StoreResult<&Client> {
        self.client
            .get_or_try_init(|| async {
                let connecting = Client::connect(&self.endpoints, Some(self.connect.clone()));
                match timeout(self.request_timeout, connecting).await {
                    Ok(Ok(client)) => Ok(client),
                    Ok(Err(e)) => Err(classify(e)),
                    Err(_) => Err(timed_out("the connection", self.request_timeout)),
                }
            })
            .await
    }

    /// Runs one request of the KV service that may take effect twice (a transaction that is a
    /// compare-and-swap) with the request timeout. It is sent again, within the same budget, only
    /// when it was certainly not applied (connection refused, member without a leader); the
    /// balanced channel picks the member afresh, so it fails over. The request gets only the
    /// client's KV part (one gRPC client to clone, not the whole client's nine): it carries the
    /// store's acquisitions and releases.
    pub(crate) async fn call_kv<T, F, Fut>(&self, what: &str, request: F) -> StoreResult<T>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.run(what, Resend::NotApplied, Client::kv_client, request)
            .await
    }

    /// Runs one request that is harmless to repeat (a read, a keep-alive, a lease grant or
    /// revocation) with the request timeout, sending it again within the same budget after any
    /// transient failure that was not a timeout, such as a connection that broke under it.
    pub(crate) async fn idempotent<T, F, Fut>(&self, what: &str, request: F) -> StoreResult<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.run(what, Resend::Transient, Client::clone, request)
            .await
    }

    async fn run<C, T, F, Fut>(
        &self,
        what: &str,
        resend: Resend,
        part: fn(&Client) -> C,
        mut request: F,
    ) -> StoreResult<T>
    where
        F: FnMut(C) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let budget = RequestBudget::start(self.request_timeout);
        let late = |total| timed_out(what, total);
        loop {
            let left = budget.left();
            let client = match timeout(left, self.connected()).await {
                Ok(client) => part(client?),
                Err(_) => return Err(late(budget.total())),
            };
            match timeout(left, request(client)).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if resend.allows(&e) && budget.allows_resend() => {
                    tracing::debug!(error = %e, what, "etcd request failed; sending it again");
                    budget.pause().await;
                }
                Ok(Err(e)) => return Err(classify(e)),
                Err(_) => return Err(late(budget.total())),
            }
        }
    }
}

/// Which failed requests are sent again.
#[derive(Debug, Clone, Copy)]
enum Resend {
    /// Only those that were certainly not applied.
    NotApplied,
    /// Any transient failure.
    Transient,
}

impl Resend {
    fn allows(self, e: &etcd_client::Error) -> bool {
        match self {
            Self::NotApplied => never_applied(e),
            Self::Transient => never_applied(e) || kind_of(e) == ErrorKind::Transient,
        }
    }
}
