//! The store's command connection: an auto-reconnecting `ConnectionManager`, replaced outright
//! after a response timeout.
//!
//! `ConnectionManager` reconnects by itself when a connection drops, but a connection that merely
//! stops answering (a network blackhole, a stalled proxy) stays open and every command on it times
//! out. After a timeout the stream's state is unknown, so the link drops that manager and the next
//! command builds a fresh one (commands still in flight on the old one finish or time out).

use std::sync::Mutex;
use std::time::Duration;

use leasehold::store::StoreError;
use leasehold::store::StoreResult;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, FromRedisValue, RedisError, ScriptInvocation};
use tracing::debug;

use crate::classify::classify;
use crate::options::RedisOptions;

/// How many times a manager retries connecting before a command fails (each attempt is bounded by
/// the connect timeout), and the first pause between attempts.
const CONNECT_RETRIES: usize = 1;
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// `rediss://` needs a rustls crypto provider; when the build enables several, none is chosen
/// automatically, so pick ring unless the application installed one.
fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The connection the store's commands run on.
pub(crate) struct Link {
    client: Client,
    config: ConnectionManagerConfig,
    current: Mutex<Option<(u64, ConnectionManager)>>,
    generation: std::sync::atomic::AtomicU64,
}

impl Link {
    pub(crate) fn new(
        client: Client,
        response_timeout: Duration,
        connect_timeout: Duration,
    ) -> Self {
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(response_timeout))
            .set_connection_timeout(Some(connect_timeout))
            .set_number_of_retries(CONNECT_RETRIES)
            .set_min_delay(FIRST_RETRY_PAUSE)
            .set_max_delay(connect_timeout);
        Self {
            client,
            config,
            current: Mutex::new(None),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A link to `client` with `options`' timeouts (and a TLS crypto provider for `rediss://`).
    pub(crate) fn for_client(client: Client, options: &RedisOptions) -> Self {
        if matches!(
            client.get_connection_info().addr(),
            redis::ConnectionAddr::TcpTls { .. }
        ) {
            install_tls_provider();
        }
        Self::new(client, options.response_timeout, options.connect_timeout)
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The current manager (created on first use; needs a tokio runtime) and its generation.
    pub(crate) fn manager(&self) -> StoreResult<(u64, ConnectionManager)> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::permanent(
                "the Redis store must be used inside a tokio runtime",
            ));
        }
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((id, manager)) = &*current {
            return Ok((*id, manager.clone()));
        }
        let manager =
            ConnectionManager::new_lazy_with_config(self.client.clone(), self.config.clone())
                .map_err(classify)?;
        let id = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *current = Some((id, manager.clone()));
        Ok((id, manager))
    }

    /// Notes a failed command: after a timeout the connection is replaced.
    fn failed(&self, id: u64, err: &RedisError) {
        if !err.is_timeout() {
            return;
        }
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current
            .as_ref()
            .is_some_and(|(current_id, _)| *current_id == id)
        {
            debug!(error = %err, "Redis did not answer in time; replacing the connection");
            *current = None;
        }
    }

    /// Runs a script (EVALSHA, loading it on NOSCRIPT).
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> StoreResult<T> {
        let (id, mut manager) = self.manager()?;
        match invocation.invoke_async(&mut manager).await {
            Ok(value) => Ok(value),
            Err(err) => {
                self.failed(id, &err);
                Err(classify(err))
            }
        }
    }

    /// Runs a plain command.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> StoreResult<T> {
        let (id, mut manager) = self.manager()?;
        match cmd.query_async(&mut manager).await {
            Ok(value) => Ok(value),
            Err(err) => {
                self.failed(id, &err);
                Err(classify(err))
            }
        }
    }
}
