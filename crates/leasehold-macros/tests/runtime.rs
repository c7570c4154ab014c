//! `#[leasehold::leader_only]` at run time, on the memory store and paused tokio time: it runs
//! the body only when elected, applies its options on top of the elector's, binds the context,
//! and releases the lease whatever the body does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::{
    ElectionOptions, Elector, Error, MemoryStore,
    error::{LeaseError, OptionsError},
};
use tokio::time::sleep;

const SECOND: Duration = Duration::from_secs(1);

/// A service whose jobs are guarded by the attribute, with counters of the bodies that ran.
struct Billing {
    elector: Elector,
    runs: AtomicU32,
    picks: AtomicU32,
}

#[derive(Debug, PartialEq)]
enum BillingError {
    BadAmount(std::num::ParseIntError),
    Refused,
}

impl From<std::num::ParseIntError> for BillingError {
    fn from(e: std::num::ParseIntError) -> Self {
        Self::BadAmount(e)
    }
}

impl Billing {
    fn new(elector: Elector) -> Self {
        Self {
            elector,
            runs: AtomicU32::new(0),
            picks: AtomicU32::new(0),
        }
    }

    fn runs(&self) -> u32 {
        self.runs.load(Ordering::SeqCst)
    }

    /// The elector expression of `picked`: counts its evaluations.
    fn pick(&self) -> &Elector {
        self.picks.fetch_add(1, Ordering::SeqCst);
        &self.elector
    }

