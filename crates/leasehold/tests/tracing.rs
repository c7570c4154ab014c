//! Acquisition and release run in `tracing` spans that carry the lock name.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, MemoryStore};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

/// Records the name and `lock` field of every new span.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, String)>>>);

struct LockField(String);
impl tracing::field::Visit for LockField {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "lock" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let mut lock = LockField(String::new());
        attrs.record(&mut lock);
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), lock.0));
    }
}

#[test]
fn acquire_and_release_have_spans_with_the_lock() {
    let spans = Spans::default();
    let subscriber = Registry::default().with(spans.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let opts = ElectionOptions::builder()
                .wait(Duration::ZERO)
                .build()
                .unwrap();
            let e = Elector::with_options(Arc::new(MemoryStore::new()), opts);
            e.run_if_leader("traced", |_| async {}).await.unwrap();
        })
    });
    let seen = spans.0.lock().unwrap().clone();
    assert!(
        seen.contains(&("leasehold.acquire".to_owned(), "traced".to_owned())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("leasehold.release".to_owned(), "traced".to_owned())),
        "{seen:?}"
    );
}
