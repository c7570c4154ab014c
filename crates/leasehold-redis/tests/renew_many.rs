//! A beat's renewals as one script: `extend_many` over 10,000 leases is one `EVALSHA`, and its
//! answers are each lease's own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::time::Duration;

use leasehold::Lease;
use leasehold::store::{Extension, Token};

const LEASES: usize = 10_000;

/// `INFO commandstats`' `calls` of `evalsha`.
async fn evalsha_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_leases_renew_in_one_script() {
    let Some(url) = common::url() else { return };
    let make = common::factory(url.clone());
    let store = make();
    let ttl = Duration::from_secs(60);
    let leases = leasehold_testkit::grant_many(&store, "renew", LEASES, ttl).await;
    let forged = Lease {
        token: Token::random(),
        ..leases[0].clone()
    };
    let mut entries: Vec<(Lease, Duration)> = leases.iter().map(|l| (l.clone(), ttl * 2)).collect();
    entries.push((forged, ttl * 2));

    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let before = evalsha_calls(&mut conn).await;
    let answers = store.extend_many(&entries).await;
    let after = evalsha_calls(&mut conn).await;
    // Other tests may share the server and run their scripts meanwhile; one script per lease
    // would be 10,001.
    assert!(
        after - before < 1_000,
        "10,000 renewals must be one script, saw {} EVALSHA calls",
        after - before
    );
    for ((lease, _), answer) in entries.iter().zip(&answers).take(LEASES) {
        match answer {
            Ok(Extension::Extended { expires_at }) => assert!(
                *expires_at > lease.expires_at + Duration::from_secs(30),
                "{}: extended to {expires_at:?}",
                lease.lock
            ),
            other => panic!("{}: expected an extension, got {other:?}", lease.lock),
        }
    }
    assert!(matches!(answers[LEASES], Ok(Extension::NotHeld)));
    for lease in &leases {
        store.release(lease, Duration::ZERO).await.unwrap();
    }
}
