//! The scenarios: each one implementation over `Arc<dyn LeaseStore>` (through [`Target`]) beside
//! the backend's floor and the backend's peer (rslock on Redis, etcd's lock API on etcd).

mod auto_extend;
mod contended;
pub(crate) mod counting;
mod failover;
mod fairness;
mod group;
mod handoff;
mod hold_many;
mod idle_followers;
mod many_locks;
mod partition;
mod server_cpu;
mod server_stats;
mod uncontended;

use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LockName};

use crate::BoxError;
use crate::backend::Backend;
use crate::measure::Tally;
use crate::outcome::{Figure, Outcome, Unit};
use crate::target::Target;

pub(crate) use failover::hold_until_killed;
pub(crate) use fairness::contend_in_child;
pub(crate) use partition::PartitionFigures;

/// How long and how often the scenarios measure.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Measuring time of each throughput scenario, shared by its sides.
    pub(crate) seconds: f64,
    /// Hand-offs measured per side.
    pub(crate) handoffs: usize,
    /// Holders killed in the failover scenario.
    pub(crate) failovers: usize,
    /// A smoke run: the session scenarios use fewer leases and followers and a 3 s window.
    pub(crate) quick: bool,
}

impl Config {
    fn total(&self) -> Duration {
        Duration::from_secs_f64(self.seconds)
    }
}

/// One benchmark scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    Uncontended,
    Contended,
    Fairness,
    ManyLocks,
    ServerCpu,
    Group,
    Handoff,
    Failover,
    AutoExtend,
    HoldMany,
    IdleFollowers,
    Partition,
}

impl Scenario {
    /// Every scenario, in report order.
    pub(crate) const ALL: [Scenario; 12] = [
        Scenario::Uncontended,
        Scenario::Contended,
        Scenario::Fairness,
        Scenario::ManyLocks,
        Scenario::ServerCpu,
        Scenario::Group,
        Scenario::Handoff,
        Scenario::Failover,
        Scenario::AutoExtend,
        Scenario::HoldMany,
        Scenario::IdleFollowers,
        Scenario::Partition,
    ];

