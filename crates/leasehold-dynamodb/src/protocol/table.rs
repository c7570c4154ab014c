//! `create_table`: the lease table for development and tests.

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification,
};
use leasehold::store::StoreError;
use leasehold::store::StoreResult;
use tokio::time::{Instant, sleep};
use tracing::{debug, info};

use super::expressions::{LOCK_NAME, TTL};
use crate::classify::classify;
use crate::options::validate_table;

/// How long to wait for a new table to become active.
const ACTIVE_WITHIN: Duration = Duration::from_secs(120);

/// Creates the lease table `table` if it is missing — string partition key `lockName`,
/// on-demand capacity (`PAY_PER_REQUEST`) — waits until it is active, and enables DynamoDB TTL
/// on `ttl`. Safe to call repeatedly and concurrently. An existing table with another key schema
/// is a permanent error.
///
/// For development and tests: keep production tables in infrastructure code (CloudFormation,
/// Terraform, CDK) with the same key and TTL settings. Endpoints without TTL support (dynalite
/// answers `UnknownOperationException`) are tolerated and logged at INFO: TTL only cleans up, it never
/// decides anything.
///
/// # Errors
///
/// A permanent error for an invalid table name or an existing table with another key schema;
/// otherwise the classified error of the request, or a transient error when the table is not
/// active within two minutes.
///
/// # Cancel safety
///
/// Cancel safe: a creation already sent goes on in DynamoDB, and the next call finds the table
/// and waits until it is active.
///
/// ```no_run
/// # async fn demo() -> leasehold::store::StoreResult<()> {
/// let config = aws_config::load_from_env().await;
/// let client = aws_sdk_dynamodb::Client::new(&config);
/// leasehold_dynamodb::create_table(&client, "leasehold_leases").await?;
/// # Ok(()) }
/// ```
pub async fn create_table(client: &Client, table: &str) -> StoreResult<()> {
    create_keyed_table(client, table, LOCK_NAME).await?;
    enable_ttl(client, table).await
}

/// Creates `table` with the string partition key `key` if it is missing (on-demand capacity) and
/// waits until it is active; an existing table with another key schema is a permanent error.
pub(crate) async fn create_keyed_table(client: &Client, table: &str, key: &str) -> StoreResult<()> {
    validate_table(table).map_err(|e| StoreError::permanent(e.to_string()))?;
    let built = |e: aws_sdk_dynamodb::error::BuildError| {
        StoreError::permanent(format!("CreateTable request: {e}"))
    };
    let created = client
        .create_table()
        .table_name(table)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(built)?,
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key)
                .key_type(KeyType::Hash)
                .build()
                .map_err(built)?,
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await;
    match created {
        Ok(_) => info!(table, "created the table"),
        Err(e) if e.code() == Some("ResourceInUseException") => {
            debug!(table, "the table exists");
        }
        Err(e) => return Err(classify("CreateTable", table, e)),
    }
    wait_until_active(client, table, key).await
}

/// Polls `DescribeTable` until the table is active, and checks that its key schema is the
/// partition key `key_name` alone.
async fn wait_until_active(client: &Client, table: &str, key_name: &str) -> StoreResult<()> {
    let deadline = Instant::now() + ACTIVE_WITHIN;
    let mut pause = Duration::from_millis(100);
    loop {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| classify("DescribeTable", table, e))?;
        let description = out.table.ok_or_else(|| {
            StoreError::transient(format!("DynamoDB DescribeTable on {table}: no description"))
        })?;
        let key: Vec<(&str, &KeyType)> = description
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type()))
            .collect();
        if key != [(key_name, &KeyType::Hash)] {
            return Err(StoreError::permanent(format!(
                "table {table} exists with key schema {key:?}; it needs exactly the string \
                 partition key {key_name} (use another table name)"
            )));
        }
        if description.table_status() == Some(&TableStatus::Active) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StoreError::transient(format!(
                "table {table} did not become active within {ACTIVE_WITHIN:?}"
            )));
        }
        sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Enables DynamoDB TTL on `ttl`, tolerating endpoints that lack it and tables that have it.
async fn enable_ttl(client: &Client, table: &str) -> StoreResult<()> {
    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name(TTL)
        .build()
        .map_err(|e| StoreError::permanent(format!("UpdateTimeToLive request: {e}")))?;
    match client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(spec)
        .send()
        .await
    {
        Ok(_) => {
            info!(table, attribute = TTL, "enabled TTL cleanup");
            Ok(())
        }
        Err(e) if e.code() == Some("UnknownOperationException") => {
            info!(
                table,
                "this endpoint does not support TTL (an emulator?); \
                idle lease items will not be cleaned up, which does not affect correctness"
            );
            Ok(())
        }
        Err(e)
            if e.code() == Some("ValidationException")
                && e.message().is_some_and(|m| m.contains("already enabled")) =>
        {
            debug!(table, "TTL is already enabled");
            Ok(())
        }
        Err(e) => Err(classify("UpdateTimeToLive", table, e)),
    }
}
