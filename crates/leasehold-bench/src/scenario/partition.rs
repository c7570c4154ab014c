//! partition: 1,024 shards of one partition set over P = 2, 4, 8 and 16 members; how long a
//! join and a crash take to settle (in leases), how many shards a join moves against the
//! fewest it could, the store requests per second while nothing changes, and whether any shard
//! ever had two owners at once.
//!
//! Each member is an `Elector` on its own store client (a separate pool or connection, as a
//! separate process would have) driven by its own task in this process, so that one clock
//! judges every member's work on a shard. A member is killed by cutting its client off (every
//! store call fails from then on, as after a SIGKILL nothing it sends arrives) without leaving
//! the set; its shards' work stops when their leases are lost on its side.
//!
//! Members join one at a time. At each size P: the join of the P-th member is timed until every
//! shard is owned once by a live member and the counts are within one (from the members' own
//! records of their work, not from the store); the requests of the P members are counted over
//! the window (server statistics where the bench has them, and client-side); then one member
//! is killed and the time until the other P − 1 own every shard, balanced, is taken. The next
//! size grows the set from there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use leasehold::partition::{PartitionSet, ShardEvent};
use leasehold::{ElectionOptions, Elector, LeaseStore};
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use crate::BoxError;
use crate::measure::Tally;
use crate::outcome::{Figure, RequestFigures};
use crate::scenario::Config;
use crate::scenario::counting::{Calls, CountingStore};
use crate::scenario::hold_many::window;
use crate::scenario::server_stats::{Isolated, ServerStats, count_over};
use crate::target::Target;

/// The lease of the shards and memberships: renewed every second, and a member's period
/// (lease / 3) is one second.
pub(crate) const LEASE: Duration = Duration::from_secs(3);
/// Shards in the set.
const SHARDS: u32 = 1_024;
/// The same with `--quick`.
const QUICK_SHARDS: u32 = 256;
/// Members, in turn.
const SIZES: [usize; 4] = [2, 4, 8, 16];
/// The same with `--quick`.
const QUICK_SIZES: [usize; 2] = [2, 4];
/// How long a join or a crash may take to settle before the size counts as failed.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How often the members' records are read while waiting for a balance.
const POLL: Duration = Duration::from_millis(20);

/// What one size measured, beside its request counts.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PartitionFigures {
    /// Members after the join (P).
    pub(crate) members: u64,
    /// Shards in the set.
    pub(crate) shards: u32,
    /// The lease, s.
    pub(crate) lease_s: f64,
    /// From the P-th member's join until every shard was owned once and balanced, in leases.
    pub(crate) join_leases: f64,
    /// Shards that changed owner during that join.
    pub(crate) join_moved: u64,
    /// The fewest a balanced assignment could have moved: the newcomer's share, rounded down.
    pub(crate) join_minimum: u64,
    /// From the kill of one member until the other P − 1 owned every shard, balanced, in
    /// leases.
    pub(crate) kill_leases: f64,
    /// Shards the killed member owned.
    pub(crate) killed_owned: u64,
    /// Shards with two owners at once at any time so far (the run's work records checked).
    pub(crate) two_owners: u64,
    /// Shard tenures checked for it.
    pub(crate) tenures: u64,
}

/// One member's work on one shard: from its `Acquired` event to the drop of its `ShardLease`.
#[derive(Debug, Clone)]
struct Tenure {
    shard: u32,
    member: usize,
    fence: u64,
    start: Instant,
    end: Option<Instant>,
}

/// Every member's tenures.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Tenure>>>);

impl Log {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tenure>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin(&self, shard: u32, member: usize, fence: u64) -> usize {
        let mut all = self.lock();
        all.push(Tenure {
            shard,
            member,
            fence,
            start: Instant::now(),
            end: None,
        });
        all.len() - 1
    }

    fn finish(&self, at: usize) {
        if let Some(t) = self.lock().get_mut(at) {
            t.end = Some(Instant::now());
        }
    }

    /// Tenures begun at or after `since`.
    fn begun_since(&self, since: Instant) -> u64 {
        self.lock().iter().filter(|t| t.start >= since).count() as u64
    }

    /// The shards `member` is working on now.
    fn running(&self, member: usize) -> u64 {
        self.lock()
            .iter()
            .filter(|t| t.member == member && t.end.is_none())
            .count() as u64
    }

