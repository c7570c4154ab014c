//! The connection to the cluster: one lazily connected etcd client over every endpoint, and
//! requests with a deadline that fail over to another endpoint when refused.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use leasehold::StoreResult;
use tokio::sync::OnceCell;
use tokio::time::{Instant, sleep, timeout};

use crate::classify::{classify, never_applied, timed_out};

/// The pause before a refused request is sent again (to a member picked afresh).
const RESEND_PAUSE: Duration = Duration::from_millis(20);
/// HTTP/2 pings on idle connections, so a member that vanished is noticed between requests.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(2);

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
            .with_keep_alive_while_idle(true)
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
        let client = self
            .client
            .get_or_try_init(|| async {
                let connecting = Client::connect(&self.endpoints, Some(self.connect.clone()));
                match timeout(self.request_timeout, connecting).await {
                    Ok(Ok(client)) => Ok(client),
                    Ok(Err(e)) => Err(classify(e)),
                    Err(_) => Err(timed_out("the connection", self.request_timeout)),
                }
            })
            .await?;
        Ok(client.clone())
    }

    /// Runs one request with the request timeout. A request refused before it could reach a
    /// leader (connection refused, member without a leader) is sent again within the same
    /// budget; the balanced channel picks the member afresh, so it fails over.
    pub(crate) async fn call<T, F, Fut>(&self, what: &str, mut request: F) -> StoreResult<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let start = Instant::now();
        let budget = self.request_timeout;
        loop {
            let left = budget.saturating_sub(start.elapsed());
            let client = match timeout(left, self.client()).await {
                Ok(client) => client?,
                Err(_) => return Err(timed_out(what, budget)),
            };
            match timeout(left, request(client)).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if never_applied(&e) && start.elapsed() + RESEND_PAUSE * 2 < budget => {
                    tracing::debug!(error = %e, what, "leasehold: etcd request refused; sending it again");
                    sleep(RESEND_PAUSE).await;
                }
                Ok(Err(e)) => return Err(classify(e)),
                Err(_) => return Err(timed_out(what, budget)),
            }
        }
    }
}