    /// The name used on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Uncontended => "uncontended",
            Self::Contended => "contended",
            Self::Fairness => "fairness",
            Self::ManyLocks => "many-locks",
            Self::ServerCpu => "server-cpu",
            Self::Group => "group",
            Self::Handoff => "handoff",
            Self::Failover => "failover",
            Self::AutoExtend => "auto-extend",
            Self::HoldMany => "hold-many",
            Self::IdleFollowers => "idle-followers",
            Self::Partition => "partition",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == text)
    }

    /// A heading for the report.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Uncontended => "Uncontended: one task, one lock",
            Self::Contended => "Contended: 16 tasks on one lock, 1 ms critical section",
            Self::Fairness => {
                "Fairness across processes: 3 processes with 4, 4 and 1 tasks on one lock, 1 ms section"
            }
            Self::ManyLocks => "Many locks: 64 tasks on distinct locks, one client",
            Self::ServerCpu => "Server CPU per cycle: Redis CPU per acquire + release, 64 tasks",
            Self::Group => "Group: an Elector with max_leaders 3, 8 tasks, 1 ms critical section",
            Self::Handoff => "Hand-off latency: release → the next holder holds the lock",
            Self::Failover => "Failover: a holder is killed; time until a new holder",
            Self::AutoExtend => "Auto-extend overhead: 100 ms action, auto_extend on vs off",
            Self::HoldMany => "Holding many leases: store requests per second for N held leases",
            Self::IdleFollowers => {
                "Idle followers: store requests per second while F followers wait on a held lock"
            }
            Self::Partition => {
                "Partitions: 1,024 shards over P members; joins, kills, moves and requests per second"
            }
        }
    }

    /// What the scenario does and what its floor is.
    pub(crate) fn explanation(self) -> &'static str {
        match self {
            Self::Uncontended => {
                "leasehold: `run_if_leader` with `wait = 0`, a 30 s lease and an empty action, back to back; \
                 p50/p99 are per call. Floor: the store's own acquire and release issued raw with the same \
                 client (the fewest round trips a lock with fences needs on this backend; on etcd the \
                 put-if-absent transaction on a session lease granted once, then the compare-and-delete \
                 transaction). \
                 rslock (Redis): `lock` + `unlock`. etcd lock (etcd): the v3lock service's `Lock` + `Unlock` with \
                 a session lease granted once per concurrent caller."
            }
            Self::Contended => {
                "16 tasks loop on one lock; each turn takes the lock, sleeps 1 ms (1–2 ms on tokio's timer) \
                 and releases. leasehold waits up to 1 s per call (failures are calls whose wait ran out). \
                 Floor: 16 raw contenders, each trying the store's raw acquire, again every 1 ms while the \
                 lock is busy, then the section and the raw release (no fairness, no back-off). rslock: \
                 `lock()` (3 tries, 0–200 ms apart) around the section; failures are `lock()` calls that gave \
                 up. etcd lock: `Lock` (queued on the server) with a 1 s deadline around the section; failures \
                 are `Lock` calls that ran out. Serial limit: one task alone taking and releasing the lock raw around the same section, \
                 with no hand-off at all. \"per task\" is the fewest–most sections one task completed \
                 (fairness)."
            }
            Self::Fairness => {
                "Three processes (this binary run with `--contend`, each with its own client and \
                 elector) with 4, 4 and 1 tasks loop on one lock; each turn takes the lock with \
                 `run_if_leader` (wait 2 s), sleeps 1 ms and releases. \"per task\" is the fewest–most \
                 sections one task completed across all three processes (fair: max ÷ min near 1); \
                 failures are calls whose wait ran out. Serial limit: one task alone taking and \
                 releasing the lock raw around the same section. Memory: three electors in one \
                 process."
            }
            Self::ServerCpu => {
                "Redis only, on a private `redis-server` started for the run (no other client counted). \
                 leasehold, the floor and rslock each run 64 tasks on distinct locks as in many-locks, \
                 in alternating turns; around each turn `INFO commandstats` and `INFO cpu` are read. \
                 The figure is the `usec` of the commands the side sent (`EVALSHA`/`EVAL`/`FCALL` and \
                 `SET`; a script's time includes the commands it runs) ÷ the cycles completed; in \
                 brackets the server's main-thread CPU per cycle (reading requests and writing replies \
                 included) and the cycles per second on that server. Lower is better: leasehold ÷ \
                 rslock is how many times rslock's server CPU a cycle costs."
            }
            Self::ManyLocks => {
                "64 tasks on one client, each looping on its own lock as in the uncontended scenario. Floor: \
                 64 tasks issuing the raw acquire and release on their own locks. rslock / etcd lock: 64 tasks, \
                 `lock` + `unlock`."
            }
            Self::Group => {
                "8 tasks loop on one lock of an `Elector` with `max_leaders` 3 (wait 1 s), each holding a slot for \
                 1 ms. Floor: 8 raw contenders over 3 raw locks standing for the 3 slots, each trying them \
                 in order with the store's raw acquire (again every 1 ms while all are busy), then the \
                 section and the raw release."
            }
            Self::Handoff => {
                "A holder on one client and a waiter on a second client (as two processes). The waiter has \
                 been waiting a random 10–60 ms when the holder releases; the time runs from the release call \
                 until the waiter holds the lock. leasehold uses the store's release notifications where they \
                 reach every client (PostgreSQL LISTEN/NOTIFY, Redis pub/sub, etcd, ZooKeeper and NATS \
                 watches, SQLite's `data_version` read every 1 ms while someone waits, in-process for \
                 memory) and elsewhere (MySQL/MariaDB, DynamoDB) asks again at the default pace of a quiet \
                 follower on such stores: every third of its lease, a second at least (the waiter's lease is \
                 3 s, so once a second; a release is seen up to a second late). Floor: a raw release followed at \
                 once by a raw acquire — a waiter that learns of the release instantly. rslock: \
                 `acquire_no_guard` looping over `lock()`. etcd lock: the waiter's `Lock` on a second client, \
                 which etcd answers once the holder's `Unlock` deletes its key (a watch on the server)."
            }
            Self::Failover => {
                "A holder with `auto_extend` on and a 1 s lease is killed without releasing while another \
                 client waits for the lock; the figure is the time from the kill until the waiter holds the \
                 lock, next to the lease. Network and SQLite backends: the holder is a child process \
                 SIGKILLed at a random point 0.4–0.9 s after it took the lock. Memory: the holder's calls are \
                 cut off (every store operation fails) and its guard dropped, so its release never lands. \
                 Expect 0.67–1.0 × the lease (what was left of it after the last renewal) plus up to one \
                 polling interval of the waiter (at most 250 ms): nobody publishes a release when a holder \
                 dies."
            }
            Self::AutoExtend => {
                "8 tasks on distinct locks, each looping `run_if_leader` with a 100 ms action. leasehold: \
                 `auto_extend` on with a 150 ms lease (renewed every 50 ms, so about two extensions per \
                 call). Floor: the same with `auto_extend` off and a 30 s lease. The ratio is the cost of \
                 the watchdog and its extension round trips."
            }
            Self::HoldMany => {
                "One `Elector` (default options but a 3 s lease; auto-extend on) takes N distinct locks \
                 with `try_acquire` and keeps the guards; after a warm-up of one lease (11 s on PostgreSQL, \
                 whose idle backends report their statistics up to 10 s late), the store requests \
                 are counted over a 12 s window (3 s with `--quick`, and N = 1, 10, 100) from the \
                 server's own statistics (the statistic is named per row; the bench's own reads taken \
                 out), and client-side by a wrapper counting `LeaseStore` calls (`extend_many` = one). \
                 On NATS, without a monitoring port, the server figure is the writes the bench \
                 bucket's stream stored (its last sequence; reads are not counted, and holding \
                 leases reads nothing). Stores without statistics (memory, SQLite, DynamoDB on \
                 dynalite) show the client-side count only. \"÷ floor\" is requests/s ÷ the \
                 one-heartbeat floor, one request per renewal period (lease / 3): 1.0/s. **Lost** \
                 counts guards whose lease was lost by the end of the window. The guards are \
                 released between sizes; counts, not times, because the question is the load a \
                 holder puts on the store (see the notes)."
            }
            Self::IdleFollowers => {
                "One holder keeps one lock (3 s lease, auto-extend on) while F followers wait for it, \
                 each an `Elector` on its own store client (as separate processes), calling `run` \
                 with a wait longer than the window; nothing changes during the 12 s window (3 s with \
                 `--quick`, F = 1, 4). Requests are counted as in hold-many; **per follower** is \
                 (the server's count − the holder's client-side count) ÷ F (client-side where the \
                 store has no statistics); **writes/s** is the server's count of rows, keys or \
                 transactions changed (named per row): followers that write on every attempt show \
                 up there. The baseline for the follower work still to come."
            }
            Self::Partition => {
                "One partition set of 1,024 shards (256 with `--quick`; 3 s lease, so a member's \
                 period is 1 s) over P = 2, 4, 8, 16 members (2, 4 with `--quick`). Each member is an \
                 `Elector` on its own store client (SQL pools of two connections), driven by its own \
                 task in the bench process rather than a child process, so one clock judges every \
                 member's work; each runs one worker per owned shard, from the `Acquired` event until \
                 the shard's `ending()`, then drops the `ShardLease`. Members join one at a time; \
                 **join** is the time from the P-th member's join until every shard is owned once by a \
                 live member and the counts are within one, in leases, with the shards that changed \
                 owner in that time against the fewest a balanced assignment could move (the \
                 newcomer's share, rounded down). The P members' store requests are then counted \
                 over the 12 s window (3 s with `--quick`) as in hold-many. Then the oldest member is \
                 **killed**: its client is cut off (every call fails from then on, as after a SIGKILL) \
                 without leaving; **kill** is the time until the other P − 1 own every shard, balanced, \
                 in leases (expect about one lease plus a period: the killed member's leases must end \
                 first). **Two owners** counts shards whose work records overlapped (or whose fence did \
                 not rise across a move) over the run so far: it must be 0. The next size grows the set \
                 from P − 1."
            }
        }
    }

    /// Whether the scenario measures anything on `backend` (server CPU is read from Redis's
    /// counters, so that scenario runs on Redis only).
    pub(crate) fn runs_on(self, backend: Backend) -> bool {
        self != Self::ServerCpu || backend == Backend::Redis
    }

    /// How long the scenario may take before it counts as hung: the usual budget, or for the
    /// session scenarios their fixed windows, warm-ups and the time to take 10,000 leases.
    pub(crate) fn budget(self, cfg: &Config) -> Duration {
        let usual = Duration::from_secs_f64(cfg.seconds * 4.0 + 120.0);
        match self {
            Self::HoldMany => usual + Duration::from_secs(900),
            Self::IdleFollowers => usual + Duration::from_secs(300),
            Self::Partition => usual + Duration::from_secs(600),
            _ => usual,
        }
    }

    /// Whether the main figure is a rate or a time.
    pub(crate) fn unit(self) -> Unit {
        match self {
            Self::Handoff | Self::Failover => Unit::Millis,
            Self::ServerCpu => Unit::MicrosPerCycle,
            Self::HoldMany | Self::IdleFollowers | Self::Partition => Unit::RequestsPerSecond,
            _ => Unit::PerSecond,
        }
    }

    /// Runs the scenario on `target`.
    pub(crate) async fn run(self, t: &Target, cfg: &Config) -> Result<Outcome, BoxError> {
        let figures = match self {
            Self::Uncontended => uncontended::run(t, cfg).await?,
            Self::Contended => contended::run(t, cfg).await?,
            Self::Fairness => fairness::run(t, cfg).await?,
            Self::ManyLocks => many_locks::run(t, cfg).await?,
            Self::ServerCpu => server_cpu::run(t, cfg).await?,
            Self::Group => group::run(t, cfg).await?,
            Self::Handoff => handoff::run(t, cfg).await?,
            Self::Failover => failover::run(t, cfg).await?,
            Self::AutoExtend => auto_extend::run(t, cfg).await?,
            Self::HoldMany => hold_many::run(t, cfg).await?,
            Self::IdleFollowers => idle_followers::run(t, cfg).await?,
            Self::Partition => partition::run(t, cfg).await?,
        };
        Ok(Outcome {
            backend: t.backend.name(),
            scenario: self.name(),
            unit: self.unit(),
            figures,
        })
    }
}