    /// Each live member's count, if every shard has exactly one running tenure and it is a
    /// live member's.
    fn owned(&self, shards: u32, live: &[usize]) -> Option<BTreeMap<usize, u64>> {
        let all = self.lock();
        let mut owner: Vec<Option<usize>> = vec![None; shards as usize];
        for t in all.iter().filter(|t| t.end.is_none()) {
            let slot = owner.get_mut(t.shard as usize)?;
            if slot.is_some() || !live.contains(&t.member) {
                return None;
            }
            *slot = Some(t.member);
        }
        let mut counts: BTreeMap<usize, u64> = live.iter().map(|&m| (m, 0)).collect();
        for o in owner {
            *counts.get_mut(&o?)? += 1;
        }
        Some(counts)
    }

    /// Shards that had two owners at once (overlapping tenures, or a later tenure with a fence
    /// not above the earlier's), and the tenures checked.
    fn two_owners(&self) -> (u64, u64) {
        let all = self.lock().clone();
        let mut by_shard: BTreeMap<u32, Vec<&Tenure>> = BTreeMap::new();
        for t in &all {
            by_shard.entry(t.shard).or_default().push(t);
        }
        for list in by_shard.values_mut() {
            list.sort_by_key(|t| (t.start, t.fence));
        }
        let bad = by_shard
            .values()
            .filter(|list| {
                list.windows(2).any(|pair| {
                    let (a, b) = (pair[0], pair[1]);
                    a.end.is_none_or(|end| end > b.start) || b.fence <= a.fence
                })
            })
            .count();
        (bad as u64, all.len() as u64)
    }
}

/// One member: its task drives the partition's events and runs one worker per owned shard.
struct Member {
    index: usize,
    cut: Arc<AtomicBool>,
    driver: JoinHandle<Result<(), String>>,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Member {
    async fn join(
        client: Arc<dyn LeaseStore>,
        calls: &Arc<Calls>,
        index: usize,
        set: &PartitionSet,
        log: &Log,
    ) -> Result<Self, BoxError> {
        let cut = Arc::new(AtomicBool::new(false));
        let store = CountingStore::wrap_cuttable(client, calls, &cut);
        let options = ElectionOptions::builder()
            .node_id(format!("member-{index:02}"))
            .lease(LEASE)
            .build()?;
        let elector = Elector::with_options(store, options);
        let mut partition = set.join(&elector).await?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let log = log.clone();
        let driver = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    event = partition.next() => match event {
                        Some(ShardEvent::Acquired(shard, lease)) => {
                            let at = log.begin(shard, index, lease.fence());
                            let log = log.clone();
                            tokio::spawn(async move {
                                lease.ending().await;
                                log.finish(at);
                                drop(lease);
                            });
                        }
                        Some(_) => {}
                        None => return Ok(()),
                    },
                }
            }
            partition.leave().await.map_err(|e| e.to_string())
        });
        Ok(Self {
            index,
            cut,
            driver,
            stop,
        })
    }

    /// Leaves the set gracefully.
    async fn leave(self) -> Result<(), BoxError> {
        let _ = self.stop.send(());
        self.driver.await??;
        Ok(())
    }
}

/// Waits until every shard is owned once by one of `live`, the counts within one; answers how
/// long it took and the counts.
async fn until_balanced(
    log: &Log,
    shards: u32,
    live: &[usize],
    what: &str,
) -> Result<(Duration, BTreeMap<usize, u64>), BoxError> {
    let began = Instant::now();
    loop {
        if let Some(counts) = log.owned(shards, live) {
            let lo = counts.values().copied().min().unwrap_or(0);
            let hi = counts.values().copied().max().unwrap_or(0);
            if hi - lo <= 1 {
                return Ok((began.elapsed(), counts));
            }
        }
        if began.elapsed() > SETTLE_LIMIT {
            return Err(format!(
                "{what}: not balanced over {} members within {SETTLE_LIMIT:?}",
                live.len()
            )
            .into());
        }
        sleep(POLL).await;
    }
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let place = Isolated::open(t, "partition").await?;
    let figures = spread(t, cfg, &place).await;
    place.close().await?;
    figures
}

