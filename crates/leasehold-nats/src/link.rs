//! The connection room: one NATS client per store, connected on first use, and the bucket it
//! keeps leases in, created when absent and checked when present.
//!
//! async-nats reconnects by itself; while it is disconnected, requests time out after the
//! request timeout and fail with transient errors. A failed first connection is tried again by
//! the next operation.

use std::time::Duration;

use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use async_nats::{Client, ConnectErrorKind, ConnectOptions};
use leasehold::store::StoreError;
use tokio::sync::OnceCell;

use crate::classify::{self, timed_out};
use crate::keys::Keys;
use crate::url::Credentials;

/// How long the server keeps the marker it writes when a lease's TTL runs out
/// (`subject_delete_marker_ttl`), so that watchers see the expiry; then the key is gone.
pub(crate) const MARKER_TTL: Duration = Duration::from_secs(60);

/// Why an existing bucket cannot keep leases: what it lacks and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the NATS KV bucket {bucket:?} (stream {stream}) cannot keep leasehold leases: {problem}; \
     recreate it (nats kv del {bucket}; leasehold creates it on first use) or use another bucket"
)]
pub struct BucketError {
    bucket: String,
    stream: String,
    problem: String,
}

impl BucketError {
    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
    /// What the bucket lacks.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

/// The connected client.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) js: Context,
}

/// How to reach the server, and the client once connected.
#[derive(Debug)]
pub(crate) struct Link {
    server: String,
    credentials: Credentials,
    keys: Keys,
    request_timeout: Duration,
    connect_timeout: Duration,
    /// A client the application connected ([`Link::from_client`]).
    preset: Option<Conn>,
    conn: OnceCell<Conn>,
}

impl Link {
    pub(crate) fn new(
        server: String,
        credentials: Credentials,
        keys: Keys,
        request_timeout: Duration,
        connect_timeout: Duration,
    ) -> Self {
        Self {
            server,
            credentials,
            keys,
            request_timeout,
            connect_timeout,
            preset: None,
            conn: OnceCell::new(),
        }
    }

