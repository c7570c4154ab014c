//! `leasehold verify`: a Jepsen-style check a user runs against their own deployment.
//!
//! Several contenders, each with its own store client, take the same lock over and over; a share
//! of the holders freeze for longer than their lease (a simulated stall: a GC pause, a stopped
//! VM) and then write to a fenced register without looking at their lease, as a frozen process
//! would. Optionally a local TCP proxy cuts every connection to the store now and then. The whole
//! history is then checked ([`check`]): a correct store, with fences checked, shows no violation,
//! and leaves no lock behind.

mod check;
mod contender;
mod history;
mod register;
mod report;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use leasehold::fence::ResourceName;
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName, store::Token};
use leasehold_testkit::proxy::{FaultProxy, via_proxy};
use rand::Rng;
use tokio::time::{Instant, sleep};

use crate::args::VerifyArgs;
use crate::exit::Failure;
use crate::store::StoreUrl;
use contender::{Plan, Run};
use history::{History, Op};
use register::Register;

/// The most contenders `--contenders` accepts.
pub(crate) const MAX_CONTENDERS: usize = 64;
/// The longest `--duration`.
pub(crate) const MAX_RUN: Duration = Duration::from_secs(24 * 3600);
/// Exit code of a run that found a violation or a leaked lock.
pub(crate) const VIOLATION: u8 = 1;

/// Runs `leasehold verify`.
pub(crate) async fn verify(args: VerifyArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    let lock = match args.lock.clone() {
        Some(lock) => lock,
        None => default_lock()?,
    };
    // No renewal: a contender's freeze stands for a whole process frozen (a GC pause, SIGSTOP),
    // whose renewals stop too, so its lease runs out while it believes it holds it.
    let options = ElectionOptions::builder()
        .lease(args.lease)
        .auto_extend(false)
        .build()
        .map_err(|e| Failure::usage(format!("--lease: {e}")))?;
    let out = report::HistoryOut::open(args.json.as_deref())?;
    let proxy = if args.proxy_cuts {
        Some(start_proxy(&url).await?)
    } else {
        None
    };
    let clients = open_clients(&url, proxy.as_ref(), args.contenders).await?;
    let resource = ResourceName::new(format!("verify/{lock}"))
        .map_err(|e| Failure::usage(format!("--lock: {e}")))?;
    let run = Run {
        plan: Arc::new(Plan {
            lock: lock.clone(),
            lease: args.lease,
            pause_percent: args.pause_percent,
            deadline: Instant::now() + args.duration,
        }),
        register: Arc::new(Register::new(resource, !args.no_fence_check)),
        history: Arc::new(History::new()),
        stop: leasehold::CancellationToken::new(),
        fatal: Arc::default(),
    };
    let contenders: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(id, store)| {
            let elector = Elector::with_options(store, options.clone());
            tokio::spawn(contender::contend(id, elector, run.clone()))
        })
        .collect();
    let cutter = proxy.as_ref().map(|p| cut_now_and_then(p, &run));
    let joined = async {
        for c in contenders {
            let _ = c.await;
        }
    };
    match cutter {
        Some(cutter) => {
            tokio::select! {
                () = joined => {}
                () = cutter => {}
            }
        }
        None => joined.await,
    }
    if let Some(p) = &proxy {
        p.heal().await;
    }
    if let Some(fatal) = run.take_fatal() {
        return Err(fatal);
    }
    let leaked = leaked_holders(&url, &lock, args.lease).await?;
    let ops = run.history.snapshot();
    let findings = check::check(&ops);
    let summary = report::Summary::new(&args, &url, &lock, findings, leaked);
    report::write(&summary, &ops, out)?;
    Ok(if summary.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(VIOLATION)
    })
}

/// `leasehold-verify-<8 hex digits>`: a lock no real job uses.
fn default_lock() -> Result<LockName, Failure> {
    let tag = (Token::random().as_u128() >> 96) as u32;
    LockName::new(format!("leasehold-verify-{tag:08x}")).map_err(|e| Failure::usage(e.to_string()))
}

async fn start_proxy(url: &StoreUrl) -> Result<FaultProxy, Failure> {
    let Some((_, addr)) = leasehold_testkit::proxy::loopback_authority(url.as_str()) else {
        return Err(Failure::usage(format!(
            "--proxy-cuts needs a store server on 127.0.0.1 or localhost with an explicit port \
             (the proxy runs on this machine); {} names none",
            url.redacted()
        )));
    };
    FaultProxy::start(addr)
        .await
        .map_err(|e| Failure::usage(format!("cannot start the fault proxy: {e}")))
}

/// One client per contender (through the proxy if any); an in-process `memory:` store is one
/// store shared by all, or they would not contend.
async fn open_clients(
    url: &StoreUrl,
    proxy: Option<&FaultProxy>,
    n: usize,
) -> Result<Vec<Arc<dyn LeaseStore>>, Failure> {
    let target = match proxy.and_then(|p| via_proxy(url.as_str(), p.addr())) {
        Some(proxied) => StoreUrl::given(proxied),
        None => url.clone(),
    };
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(target.open_shared(Duration::ZERO).await?);
    }
    Ok(clients)
}

/// Cuts every connection through the proxy for 20–150 ms every 0.3–1 s, until the run's end.
async fn cut_now_and_then(proxy: &FaultProxy, run: &Run) {
    loop {
        let (pause, cut) = {
            let mut rng = rand::rng();
            (
                Duration::from_millis(rng.random_range(300..1000)),
                Duration::from_millis(rng.random_range(20..150)),
            )
        };
        sleep(pause).await;
        if Instant::now() >= run.plan.deadline {
            // Let the contenders finish on a healed connection.
            return std::future::pending().await;
        }
        let at_ms = run.history.now_ms();
        proxy.cut().await;
        sleep(cut).await;
        proxy.heal().await;
        run.history.record(Op::ProxyCut {
            at_ms,
            for_ms: cut.as_secs_f64() * 1e3,
        });
    }
}

/// Holders of the lock once the contenders are done, after waiting up to two leases (plus a
/// second) for leases whose release answer a proxy cut lost: those expire on their own.
async fn leaked_holders(url: &StoreUrl, lock: &LockName, lease: Duration) -> Result<u32, Failure> {
    let store = url.open_shared(Duration::ZERO).await?;
    let until = Instant::now()
        + lease.saturating_mul(2).min(Duration::from_secs(60))
        + Duration::from_secs(1);
    loop {
        let held = store.state(lock, 1).await?.active();
        if held == 0 || Instant::now() >= until {
            return Ok(held);
        }
        sleep(Duration::from_millis(50)).await;
    }
}
