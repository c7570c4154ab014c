//! Fenced sinks under paused stale holders: the testkit's `stale_holder` scenario, for every sink
//! that applies to a backend, with a lock on that backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use leasehold::LeaseStore;
use leasehold_axum::fence::sinks::HttpSink;
use leasehold_testkit::stale_holder::{self, FencedSink, StaleHolderConfig};
use serde::Serialize;
use tokio::time::Instant;

use leasehold_dynamodb::DynamoDbStore;
use leasehold_dynamodb::fence::sinks::{
    ConditionSink, SinkWrite, TransactionSink, create_sink_table,
};
use leasehold_etcd::EtcdStore;
use leasehold_etcd::fence::sinks::FencedEtcdSink;
use leasehold_redis::RedisStore;
use leasehold_redis::fence::sinks::FencedSetSink;
use leasehold_sql::fence::sinks::{FenceTableSink, LeaseTransactionSink};
use leasehold_sql::{SqlFences, SqlStore};

use crate::BoxError;
use crate::backend::{Backend, etcd_options, redis_options};
use crate::target::Target;

/// One sink's run on one backend.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FencedRow {
    pub(crate) backend: &'static str,
    pub(crate) sink: String,
    pub(crate) rounds: u64,
    /// Rounds whose stale lease ended by real expiry (the others by a forced release).
    pub(crate) expired: u64,
    pub(crate) stale_rejected: u64,
    /// Stale writes that won a race against the successor's write and were overwritten by it.
    pub(crate) stale_before_successor: u64,
    pub(crate) stale_accepted: u64,
    pub(crate) violations: usize,
    pub(crate) first_violations: Vec<String>,
    pub(crate) errors: usize,
    pub(crate) first_errors: Vec<String>,
    pub(crate) elapsed_s: f64,
}

impl FencedRow {
    /// No stale write accepted, no error, and stale writes were really tried and refused.
    pub(crate) fn passed(&self) -> bool {
        self.violations == 0
            && self.errors == 0
            && self.stale_accepted == 0
            && self.stale_rejected > 0
    }
}

/// One sink to run, and the lock clients its rounds use when they are not the target's own (a
/// fenced transaction checks the lease in its own store, which must then hold the lock).
struct Case {
    sink: Box<dyn FencedSink>,
    locks: Option<Vec<Arc<dyn LeaseStore>>>,
}

impl Case {
    fn new(sink: impl FencedSink + 'static) -> Self {
        Self {
            sink: Box::new(sink),
            locks: None,
        }
    }
}

/// The sinks that apply to `t`'s backend: the fenced HTTP service with its register in process
/// everywhere, and the backend's own sinks (its store-backed register behind the HTTP service
/// too, where it has one).
async fn cases(t: &Target) -> Result<Vec<Case>, BoxError> {
    let prefix = format!("bench-fenced-{}", t.resource("sink", 0));
    let mut cases = vec![Case::new(HttpSink::in_memory())];
    match t.backend {
        Backend::Memory => {}
        // No sink of its own yet: the fenced HTTP service above.
        Backend::ZooKeeper | Backend::Nats => {}
        Backend::Sqlite | Backend::Postgres | Backend::Mysql => {
            let store = SqlStore::connect(&t.url).await?;
            cases.push(Case::new(
                FenceTableSink::new(SqlFences::new(&store)).await?,
            ));
            cases.push(Case::new(HttpSink::new(Arc::new(SqlFences::new(&store)))));
            // The lease transaction checks the lease row in the store's own table.
            cases.push(Case::new(LeaseTransactionSink::new(store).await?));
        }
        Backend::Redis => {
            let store = RedisStore::connect_with(&t.url, redis_options()).await?;
            cases.push(Case::new(FencedSetSink::new(store.fenced_keys(), prefix)));
            cases.push(Case::new(HttpSink::new(Arc::new(store.fences()))));
        }
        Backend::Etcd => {
            let store = Arc::new(EtcdStore::connect_with(&t.url, etcd_options()).await?);
            cases.push(Case::new(FencedEtcdSink::txn(
                Arc::clone(&store),
                prefix.clone(),
            )));
            cases.push(Case::new(FencedEtcdSink::put(store, prefix)));
        }
        Backend::DynamoDb => {
            let store = DynamoDbStore::connect(&t.url).await?;
            let client = store.client().clone();
            create_sink_table(&client, SINK_TABLE).await?;
            cases.push(Case::new(ConditionSink::new(
                client.clone(),
                SINK_TABLE,
                SinkWrite::Put,
            )));
            cases.push(Case::new(ConditionSink::new(
                client,
                SINK_TABLE,
                SinkWrite::Update,
            )));
            // dynalite has no TransactWriteItems: the fenced transaction runs on moto's DynamoDB,
            // with its locks there too.
            if let Ok(endpoint) = std::env::var("LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT") {
                let url = format!(
                    "dynamodb://leasehold_bench_leases?endpoint={endpoint}&create_table=true&skew=50ms"
                );
                let tx = DynamoDbStore::connect(&url).await?;
                create_sink_table(tx.client(), SINK_TABLE).await?;
                let mut locks: Vec<Arc<dyn LeaseStore>> = Vec::new();
                for _ in 0..2 {
                    locks.push(Arc::new(DynamoDbStore::connect(&url).await?));
                }
                cases.push(Case {
                    sink: Box::new(TransactionSink::new(tx, SINK_TABLE)),
                    locks: Some(locks),
                });
            }
        }
    }
    Ok(cases)
}

/// The DynamoDB table the sinks write to.
const SINK_TABLE: &str = "leasehold_bench_fenced_items";

/// Runs every sink of `t` for `rounds` rounds.
pub(crate) async fn run(t: &Target, rounds: usize) -> Result<Vec<FencedRow>, BoxError> {
    let own: Vec<Arc<dyn LeaseStore>> = vec![t.client().await?, t.client().await?];
    let config = StaleHolderConfig {
        rounds,
        // A hundredth of the rounds really wait out a short lease (etcd's shortest is 1 s).
        expire_every: 100,
        expiring_lease: t.backend.shortest_lease(),
        ..StaleHolderConfig::default()
    };
    let mut rows = Vec::new();
    for case in cases(t).await? {
        let clients = case.locks.unwrap_or_else(|| own.clone());
        let next = AtomicUsize::new(0);
        let factory =
            move || Arc::clone(&clients[next.fetch_add(1, Ordering::Relaxed) % clients.len()]);
        let started = Instant::now();
        let report = stale_holder::run(&factory, case.sink.as_ref(), &config).await;
        rows.push(FencedRow {
            backend: t.backend.name(),
            sink: report.sink.clone(),
            rounds: report.rounds,
            expired: report.expired,
            stale_rejected: report.stale_rejected,
            stale_before_successor: report.stale_before_successor,
            stale_accepted: report.stale_accepted,
            violations: report.violations.len(),
            first_violations: report.violations.iter().take(5).cloned().collect(),
            errors: report.errors.len(),
            first_errors: report.errors.iter().take(5).cloned().collect(),
            elapsed_s: started.elapsed().as_secs_f64(),
        });
    }
    Ok(rows)
}