async fn spread(t: &Target, cfg: &Config, place: &Isolated) -> Result<Vec<Figure>, BoxError> {
    let mut stats = ServerStats::open(t.backend, &place.url).await?;
    let (shards, sizes): (u32, &[usize]) = if cfg.quick {
        (QUICK_SHARDS, &QUICK_SIZES)
    } else {
        (SHARDS, &SIZES)
    };
    let set = PartitionSet::builder(t.resource("partition", 0), shards)
        .lease(LEASE)
        .build()?;
    let (log, calls) = (Log::default(), Arc::new(Calls::default()));
    let mut members: Vec<Member> = Vec::new();
    let mut killed: Vec<Member> = Vec::new();
    let mut next = 0usize;
    let mut figures = Vec::new();
    let lease_s = LEASE.as_secs_f64();
    let live = |members: &[Member]| members.iter().map(|m| m.index).collect::<Vec<_>>();
    for &p in sizes {
        // A size that does not settle ends the run; the sizes before it keep their rows.
        let unsettled = |e: BoxError| {
            let mut stopped = Figure::rate(&format!("P = {p}"), Tally::default());
            stopped.first_error = Some(format!("P = {p}: {e}; the larger sizes were not measured"));
            stopped
        };
        while members.len() + 1 < p {
            members.push(
                Member::join(place.follower_client(t).await?, &calls, next, &set, &log).await?,
            );
            next += 1;
            if let Err(e) = until_balanced(&log, shards, &live(&members), "a join").await {
                figures.push(unsettled(e));
                break;
            }
        }
        if members.len() + 1 < p {
            break;
        }
        // The measured join: the P-th member.
        let joined = Instant::now();
        members
            .push(Member::join(place.follower_client(t).await?, &calls, next, &set, &log).await?);
        let newcomer = next;
        next += 1;
        let (join_took, counts) =
            match until_balanced(&log, shards, &live(&members), "the join").await {
                Ok(settled) => settled,
                Err(e) => {
                    figures.push(unsettled(e));
                    break;
                }
            };
        let join_moved = log.begun_since(joined);
        eprintln!(
            "  partition P = {p}: join balanced after {:.2} leases, {join_moved} shards moved (newcomer has {})",
            join_took.as_secs_f64() / lease_s,
            counts.get(&newcomer).copied().unwrap_or(0)
        );
        // Stable: count the requests.
        sleep(LEASE.max(ServerStats::settle(stats.as_ref()))).await;
        let counted = count_over(&mut stats, &[&calls], window(cfg)).await?;
        // Kill one member (the oldest: it holds its share since the start).
        let victim = members.remove(0);
        let killed_owned = log.running(victim.index);
        victim.cut.store(true, Ordering::Relaxed);
        killed.push(victim);
        let (kill_took, _) = match until_balanced(&log, shards, &live(&members), "the kill").await {
            Ok(settled) => settled,
            Err(e) => {
                figures.push(unsettled(e));
                break;
            }
        };
        eprintln!(
            "  partition P = {p}: {killed_owned} shards of the killed member owned again after {:.2} leases",
            kill_took.as_secs_f64() / lease_s
        );
        let (two_owners, tenures) = log.two_owners();
        let r = RequestFigures {
            size: p as u64,
            window_s: counted.seconds,
            server_per_s: counted.server.map(|(r, _)| r),
            statistic: stats.as_ref().map(ServerStats::statistic),
            writes_per_s: counted.server.and_then(|(_, w)| w),
            write_statistic: stats.as_ref().map(ServerStats::write_statistic),
            client_per_s: counted.client.first().copied().unwrap_or_default(),
            followers_client_per_s: None,
            lost: 0,
            acquire_s: None,
        };
        let mut figure = Figure::requests(format!("P = {p}"), r, None);
        figure.partition = Some(PartitionFigures {
            members: p as u64,
            shards,
            lease_s,
            join_leases: join_took.as_secs_f64() / lease_s,
            join_moved,
            join_minimum: u64::from(shards) / p as u64,
            kill_leases: kill_took.as_secs_f64() / lease_s,
            killed_owned,
            two_owners,
            tenures,
        });
        if two_owners > 0 {
            figure.first_error = Some(format!("{two_owners} shards had two owners at once"));
        }
        figures.push(figure);
    }
    for m in killed {
        m.driver.abort();
    }
    for m in members {
        m.leave().await?;
    }
    let (two_owners, _) = log.two_owners();
    if two_owners > 0
        && let Some(last) = figures.last_mut()
    {
        let two = format!("{two_owners} shards had two owners at once (by the end of the run)");
        last.first_error = Some(match last.first_error.take() {
            Some(before) => format!("{before}; {two}"),
            None => two,
        });
    }
    Ok(figures)
}
