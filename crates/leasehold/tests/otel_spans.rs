//! The spans of acquire, renew and release reach an OpenTelemetry exporter with their attributes:
//! lock, slot, fence, owner, store and outcome (see `leasehold::spans`), through
//! `tracing-opentelemetry` and the SDK's in-memory exporter.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    ElectionOptions, Elector, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release, StoreError},
};
use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

/// Installs an OpenTelemetry layer for this thread; the exporter keeps every finished span.
fn otel() -> (
    InMemorySpanExporter,
    SdkTracerProvider,
    tracing::subscriber::DefaultGuard,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("leasehold-test"));
    let guard = tracing::subscriber::set_default(Registry::default().with(layer));
    (exporter, provider, guard)
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    match attr(span, key) {
        Some(v) => v.as_str().into_owned(),
        None => panic!(
            "span {} has no attribute {key}: {:?}",
            span.name, span.attributes
        ),
    }
}

/// A numeric attribute. Fields known when the span starts arrive as integers; fields recorded
/// later (`slot` and `fence` of an acquisition) arrive from `tracing-opentelemetry` as text.
fn number(span: &SpanData, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::I64(n)) => *n,
        Some(Value::String(s)) => s
            .as_str()
            .parse()
            .unwrap_or_else(|_| panic!("span {} attribute {key} = {s:?}", span.name)),
        other => panic!("span {} attribute {key} is {other:?}", span.name),
    }
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(start_paused = true)]
async fn acquire_renew_and_release_export_their_attributes() {
    let (exporter, provider, _guard) = otel();
    let store = Arc::new(MemoryStore::new());
    let leader = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .node_id("node-a")
            .lease(Duration::from_secs(3))
            .auto_extend(true)
            .wait(Duration::ZERO)
            .build()
            .unwrap(),
    );
    let other = Elector::with_options(
        store,
        ElectionOptions::builder()
            .node_id("node-b")
            .wait(Duration::ZERO)
            .build()
            .unwrap(),
    );

    let guard = leader
        .try_acquire("billing.nightly")
        .await
        .unwrap()
        .elected();
    let guard = guard.expect("the lock is free");
    let fence = guard.fence();
    let token = guard.lease().token;
    let token_forms = [token.to_hex(), token.as_u128().to_string()];
    // Two renewal periods (a third of the lease each): the watchdog renews at least once.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    assert!(
        other
            .try_acquire("billing.nightly")
            .await
            .unwrap()
            .elected()
            .is_none()
    );
    guard.release().await.unwrap();
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    let acquires = named(&spans, leasehold::spans::ACQUIRE);
    let won = acquires
        .iter()
        .find(|s| text(s, "owner") == "node-a")
        .expect("node-a's acquisition");
    assert_eq!(text(won, "lock"), "billing.nightly");
    assert_eq!(text(won, "store"), "memory");
    assert_eq!(text(won, "outcome"), "acquired");
    assert_eq!(number(won, "slot"), 0);
    assert_eq!(number(won, "fence"), i64::try_from(fence).unwrap());
    assert_eq!(number(won, "slots"), 1);
    assert_eq!(won.status, Status::Unset);

    let lost = acquires
        .iter()
        .find(|s| text(s, "owner") == "node-b")
        .expect("node-b's acquisition");
    assert_eq!(text(lost, "outcome"), "contention");
    assert!(attr(lost, "fence").is_none(), "not elected: no fence");

    let renewals = named(&spans, leasehold::spans::RENEW);
    assert!(!renewals.is_empty(), "no renewal span in {spans:#?}");
    for r in &renewals {
        assert_eq!(text(r, "outcome"), "renewed");
        assert_eq!(number(r, "fence"), i64::try_from(fence).unwrap());
        assert_eq!(text(r, "owner"), "node-a");
        assert_eq!(text(r, "store"), "memory");
    }

    let releases = named(&spans, leasehold::spans::RELEASE);
    assert_eq!(releases.len(), 1, "{releases:#?}");
    assert_eq!(text(releases[0], "outcome"), "released");
    assert_eq!(text(releases[0], "lock"), "billing.nightly");
    assert_eq!(number(releases[0], "slot"), 0);

    // The token is the capability to extend or release: it appears in no attribute.
    for s in &spans {
        for kv in &s.attributes {
            for form in &token_forms {
                assert!(
                    !kv.value.as_str().contains(form.as_str()),
                    "span {} leaks the token in {}",
                    s.name,
                    kv.key
                );
            }
        }
    }
}

/// A store whose acquisitions fail with a permanent error.
struct Refusing(MemoryStore);

#[async_trait]
impl LeaseStore for Refusing {
    async fn try_acquire(&self, _: &AcquireRequest) -> Result<Acquisition, StoreError> {
        Err(StoreError::permanent("the store refused (test)"))
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> Result<Extension, StoreError> {
        self.0.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> Result<Release, StoreError> {
        self.0.release(lease, linger).await
    }
    async fn start_period(
        &self,
        lease: &Lease,
    ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
        self.0.start_period(lease).await
    }
    async fn period_record(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> Result<LockState, StoreError> {
        self.0.state(lock, slots).await
    }
    fn describe(&self) -> String {
        "refusing".to_owned()
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_acquisition_is_an_error_span() {
    let (exporter, provider, _guard) = otel();
    let e = Elector::with_options(
        Arc::new(Refusing(MemoryStore::new())),
        ElectionOptions::builder()
            .wait(Duration::ZERO)
            .build()
            .unwrap(),
    );
    assert!(e.try_acquire("job").await.is_err());
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let acquires = named(&spans, leasehold::spans::ACQUIRE);
    assert_eq!(acquires.len(), 1, "{spans:#?}");
    assert_eq!(text(acquires[0], "outcome"), "error");
    assert_eq!(text(acquires[0], "store"), "refusing");
    assert!(
        matches!(acquires[0].status, Status::Error { .. }),
        "{:?}",
        acquires[0].status
    );
}
