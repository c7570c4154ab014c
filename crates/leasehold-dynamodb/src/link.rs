//! The connection room: the SDK client the store sends with (the application's own, with the
//! store's retries and timeouts) and the metered send every request goes through.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use crate::metrics::{AttemptProbe, Consumed, Operation};
use crate::options::DynamoDbOptions;
use crate::store::DynamoDbStore;

/// The application's client with the store's retry and timeout settings (sharing its HTTP
/// client, credentials, region and endpoint).
pub(crate) fn tuned(client: &Client, options: &DynamoDbOptions) -> Client {
    let config = client.config();
    let retry = RetryConfig::standard()
        .with_max_attempts(options.max_attempts)
        .with_initial_backoff(options.retry_delay)
        .with_max_backoff(options.retry_delay.max(Duration::from_secs(1)));
    let timeout = config
        .timeout_config()
        .map_or_else(TimeoutConfig::builder, TimeoutConfig::to_builder)
        .operation_attempt_timeout(options.attempt_timeout)
        .build();
    Client::from_conf(
        config
            .to_builder()
            .retry_config(retry)
            .timeout_config(timeout)
            .build(),
    )
}

impl DynamoDbStore {
    /// Sends one request of `operation` (`send` attaches the probe to it and sends it) and
    /// records its latency, outcome and consumed capacity.
    pub(crate) async fn metered<T, E, Fut>(
        &self,
        operation: Operation,
        send: impl FnOnce(AttemptProbe) -> Fut,
    ) -> Result<T, SdkError<E, HttpResponse>>
    where
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        T: Consumed,
        E: ProvideErrorMetadata,
    {
        let started = Instant::now();
        let result = send(self.metrics.probe(operation)).await;
        self.metrics.finished(operation, started.elapsed(), &result);
        result
    }
}
