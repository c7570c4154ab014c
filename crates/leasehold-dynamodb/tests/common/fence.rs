//! Endpoints and tables of the fenced-sink tests: an endpoint with transactions, and the sink
//! table.

use tokio::sync::OnceCell;

use super::{TABLE, client, store};

/// The table of the fenced sinks' items (string partition key `id`), beside the lease table.
pub const SINK_TABLE: &str = "leasehold_test_fenced_items";

/// The variable naming an endpoint that implements `TransactWriteItems` (dynalite 4 does not;
/// moto's server does), for the fenced-transaction tests.
pub const TX_VAR: &str = "LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT";

/// Whether `endpoint` implements `TransactWriteItems`: a transaction of one `ConditionCheck`
/// (on an item no test writes) that the endpoint either runs or calls an unknown operation.
async fn has_transactions(endpoint: &str) -> bool {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem};

    let check = ConditionCheck::builder()
        .table_name(TABLE)
        .key(
            "lockName",
            AttributeValue::S("leasehold-transaction-probe".into()),
        )
        .condition_expression("attribute_not_exists(lockName)")
        .build()
        .expect("a complete condition check");
    let sent = client(endpoint)
        .transact_write_items()
        .transact_items(TransactWriteItem::builder().condition_check(check).build())
        .send()
        .await;
    match sent {
        Ok(_) => true,
        Err(e) if e.code() == Some("UnknownOperationException") => false,
        Err(e) => panic!(
            "probing TransactWriteItems failed: {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(&e)
        ),
    }
}

/// Starts moto's server single-threaded on 127.0.0.1:8001.
const MOTO_SERVER: &str = "`python3 -c 'from werkzeug.serving import run_simple; \
     from moto.moto_server.werkzeug_app import DomainDispatcherApplication as App, \
     create_backend_app; run_simple(\"127.0.0.1\", 8001, App(create_backend_app), \
     threaded=False)'`";

static TX_READY: OnceCell<Option<String>> = OnceCell::const_new();

/// An endpoint that implements `TransactWriteItems`, with the lease and sink tables ready — the one
/// in `LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT`, else `LEASEHOLD_TEST_DYNAMODB_ENDPOINT` if it has
/// transactions — or `None` to skip. With `CI` set, having none fails the run.
pub async fn tx_ready() -> Option<String> {
    TX_READY
        .get_or_init(|| async {
            let given = std::env::var(TX_VAR).ok().filter(|e| !e.is_empty());
            for endpoint in given.into_iter().chain(endpoint_quiet()) {
                store(&endpoint)
                    .create_table()
                    .await
                    .expect("create the test table");
                if has_transactions(&endpoint).await {
                    sink_table(&endpoint).await;
                    return Some(endpoint);
                }
            }
            let why = format!(
                "no DynamoDB endpoint with TransactWriteItems: set {TX_VAR} to one (dynalite 4, \
                 the usual LEASEHOLD_TEST_DYNAMODB_ENDPOINT, lacks transactions). moto's server \
                 has them; run it single-threaded (its threaded server undoes concurrent writes \
                 when a transaction fails): `pip install 'moto[server]'`, then {MOTO_SERVER}"
            );
            if std::env::var_os("CI").is_some() {
                panic!("{why}");
            }
            eprintln!("skipping: {why}");
            None
        })
        .await
        .clone()
}

/// `LEASEHOLD_TEST_DYNAMODB_ENDPOINT` if set (no notice, no failure).
fn endpoint_quiet() -> Option<String> {
    std::env::var("LEASEHOLD_TEST_DYNAMODB_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
}

/// Creates the sink table on `endpoint`.
pub async fn sink_table(endpoint: &str) {
    leasehold_dynamodb::fence::sinks::create_sink_table(&client(endpoint), SINK_TABLE)
        .await
        .expect("create the sink table");
}
