//! idle-followers: one holder keeps one lock (auto-extend on, 3 s lease) while F followers wait
//! for it, each an `Elector` on its own store client (as separate processes would be), with a
//! wait longer than the window; nothing changes during the window. The figure is the store
//! requests per second, counted by the server, with the followers' share and whether the
//! followers write (the stores that record waiters for hand-off write on every refusal).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, Outcome};

use crate::BoxError;
use crate::outcome::{Figure, RequestFigures};
use crate::scenario::Config;
use crate::scenario::counting::{Calls, CountingStore};
use crate::scenario::hold_many::{LEASE, window};
use crate::scenario::server_stats::{Isolated, ServerStats, count_over};
use crate::target::Target;

/// Followers waiting, in turn.
const SIZES: [usize; 3] = [1, 16, 64];
/// The same with `--quick`.
const QUICK_SIZES: [usize; 2] = [1, 4];

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let place = Isolated::open(t, "idle-followers").await?;
    let figures = follow(t, cfg, &place).await;
    place.close().await?;
    figures
}

async fn follow(t: &Target, cfg: &Config, place: &Isolated) -> Result<Vec<Figure>, BoxError> {
    let mut stats = ServerStats::open(t.backend, &place.url).await?;
    let sizes: &[usize] = if cfg.quick { &QUICK_SIZES } else { &SIZES };
    let mut figures = Vec::new();
    for &f in sizes {
        let side = format!("F = {f}");
        match followers(t, cfg, place, &mut stats, f).await {
            Ok((r, problem)) => {
                eprintln!(
                    "  idle-followers F = {f}: {} requests/s (client-side {:.2}/s, followers {:.2}/s), writes {}/s",
                    r.server_per_s
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
                    r.client_per_s,
                    r.followers_client_per_s.unwrap_or_default(),
                    r.writes_per_s
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
                );
                figures.push(Figure::requests(side, r, problem));
            }
            // One size that cannot run (a server's connection limit) does not void the others.
            Err(e) => {
                eprintln!("  idle-followers F = {f}: {e}");
                let r = RequestFigures {
                    size: f as u64,
                    window_s: 0.0,
                    server_per_s: None,
                    statistic: None,
                    writes_per_s: None,
                    write_statistic: None,
                    client_per_s: f64::NAN,
                    followers_client_per_s: None,
                    lost: 0,
                    acquire_s: None,
                };
                figures.push(Figure::requests(side, r, Some(e.to_string())));
            }
        }
    }
    if figures.iter().all(|f| f.value.is_nan()) {
        let errors: Vec<String> = figures
            .iter()
            .filter_map(|f| f.first_error.clone())
            .collect();
        return Err(errors.join("; ").into());
    }
    Ok(figures)
}

/// One size: the holder, `f` followers, the window.
async fn followers(
    t: &Target,
    cfg: &Config,
    place: &Isolated,
    stats: &mut Option<ServerStats>,
    f: usize,
) -> Result<(RequestFigures, Option<String>), BoxError> {
    let lock = t.lock("idle-followers", f)?;
    let (holder_calls, follower_calls) = (Arc::new(Calls::default()), Arc::new(Calls::default()));
    let holder = Elector::with_options(
        CountingStore::wrap(place.client(t).await?, &holder_calls),
        ElectionOptions::builder().lease(LEASE).build()?,
    );
    let guard = holder
        .try_acquire(&lock)
        .await?
        .elected()
        .ok_or("the holder's lock was busy")?;
    // Longer than the warm-up and the window together: no follower gives up while counted.
    let wait = LEASE + ServerStats::settle(stats.as_ref()) + window(cfg) + Duration::from_secs(60);
    let mut electors = Vec::with_capacity(f);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..f {
        let follower = Elector::with_options(
            CountingStore::wrap(place.follower_client(t).await?, &follower_calls),
            ElectionOptions::builder().lease(LEASE).wait(wait).build()?,
        );
        electors.push(follower.clone());
        let lock = lock.clone();
        tasks.spawn(async move {
            follower
                .run(&lock, |_| async { Ok::<(), Infallible>(()) })
                .await
        });
    }
    tokio::time::sleep(LEASE.max(ServerStats::settle(stats.as_ref()))).await;
    let counted = count_over(stats, &[&holder_calls, &follower_calls], window(cfg)).await?;
    let lost = u64::from(guard.is_lost());
    // A follower that returned was elected (the holder lost its lease) or failed.
    let mut problems = Vec::new();
    let (mut elected, mut failed) = (0, 0);
    while let Some(done) = tasks.try_join_next() {
        match done {
            Ok(Ok(Outcome::Elected(()))) => elected += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                failed += 1;
                if problems.is_empty() {
                    problems.push(format!("a follower failed: {e}"));
                }
            }
            Err(e) => problems.push(format!("a follower panicked: {e}")),
        }
    }
    if elected > 0 {
        problems.push(format!("{elected} followers were elected during the run"));
    }
    if failed > 1 {
        problems.push(format!("{failed} followers failed"));
    }
    tasks.shutdown().await;
    guard.release().await?;
    holder.settled().await;
    for e in &electors {
        e.settled().await;
    }
    let (holder_per_s, followers_per_s) = (
        counted.client.first().copied().unwrap_or_default(),
        counted.client.get(1).copied().unwrap_or_default(),
    );
    let r = RequestFigures {
        size: f as u64,
        window_s: counted.seconds,
        server_per_s: counted.server.map(|(r, _)| r),
        statistic: stats.as_ref().map(ServerStats::statistic),
        writes_per_s: counted.server.and_then(|(_, w)| w),
        write_statistic: stats.as_ref().map(ServerStats::write_statistic),
        client_per_s: holder_per_s + followers_per_s,
        followers_client_per_s: Some(followers_per_s),
        lost,
        acquire_s: None,
    };
    Ok((r, (!problems.is_empty()).then(|| problems.join("; "))))
}
