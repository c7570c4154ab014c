//! `dynamodb://` URLs through the core's store registry.

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{Credentials, ProvideCredentials, Region};
use leasehold::store::{OpenError, UrlOpener, UrlStore};
use tracing::debug;

use crate::store::DynamoDbStore;
use crate::url::DynamoDbUrl;

/// The region assumed for a loopback emulator endpoint when none is configured.
const EMULATOR_REGION: &str = "us-east-1";

/// Opens [`DynamoDbStore`]s for `dynamodb://TABLE?PARAMETERS` URLs (`dynamodb:` alone means the
/// default table `leasehold_leases`).
///
/// The client is configured from the environment like `aws_config::load_from_env` (credentials
/// chain, `AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL`); parameters override it:
///
/// | parameter | meaning |
/// |---|---|
/// | `region`, `profile` | AWS region and shared-config profile |
/// | `endpoint` | endpoint URL, e.g. `http://127.0.0.1:8000` for an emulator |
/// | `prefix` | key prefix (see [`DynamoDbOptions::key_prefix`](crate::DynamoDbOptions::key_prefix)) |
/// | `skew`, `ttl_padding`, `retry_delay`, `attempt_timeout` | durations such as `500ms`, `1h` |
/// | `max_attempts`, `node_id` | see [`DynamoDbOptions`](crate::DynamoDbOptions) |
/// | `stale_refresh`, `stale_refresh_pages` | refresh the stale-item gauge every duration, with this page cap (see [`DynamoDbOptions::stale_refresh`](crate::DynamoDbOptions::stale_refresh)) |
/// | `create_table` | `true` to create the table if missing (development only) |
///
/// Credentials never go in the URL. For a loopback endpoint (an emulator) without configured
/// credentials or region, dummy credentials and `us-east-1` are used. Opening checks that the
/// table answers a consistent read, so a missing table, bad credentials or an unreachable
/// endpoint fail at once with the cause.
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold::store::OpenError> {
/// use leasehold::store::StoreRegistry;
/// let registry = StoreRegistry::new().with(leasehold_dynamodb::DynamoDbOpener::new());
/// let store = registry
///     .open("dynamodb://leasehold_leases?endpoint=http://127.0.0.1:8000&create_table=true")
///     .await?;
/// # Ok(()) }
/// ```
pub type DynamoDbOpener = UrlOpener<DynamoDbStore>;

#[async_trait]
impl UrlStore for DynamoDbStore {
    const SCHEMES: &'static [&'static str] = &["dynamodb"];

    async fn connect_url(url: &str) -> Result<Self, OpenError> {
        open(url).await
    }
}

/// Opens a [`DynamoDbStore`] for a `dynamodb:` URL (see [`DynamoDbOpener`]).
pub(crate) async fn open(url: &str) -> Result<DynamoDbStore, OpenError> {
    let invalid = |reason: String| OpenError::invalid(url, reason);
    let parsed = DynamoDbUrl::parse(url).map_err(invalid)?;
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = &parsed.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let Some(profile) = &parsed.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(endpoint) = &parsed.endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    let shared = loader.load().await;
    let mut config = aws_sdk_dynamodb::config::Builder::from(&shared);
    let emulator = parsed.endpoint.as_deref().is_some_and(is_loopback);
    if shared.region().is_none() {
        if !emulator {
            return Err(invalid(
                "no AWS region is configured: add ?region=… or set AWS_REGION".to_owned(),
            ));
        }
        config = config.region(Region::new(EMULATOR_REGION));
    }
    if emulator && !has_credentials(&shared).await {
        debug!("no AWS credentials configured; using dummy ones for the loopback emulator");
        config = config.credentials_provider(Credentials::new(
            "leasehold-emulator",
            "leasehold-emulator",
            None,
            None,
            "leasehold-dynamodb",
        ));
    }
    let store = DynamoDbStore::new(Client::from_conf(config.build()), parsed.options)
        .map_err(|e| invalid(e.to_string()))?;
    let unreachable = |source| OpenError::connect(url, source);
    if parsed.create_table {
        store.create_table().await.map_err(unreachable)?;
    }
    store.check().await.map_err(unreachable)?;
    Ok(store)
}

async fn has_credentials(config: &aws_config::SdkConfig) -> bool {
    match config.credentials_provider() {
        Some(provider) => provider.provide_credentials().await.is_ok(),
        None => false,
    }
}

/// True for `http(s)://` URLs whose host is a loopback address or `localhost`.
fn is_loopback(endpoint: &str) -> bool {
    let rest = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_endpoints_are_recognised() {
        for e in [
            "http://127.0.0.1:8000",
            "http://localhost",
            "http://[::1]:8000/x",
            "http://127.1.2.3",
        ] {
            assert!(is_loopback(e), "{e}");
        }
        for e in [
            "https://dynamodb.eu-west-1.amazonaws.com",
            "http://10.0.0.1:8000",
        ] {
            assert!(!is_loopback(e), "{e}");
        }
    }

    #[tokio::test]
    async fn bad_urls_are_invalid_not_connect_errors() {
        let err = open("dynamodb://x").await.err();
        assert!(matches!(err, Some(OpenError::Invalid { .. })), "{err:?}");
    }
}
