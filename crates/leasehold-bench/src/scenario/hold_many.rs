//! hold-many: one `Elector` holds N leases and nothing else happens; how many store requests per
//! second keep them, counted by the server, and whether any is lost.
//!
//! For each N the elector (default options but a 3 s lease; auto-extend on) takes N distinct
//! locks with `try_acquire`, keeps the guards through a warm-up of one lease and then the
//! measuring window, and the server's counters ([`ServerStats`]) and the client-side count
//! ([`CountingStore`]) are read before and after the window. On a store that renews in batches
//! the floor is one request per renewal period (lease / 3): 1.0/s, whatever N.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use leasehold::{ElectionOptions, Elector, LeaderGuard, LockName};

use crate::BoxError;
use crate::outcome::{Figure, RequestFigures};
use crate::scenario::Config;
use crate::scenario::counting::{Calls, CountingStore};
use crate::scenario::server_stats::{Isolated, ServerStats, count_over};
use crate::target::Target;

/// The lease: renewed every second (lease / 3).
pub(crate) const LEASE: Duration = Duration::from_secs(3);
/// Leases held, in turn.
const SIZES: [usize; 4] = [1, 100, 1_000, 10_000];
/// The same with `--quick`.
const QUICK_SIZES: [usize; 3] = [1, 10, 100];
/// Acquisitions and releases in flight at once.
const IN_FLIGHT: usize = 32;
/// Locks whose state is read after the release, to check nothing was left behind.
const CHECKED: usize = 50;

/// The measuring window: 12 s, 3 s with `--quick`.
pub(crate) fn window(cfg: &Config) -> Duration {
    if cfg.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(12)
    }
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let place = Isolated::open(t, "hold-many").await?;
    let figures = hold(t, cfg, &place).await;
    place.close().await?;
    figures
}

async fn hold(t: &Target, cfg: &Config, place: &Isolated) -> Result<Vec<Figure>, BoxError> {
    let mut stats = ServerStats::open_counting_writes(t.backend, &place.url).await?;
    let client = place.client(t).await?;
    let sizes: &[usize] = if cfg.quick { &QUICK_SIZES } else { &SIZES };
    let mut figures = Vec::new();
    for &n in sizes {
        let calls = Arc::new(Calls::default());
        let options = ElectionOptions::builder().lease(LEASE).build()?;
        let elector = Elector::with_options(CountingStore::wrap(client.clone(), &calls), options);
        let locks = (0..n)
            .map(|i| t.lock(&format!("hold-many-{n}"), i))
            .collect::<Result<Vec<_>, _>>()?;
        let started = Instant::now();
        let guards: Vec<LeaderGuard> = futures::stream::iter(&locks)
            .map(|lock| take(&elector, lock))
            .buffer_unordered(IN_FLIGHT)
            .try_collect()
            .await?;
        let acquire_s = started.elapsed().as_secs_f64();
        tokio::time::sleep(LEASE.max(ServerStats::settle(stats.as_ref()))).await;
        let counted = count_over(&mut stats, &[&calls], window(cfg)).await?;
        let lost = guards.iter().filter(|g| g.is_lost()).count() as u64;
        let errors = futures::stream::iter(guards)
            .map(LeaderGuard::release)
            .buffer_unordered(IN_FLIGHT)
            .filter(|r| std::future::ready(r.is_err()))
            .count()
            .await;
        elector.settled().await;
        let left = left_behind(&elector, &locks).await?;
        let mut problems = Vec::new();
        if errors > 0 {
            problems.push(format!("{errors} releases failed"));
        }
        if left > 0 {
            problems.push(format!(
                "{left} of the checked locks still held after release"
            ));
        }
        let r = RequestFigures {
            size: n as u64,
            window_s: counted.seconds,
            server_per_s: counted.server.map(|(r, _)| r),
            statistic: stats.as_ref().map(ServerStats::statistic),
            writes_per_s: counted.server.and_then(|(_, w)| w),
            write_statistic: stats.as_ref().map(ServerStats::write_statistic),
            client_per_s: counted.client.first().copied().unwrap_or_default(),
            followers_client_per_s: None,
            lost,
            acquire_s: Some(acquire_s),
        };
        eprintln!(
            "  hold-many N = {n}: {} requests/s (client-side {:.2}/s), {lost} lost, acquired in {acquire_s:.1} s",
            r.server_per_s
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
            r.client_per_s
        );
        let first_error = (!problems.is_empty()).then(|| problems.join("; "));
        figures.push(Figure::requests(format!("N = {n}"), r, first_error));
    }
    Ok(figures)
}

/// One free lock, taken.
async fn take(elector: &Elector, lock: &LockName) -> Result<LeaderGuard, BoxError> {
    elector
        .try_acquire(lock)
        .await?
        .elected()
        .ok_or_else(|| format!("{lock} was busy").into())
}

/// How many of up to [`CHECKED`] locks, spread over `locks`, still have a holder.
async fn left_behind(elector: &Elector, locks: &[LockName]) -> Result<usize, BoxError> {
    let step = (locks.len() / CHECKED).max(1);
    let mut left = 0;
    for lock in locks.iter().step_by(step) {
        if !elector.state(lock).await?.holders.is_empty() {
            left += 1;
        }
    }
    Ok(left)
}
