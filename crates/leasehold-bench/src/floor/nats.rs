//! The NATS floor: the store's own JetStream requests issued raw with its async-nats client — a
//! direct get of the slot key and the compare-and-set publish with a TTL to acquire; the
//! compare-and-set delete marker to release (with the sequence the grant's ack returned). (The
//! store reads the whole lock in one batch direct get before a grant, and releases the same way,
//! expecting the sequence of its own last write.)

use std::time::Duration;

use async_nats::HeaderMap;
use leasehold::{LockName, store::Token};
use leasehold_nats::NatsStore;

use crate::BoxError;

/// The stream sequence of a granted floor lock, the expected sequence of its release.
pub(super) type NatsSeq = u64;

fn subject(store: &NatsStore, lock: &LockName) -> String {
    format!("$KV.{}.{}", store.options().bucket(), store.key(lock, 0))
}

async fn publish(
    store: &NatsStore,
    subject: String,
    headers: HeaderMap,
    payload: String,
) -> Result<Option<NatsSeq>, BoxError> {
    let js = async_nats::jetstream::new(store.client().await?);
    match js
        .publish_with_headers(subject, headers, payload.into())
        .await?
        .await
    {
        Ok(ack) => Ok(Some(ack.sequence)),
        Err(e)
            if e.kind() == async_nats::jetstream::context::PublishErrorKind::WrongLastSequence =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn acquire(
    store: &NatsStore,
    lock: &LockName,
    token: Token,
    ttl: Duration,
) -> Result<Option<NatsSeq>, BoxError> {
    let client = store.client().await?;
    let subject = subject(store, lock);
    let bucket = store.options().bucket();
    let last = client
        .request(
            format!("$JS.API.DIRECT.GET.KV_{bucket}.{subject}"),
            "".into(),
        )
        .await?;
    let expected = match (last.status, last.headers.as_ref()) {
        (None, Some(headers)) => {
            let gone = headers.get("KV-Operation").is_some()
                || headers.get("Nats-Marker-Reason").is_some();
            if !gone {
                return Ok(None);
            }
            headers
                .get("Nats-Sequence")
                .and_then(|v| v.as_str().parse().ok())
                .ok_or("floor read without a sequence")?
        }
        _ => 0,
    };
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", expected.to_string());
    headers.insert("Nats-TTL", format!("{}s", ttl.as_secs().max(1)));
    publish(store, subject, headers, format!("floor {}", token.to_hex())).await
}

pub(super) async fn release(
    store: &NatsStore,
    lock: &LockName,
    seq: NatsSeq,
) -> Result<(), BoxError> {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", seq.to_string());
    headers.insert("KV-Operation", "DEL");
    headers.insert("Nats-TTL", "60s");
    match publish(store, subject(store, lock), headers, String::new()).await? {
        Some(_) => Ok(()),
        None => Err("floor release found the lock not held".into()),
    }
}