    /// `?` converts into the written error type; `return` ends the body.
    #[leasehold::leader_only(elector = self.elector, lock = "billing.nightly")]
    async fn nightly(&self, amount: &str) -> Result<u64, BillingError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let amount: u64 = amount.parse()?;
        if amount == 0 {
            return Err(BillingError::Refused);
        }
        Ok(amount * 2)
    }

    #[leasehold::leader_only(elector = self.pick(), lock = "billing.picked")]
    async fn picked(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    /// The lease as the body sees it, and the fence.
    #[leasehold::leader_only(elector = self.elector, lock = "billing/lease", lease = "7s",
                             context = ctx)]
    async fn with_lease(&self) -> (leasehold::Lease, u64) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        (ctx.lease(), ctx.fence())
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/lease", context = ctx)]
    async fn with_elector_lease(&self) -> leasehold::Lease {
        ctx.lease()
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/min", lease = "10s",
                             min_lease = "3s")]
    async fn quick_with_min_lease(&self) {}

    /// Sleeps `body` under a 1 s lease renewed by the watchdog; answers whether the lease was
    /// lost and the store's expiry at the end.
    #[leasehold::leader_only(elector = self.elector, lock = "billing/long", lease = "1s",
                             auto_extend, context = ctx)]
    async fn long_extended(&self, body: Duration) -> (bool, SystemTime) {
        sleep(body).await;
        (ctx.is_lost(), ctx.expires_at())
    }

    /// The same with `auto_extend` turned off (and the body left to run past the loss).
    #[leasehold::leader_only(elector = self.elector, lock = "billing/long", lease = "1s",
                             auto_extend = false, cancel_on_lost = false, context = ctx)]
    async fn long_plain(&self, body: Duration) -> (bool, SystemTime) {
        sleep(body).await;
        (ctx.is_lost(), ctx.expires_at())
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/cancel", lease = "1s",
                             auto_extend = false, cancel_on_lost)]
    async fn cancelled_on_loss(&self) {
        sleep(10 * SECOND).await;
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/wait", wait = "5s")]
    async fn waiting(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/wait", wait = "0s")]
    async fn not_waiting(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/min", min_lease = "2s")]
    async fn min_lease_only(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    #[leasehold::leader_only(elector = self.elector, lock = "billing/panic")]
    async fn panicking(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        panic!("the body fails");
    }
}

/// A free function: the elector is a parameter, the body generic.
#[leasehold::leader_only(elector = elector, lock = "free", context = ctx)]
async fn free<T: Send>(elector: &Elector, value: T) -> (T, u64) {
    (value, ctx.fence())
}

fn store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::with_clock_origin(UNIX_EPOCH))
}

#[tokio::test(start_paused = true)]
async fn elected_runs_the_body_and_returns_some() -> leasehold::Result<()> {
    let billing = Billing::new(Elector::new(store()));
    assert_eq!(billing.nightly("21").await?, Some(Ok(42)));
    assert_eq!(billing.runs(), 1);
    // The lease was released: the next call is elected again.
    assert_eq!(billing.nightly("1").await?, Some(Ok(2)));
    assert!(billing.elector.state("billing.nightly").await?.is_free());

    let elector = Elector::new(store());
    assert_eq!(free(&elector, "x").await?, Some(("x", 1)));
    assert_eq!(free(&elector, 7_u8).await?, Some((7, 2)));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn question_mark_and_return_keep_the_written_return_type() -> leasehold::Result<()> {
    let billing = Billing::new(Elector::new(store()));
    let Some(Err(BillingError::BadAmount(_))) = billing.nightly("x").await? else {
        panic!("`?` converts into BillingError inside the body");
    };
    assert_eq!(
        billing.nightly("0").await?,
        Some(Err(BillingError::Refused))
    );
    assert_eq!(billing.runs(), 2);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn held_elsewhere_is_none_and_the_body_does_not_run() -> leasehold::Result<()> {
    let store = store();
    let billing = Billing::new(Elector::new(store.clone()));
    let other = Elector::new(store);
    let held = other
        .try_acquire("billing.nightly")
        .await?
        .elected()
        .expect("free");

    assert_eq!(billing.nightly("21").await?, None);
    assert_eq!(billing.runs(), 0, "the body must not run without the lock");

    held.release().await?;
    assert_eq!(billing.nightly("21").await?, Some(Ok(42)));
    assert_eq!(billing.runs(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_elector_expression_is_evaluated_at_each_call() -> leasehold::Result<()> {
    let billing = Billing::new(Elector::new(store()));
    billing.picked().await?;
    billing.picked().await?;
    assert_eq!(billing.picks.load(Ordering::SeqCst), 2);
    assert_eq!(billing.runs(), 2);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_lease_option_is_the_lease_the_store_records() -> leasehold::Result<()> {
    let store = store();
    let options = ElectionOptions::builder()
        .node_id("billing-1")
        .lease(60 * SECOND)
        .build()?;
    let billing = Billing::new(Elector::with_options(store.clone(), options.clone()));

    let (lease, fence) = billing.with_lease().await?.expect("elected");
    assert_eq!(
        lease.expires_at.duration_since(lease.acquired_at).ok(),
        Some(7 * SECOND)
    );
    // Everything the attribute does not set stays the elector's.
    assert_eq!(lease.owner, "billing-1");
    assert_eq!(fence, lease.fence);
    assert_eq!(
        billing.elector.options(),
        &options,
        "the elector is unchanged"
    );

    // Without the option: the elector's lease.
    let lease = billing.with_elector_lease().await?.expect("elected");
    assert_eq!(
        lease.expires_at.duration_since(lease.acquired_at).ok(),
        Some(60 * SECOND)
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_context_binding_gives_the_fence() -> leasehold::Result<()> {
    let store = store();
    let billing = Billing::new(Elector::new(store.clone()));
    let (_, first) = billing.with_lease().await?.expect("elected");
    let (_, second) = billing.with_lease().await?.expect("elected");
    assert_eq!(
        (first, second),
        (1, 2),
        "each grant has a new, larger fence"
    );
    let guard = Elector::new(store)
        .try_acquire("billing/lease")
        .await?
        .elected();
    assert_eq!(guard.map(|g| g.fence()), Some(3));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn min_lease_keeps_the_lock_after_a_quick_body() -> leasehold::Result<()> {
    let billing = Billing::new(Elector::new(store()));
    billing.quick_with_min_lease().await?.expect("elected");
    billing.elector.settled().await;
    let state = billing.elector.state("billing/min").await?;
    assert!(!state.is_free(), "held for min_lease after the body ended");
    sleep(3 * SECOND).await;
    assert!(billing.elector.state("billing/min").await?.is_free());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn auto_extend_renews_the_lease_across_a_long_body() -> leasehold::Result<()> {
    let store = store();
    let billing = Billing::new(Elector::new(store.clone()));
    let other = Elector::new(store);
    let started = SystemTime::UNIX_EPOCH;

    let run = billing.long_extended(5 * SECOND);
    let contend = async {
        sleep(3 * SECOND).await;
        other.try_acquire("billing/long").await
    };
    let (ran, contended) = tokio::join!(run, contend);
    let (lost, expires_at) = ran?.expect("elected");
    assert!(!lost, "renewed every lease/3, never lost");
    assert!(
        expires_at > started + 5 * SECOND,
        "the store's expiry moved with the renewals: {expires_at:?}"
    );
    assert!(
        contended?.is_taken(),
        "still held after three lease lengths"
    );

    // Without auto_extend the same body outlives its lease.
    let (lost, expires_at) = billing.long_plain(5 * SECOND).await?.expect("elected");
    assert!(lost);
    assert!(expires_at <= started + 6 * SECOND, "{expires_at:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn cancel_on_lost_drops_the_body_and_answers_lost() -> leasehold::Result<()> {
    let billing = Billing::new(Elector::new(store()));
    let got = billing.cancelled_on_loss().await;
    assert!(matches!(got, Err(Error::Lost { .. })), "{got:?}");
    assert_eq!(billing.runs(), 0, "the body was dropped at the loss");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn wait_lets_the_call_wait_for_the_holder() -> leasehold::Result<()> {
    let store = store();
    let billing = Billing::new(Elector::new(store.clone()));
    let other = Elector::new(store);
    let held = other
        .try_acquire("billing/wait")
        .await?
        .elected()
        .expect("free");

    assert_eq!(billing.not_waiting().await?, None);
    let release = async {
        sleep(2 * SECOND).await;
        held.release().await
    };
    let (waited, released) = tokio::join!(billing.waiting(), release);
    released?;
    assert_eq!(
        waited?,
        Some(()),
        "elected once the holder released, within the wait"
    );
    assert_eq!(billing.runs(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn options_that_do_not_combine_with_the_elector_are_an_error() -> leasehold::Result<()> {
    let short = ElectionOptions::builder().lease(SECOND).build()?;
    let billing = Billing::new(Elector::with_options(store(), short));
    let got = billing.min_lease_only().await;
    assert!(
        matches!(
            got,
            Err(Error::Options(OptionsError::Lease(
                LeaseError::MinLeaseExceedsLease { .. }
            )))
        ),
        "{got:?}"
    );
    assert_eq!(billing.runs(), 0);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_body_releases_the_lease() -> leasehold::Result<()> {
    let billing = Arc::new(Billing::new(Elector::new(store())));
    let task = tokio::spawn({
        let billing = billing.clone();
        async move { billing.panicking().await }
    });
    let joined = task.await;
    assert!(joined.is_err_and(|e| e.is_panic()), "the panic resumes");
    assert_eq!(billing.runs(), 1);
    billing.elector.settled().await;
    assert!(billing.elector.state("billing/panic").await?.is_free());
    let guard = billing
        .elector
        .try_acquire("billing/panic")
        .await?
        .elected();
    assert!(guard.is_some(), "the lock is free again");
    Ok(())
}
