//! A server that accepts TCP connections but never answers makes `SqlStore::connect_with` fail
//! within its connect timeout (one deadline for connecting and checking the table), with an error
//! that says it timed out.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::time::{Duration, Instant};

use leasehold::store::OpenError;
use leasehold_sql::SqlStore;

/// Opens `scheme://…` against a listener whose connections are accepted by the kernel and never
/// answered.
async fn silent_server_times_out(scheme: &str) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Accept and hold connections without a byte in reply.
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let url = format!("{scheme}://user@{addr}/test");
    let timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = SqlStore::connect_with(&url, common::options().with_connect_timeout(timeout))
        .await
        .expect_err("nothing answers");
    let took = started.elapsed();
    held.abort();
    assert!(matches!(err, OpenError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        took >= timeout && took < timeout + Duration::from_millis(700),
        "{scheme}: open took {took:?} with a {timeout:?} connect timeout"
    );
}

#[tokio::test]
async fn postgres_silent_server_fails_within_the_connect_timeout() {
    silent_server_times_out("postgres").await;
}

#[tokio::test]
async fn mysql_silent_server_fails_within_the_connect_timeout() {
    silent_server_times_out("mysql").await;
}