/// An elector on `t`'s store that does not wait, with a 30 s lease.
fn impatient(t: &Target) -> Result<Elector, BoxError> {
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30))
        .build()?;
    Ok(Elector::with_options(t.store.clone(), options))
}

/// One `run_if_leader` with an empty action on a lock nobody else uses.
async fn run_once(elector: &Elector, lock: &LockName) -> Result<(), BoxError> {
    elector
        .run_if_leader(lock, |_| async {})
        .await?
        .ok_or("uncontended lock was busy")?;
    Ok(())
}

/// Throughput figures for the sides, named in order.
fn rates(names: &[&str], tallies: Vec<Tally>) -> Result<Vec<Figure>, BoxError> {
    names
        .iter()
        .zip(tallies)
        .map(|(name, t)| {
            if let Some(us) = t.cpu_us_per_op() {
                // The client's own CPU per operation (all threads of this process while the
                // side ran): not in the report, for profiling the client side.
                eprintln!("    client CPU, {name}: {us:.1} µs per op");
            }
            Ok(Figure::rate(name, t.check(name)?))
        })
        .collect()
}

/// The side names: leasehold, the floor, and the peer where the target has one.
fn side_names(t: &Target) -> Vec<&'static str> {
    let mut names = vec!["leasehold", "floor"];
    if t.peer.is_some() {
        names.push(t.peer.as_ref().map_or("peer", crate::peer::Peer::name));
    }
    names
}
