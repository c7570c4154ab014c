//! Opening a store on a table that exists says nothing: no `CREATE TABLE IF NOT EXISTS` is sent,
//! so PostgreSQL sends no "relation … already exists, skipping" notice for sqlx to log at INFO on
//! every start of every replica.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use leasehold::{LeaseStore, LockName};
use leasehold_sql::SqlStore;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

/// Records the target and level of every event.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(String, tracing::Level)>>>);

impl<S: tracing::Subscriber> Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        self.0
            .lock()
            .unwrap()
            .push((meta.target().to_owned(), *meta.level()));
    }
}

#[tokio::test]
async fn postgres_second_start_sends_no_ddl_notice() {
    let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let table = format!(
        "quiet_{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    let lock = LockName::new("quiet-start").unwrap();
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(Registry::default().with(events.clone()));

    // The first store creates the table; a notice here would be PostgreSQL's own business.
    let first = SqlStore::connect_with(&url, common::options().with_table(&table))
        .await
        .unwrap();
    first.state(&lock, 1).await.unwrap();
    events.0.lock().unwrap().clear();

    // Every later start (another replica, a restart) finds the table and creates nothing.
    let second = SqlStore::connect_with(&url, common::options().with_table(&table))
        .await
        .unwrap();
    second.state(&lock, 1).await.unwrap();
    let notices: Vec<_> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(target, level)| {
            target.starts_with("sqlx::postgres::notice")
                || *level <= tracing::Level::INFO && target.starts_with("sqlx")
        })
        .cloned()
        .collect();
    assert!(
        notices.is_empty(),
        "a start on an existing table logged {notices:?}"
    );
}
