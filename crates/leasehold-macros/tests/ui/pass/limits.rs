//! Literals at the edges of what the core accepts compile: the shortest lease (without the
//! default renewal, which needs a longer one), the shortest one `auto_extend` renews, the longest duration, `min_lease` equal to `lease`, a 255-byte lock
//! name, every separator of the lock-name rule, ISO-8601 and surrounding whitespace.

#![deny(warnings)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::{Elector, MemoryStore, limits::MAX_DURATION};

#[leasehold::leader_only(elector = e, lock = "a", lease = "1ms", wait = "0", auto_extend = false)]
async fn shortest(e: &Elector) {}

#[leasehold::leader_only(elector = e, lock = "b", lease = "75ms", auto_extend)]
async fn shortest_extended(e: &Elector) {}

#[leasehold::leader_only(elector = e, lock = "c", lease = "36500d", min_lease = "36500d",
                         wait = "P1DT2H30.5S", cancel_on_lost, context = ctx)]
async fn longest(e: &Elector) -> Duration {
    ctx.lease().expires_at.duration_since(ctx.lease().acquired_at).unwrap_or_default()
}

// The expansion passes the parsed value, nanoseconds included.
#[leasehold::leader_only(elector = e, lock = "f", lease = "1.000000001s", context = ctx)]
async fn fractional(e: &Elector) -> Duration {
    ctx.lease().expires_at.duration_since(ctx.lease().acquired_at).unwrap_or_default()
}

#[leasehold::leader_only(
    elector = e,
    lock = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)]
async fn longest_name(e: &Elector) {}

#[leasehold::leader_only(elector = e, lock = "reports/daily.csv:v1_x-y", lease = " 1m30s ")]
async fn separators(e: &Elector) {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> leasehold::Result<()> {
    let e = Elector::new(Arc::new(MemoryStore::new()));
    assert_eq!(shortest(&e).await?, Some(()));
    assert_eq!(shortest_extended(&e).await?, Some(()));
    assert_eq!(longest(&e).await?, Some(MAX_DURATION));
    assert_eq!(fractional(&e).await?, Some(Duration::new(1, 1)));
    assert_eq!(longest_name(&e).await?, Some(()));
    assert_eq!(separators(&e).await?, Some(()));
    Ok(())
}
