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

/// Records the message of every WARN event.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message(String);
impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.0.lock().unwrap().push(message.0);
        }
    }
}

/// A guard dropped just before its runtime shuts down leaves its release queued; the runtime
/// drops it unrun, and the lease then ends only at its expiry. That is said, not silent.
#[test]
fn a_release_the_runtime_drops_unrun_is_reported() {
    let warnings = Warnings::default();
    let subscriber = Registry::default().with(warnings.clone());
    let store = Arc::new(MemoryStore::new());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let e = Elector::new(store.clone());
        let guard = rt
            .block_on(e.try_acquire("unreleased"))
            .unwrap()
            .elected()
            .unwrap();
        // Dropped inside the runtime: the release is spawned, and the runtime ends first.
        rt.block_on(async move { drop(guard) });
        drop(rt);
    });
    let seen = warnings.0.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|w| w.contains("the runtime shut down before a lease was released")),
        "{seen:?}"
    );
}

/// A `MakeWriter` collecting formatted lines.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Lines;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A log line of a leading node, as an operator's log shows it, names the node (several
/// replicas write to one log) and says "leasehold" in its span and target only, not again in
/// the message.
#[test]
fn leading_log_lines_name_the_node_and_say_leasehold_once_per_part() {
    let lines = Lines::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(lines.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let options = ElectionOptions::builder().node_id("web-7").build().unwrap();
            let e = Elector::with_options(Arc::new(MemoryStore::new()), options);
            e.lead("billing", leasehold::CancellationToken::new(), |_| async {
                leasehold::TermEnd::Stop
            })
            .await
            .unwrap();
        });
    });
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let elected: Vec<&str> = text.lines().filter(|l| l.contains("elected")).collect();
    assert_eq!(elected.len(), 1, "{text}");
    let line = elected[0];
    assert!(
        line.contains("node=\"web-7\"") || line.contains("node=web-7"),
        "{line}"
    );
    // `leasehold.lead{…}` and the target `leasehold::elect::lead`: nothing more.
    assert_eq!(line.matches("leasehold").count(), 2, "{line}");
}