    /// A link over a client the application connected.
    pub(crate) fn from_client(client: Client, keys: Keys, request_timeout: Duration) -> Self {
        let mut link = Self::new(
            "a NATS client".to_owned(),
            Credentials::None,
            keys,
            request_timeout,
            request_timeout,
        );
        let mut js = jetstream::new(client.clone());
        js.set_timeout(request_timeout);
        // The bucket is created or checked on first use, as with a URL.
        link.preset = Some(Conn { client, js });
        link
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The client, connecting (and creating or checking the bucket) on first use.
    pub(crate) async fn conn(&self) -> Result<&Conn, StoreError> {
        self.conn.get_or_try_init(|| self.open()).await
    }

    async fn open(&self) -> Result<Conn, StoreError> {
        let conn = match &self.preset {
            Some(conn) => conn.clone(),
            None => self.connect().await?,
        };
        let budget = self.request_timeout;
        tokio::time::timeout(budget, ensure_bucket(&conn.js, &self.keys))
            .await
            .map_err(|_| timed_out("the bucket check", budget))??;
        Ok(conn)
    }

    async fn connect(&self) -> Result<Conn, StoreError> {
        let mut options = ConnectOptions::new()
            .connection_timeout(self.connect_timeout)
            .request_timeout(Some(self.request_timeout))
            .ping_interval(Duration::from_secs(5))
            .name("leasehold");
        match &self.credentials {
            Credentials::None => {}
            Credentials::UserPassword(user, password) => {
                options = options.user_and_password(user.clone(), password.expose().to_owned());
            }
            Credentials::Token(token) => options = options.token(token.expose().to_owned()),
        }
        let budget = self.connect_timeout;
        let client = tokio::time::timeout(budget, options.connect(self.server.as_str()))
            .await
            .map_err(|_| timed_out("the connection", budget))?
            .map_err(|e| {
                let kind = match e.kind() {
                    ConnectErrorKind::Authentication
                    | ConnectErrorKind::AuthorizationViolation
                    | ConnectErrorKind::ServerParse
                    | ConnectErrorKind::Tls => leasehold::ErrorKind::Permanent,
                    _ => leasehold::ErrorKind::Transient,
                };
                StoreError::new(
                    kind,
                    format!("cannot connect to NATS at {}: {e}", self.server),
                )
            })?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(self.request_timeout);
        Ok(Conn { client, js })
    }
}

/// The stream behind a bucket this store creates: history 1, file storage, direct reads,
/// per-message TTLs with expiry markers, atomic batches (for the period ledger).
pub(crate) fn stream_config(keys: &Keys) -> Config {
    Config {
        name: keys.stream(),
        description: Some("leasehold leases (NATS KV bucket)".to_owned()),
        subjects: vec![keys.all()],
        max_messages_per_subject: 1,
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        deny_purge: false,
        allow_direct: true,
        discard: DiscardPolicy::New,
        num_replicas: 1,
        allow_message_ttl: true,
        subject_delete_marker_ttl: Some(MARKER_TTL),
        allow_atomic_publish: true,
        ..Default::default()
    }
}

/// What an existing stream lacks to keep leases, if anything.
fn lacks(config: &Config, keys: &Keys) -> Option<String> {
    if !config.allow_message_ttl {
        return Some(
            "per-message TTLs are off (it needs allow_msg_ttl, nats-server 2.11 or later)"
                .to_owned(),
        );
    }
    if !config.allow_direct {
        return Some("direct gets are off (it needs allow_direct)".to_owned());
    }
    if config.max_messages_per_subject != 1 {
        return Some(format!(
            "it keeps a history of {} values per key (it needs history 1)",
            config.max_messages_per_subject
        ));
    }
    if !config.allow_atomic_publish {
        return Some(
            "atomic batch publishes are off (it needs allow_atomic, nats-server 2.12 or later)"
                .to_owned(),
        );
    }
    if !config.subjects.iter().any(|s| *s == keys.all()) {
        return Some(format!("its subjects do not include {}", keys.all()));
    }
    None
}

fn bucket_error(keys: &Keys, problem: String) -> StoreError {
    let err = BucketError {
        bucket: keys.bucket().to_owned(),
        stream: keys.stream(),
        problem,
    };
    StoreError::permanent(err.to_string()).with_source(err)
}

/// Creates the bucket when absent; checks that an existing one can keep leases.
async fn ensure_bucket(js: &Context, keys: &Keys) -> Result<(), StoreError> {
    use async_nats::jetstream::context::{CreateStreamErrorKind, GetStreamErrorKind};
    let existing = match js.get_stream(keys.stream()).await {
        Ok(stream) => Some(stream.cached_info().config.clone()),
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(api)
                if api.error_code() == async_nats::jetstream::ErrorCode::STREAM_NOT_FOUND =>
            {
                None
            }
            GetStreamErrorKind::JetStream(api) => {
                return Err(classify::api("a stream lookup", &api));
            }
            _ => return Err(classify::disconnected("a stream lookup", e)),
        },
    };
    let config = match existing {
        Some(config) => config,
        None => match js.create_stream(stream_config(keys)).await {
            Ok(stream) => stream.cached_info().config.clone(),
            Err(e) => match e.kind() {
                CreateStreamErrorKind::JetStream(api) => {
                    return Err(classify::api("creating the bucket", &api));
                }
                CreateStreamErrorKind::TimedOut => {
                    return Err(classify::disconnected("creating the bucket", e));
                }
                CreateStreamErrorKind::JetStreamUnavailable => {
                    return Err(StoreError::permanent(format!(
                        "cannot create the NATS KV bucket {:?}: JetStream is not enabled on the server (start nats-server with -js)",
                        keys.bucket()
                    )));
                }
                _ => return Err(classify::disconnected("creating the bucket", e)),
            },
        },
    };
    match lacks(&config, keys) {
        Some(problem) => Err(bucket_error(keys, problem)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_without_ttls_is_refused_saying_what_to_change() {
        let keys = Keys::new("lh");
        assert_eq!(lacks(&stream_config(&keys), &keys), None);
        let old = Config {
            allow_message_ttl: false,
            ..stream_config(&keys)
        };
        let e = bucket_error(&keys, lacks(&old, &keys).unwrap_or_default());
        assert!(!e.is_transient());
        assert!(
            e.message().contains("allow_msg_ttl") && e.message().contains("2.11"),
            "{e}"
        );
        let history = Config {
            max_messages_per_subject: 5,
            ..stream_config(&keys)
        };
        assert!(lacks(&history, &keys).is_some_and(|p| p.contains("history 1")));
    }
}
