//! Server CPU per cycle (Redis): how much of the Redis server one acquire + release costs, for
//! leasehold, its floor and rslock, read from the server's own counters.
//!
//! The sides run on a **private** `redis-server` started for the scenario (on a free port, no
//! persistence), so no other client's commands are counted. Each side runs [`TASKS`] tasks on
//! distinct locks, as in the many-locks scenario, in alternating turns; around each turn the
//! scenario reads `INFO commandstats` and `INFO cpu`, and charges the difference to the side:
//!
//! * **commandstats**: the `usec` of the commands a client sends ([`CLIENT_COMMANDS`]: the
//!   scripts and `SET`) ÷ the cycles completed. A script's `usec` includes the commands it runs
//!   (which `INFO commandstats` lists again under their own names, so those are not added).
//! * **process CPU**: the main thread's user + system CPU (`used_cpu_*_main_thread`) ÷ the cycles:
//!   everything the server did for them, reading and parsing requests and writing replies
//!   included. The `INFO` calls themselves (two per turn) are in it; they are negligible beside
//!   thousands of cycles.
//!
//! Where `redis-server` cannot be started, the scenario fails rather than measure a shared server.

use std::cell::RefCell;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector};
use leasehold_redis::RedisStore;
use tokio::process::{Child, Command};

use crate::BoxError;
use crate::backend::redis_options;
use crate::floor::Floor;
use crate::measure::{Side, Tally, alternate, repeat_concurrently};
use crate::outcome::Figure;
use crate::peer::Rslock;
use crate::scenario::{Config, run_once};
use crate::target::Target;

/// Concurrent tasks per side, each on its own lock (as in many-locks).
const TASKS: usize = 64;

/// Turns per side.
const TURNS: u32 = 10;

/// The commands clients send for a lock cycle: the scripts (leasehold's, rslock's
/// compare-and-delete) and `SET` (rslock's `SET NX PX`). Everything else in `INFO commandstats`
/// is either run inside a script (and so inside the script's own `usec`) or not a lock command.
const CLIENT_COMMANDS: [&str; 7] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "set",
];

/// How long the private server may take to answer its first `PING`.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A `redis-server` child on a free loopback port, killed when dropped.
pub(super) struct PrivateRedis {
    _child: Child,
    pub(super) url: String,
}

impl PrivateRedis {
    pub(super) async fn start() -> Result<Self, BoxError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(std::env::temp_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("server-cpu starts a private redis-server (on PATH): {e}"))?;
        let server = Self {
            _child: child,
            url: format!("redis://127.0.0.1:{port}"),
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            match server.admin().await {
                Ok(_) => return Ok(server),
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    return Err(format!("the private redis-server did not answer: {e}").into());
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// A connection for `INFO`, checked with `PING`.
    async fn admin(&self) -> Result<redis::aio::MultiplexedConnection, BoxError> {
        let mut conn = redis::Client::open(self.url.as_str())?
            .get_multiplexed_async_connection()
            .await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(conn)
    }
}

/// The server's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    /// Summed `usec` of [`CLIENT_COMMANDS`].
    command_us: f64,
    /// Main-thread user + system CPU, µs.
    process_us: f64,
}

impl Counters {
    async fn read(conn: &mut redis::aio::MultiplexedConnection) -> Result<Self, BoxError> {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(conn)
            .await?;
        let cpu: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
        Ok(Self {
            command_us: command_usec(&stats),
            process_us: main_thread_cpu_us(&cpu)?,
        })
    }
}

/// The summed `usec` of [`CLIENT_COMMANDS`] in an `INFO commandstats` reply.
fn command_usec(info: &str) -> f64 {
    commandstats_sum(info, &CLIENT_COMMANDS, "usec")
}

/// The sum of `field` (`calls`, `usec`, …) over the `commands` listed in an
/// `INFO commandstats` reply.
pub(super) fn commandstats_sum(info: &str, commands: &[&str], field: &str) -> f64 {
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_")?.split_once(':'))
        .filter(|(name, _)| commands.contains(name))
        .filter_map(|(_, fields)| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(field)?.strip_prefix('='))?
                .parse::<f64>()
                .ok()
        })
        .sum()
}

/// The main thread's user + system CPU in µs from an `INFO cpu` reply (the whole process's on
/// servers before 6.2, which do not report the main thread apart).
fn main_thread_cpu_us(info: &str) -> Result<f64, BoxError> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let seconds = match (
        field("used_cpu_user_main_thread"),
        field("used_cpu_sys_main_thread"),
    ) {
        (Some(user), Some(sys)) => user + sys,
        _ => match (field("used_cpu_user"), field("used_cpu_sys")) {
            (Some(user), Some(sys)) => user + sys,
            _ => return Err("INFO cpu has no used_cpu_user / used_cpu_sys".into()),
        },
    };
    Ok(seconds * 1e6)
}

/// What one side cost the server over all its turns.
#[derive(Debug, Clone, Copy, Default)]
struct Charged {
    command_us: f64,
    process_us: f64,
    cycles: u64,
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let server = PrivateRedis::start().await?;
    let store = Arc::new(RedisStore::connect_with(&server.url, redis_options()).await?);
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30))
        .build()?;
    let elector = Elector::with_options(store.clone(), options);
    let floor = Floor::Redis(store);
    let rslock = Rslock::new(&server.url);
    let ours = (0..TASKS)
        .map(|i| t.lock("cpu", i))
        .collect::<Result<Vec<_>, _>>()?;
    let floor_locks = (0..TASKS)
        .map(|i| t.lock("cpu-floor", i))
        .collect::<Result<Vec<_>, _>>()?;
    let resources: Vec<String> = (0..TASKS).map(|i| t.resource("cpu-rslock", i)).collect();
    // Warm up (connections, script loads) outside the measured turns.
    for i in 0..TASKS {
        run_once(&elector, &ours[i]).await?;
        floor.round_trip(&floor_locks[i]).await?;
        rslock.round_trip(&resources[i]).await?;
    }
    let admin = server.admin().await?;
    let charged = RefCell::new([Charged::default(); 3]);
    let (elector, ours, floor_locks, resources) = (&elector, &ours, &floor_locks, &resources);
    let (floor, rslock, admin, charged) = (&floor, &rslock, &admin, &charged);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(move |d| {
            Box::pin(charge(admin, charged, 0, async move {
                repeat_concurrently(d, TASKS, move |i| run_once(elector, &ours[i])).await
            }))
        }),
        Box::new(move |d| {
            Box::pin(charge(admin, charged, 1, async move {
                repeat_concurrently(d, TASKS, move |i| floor.round_trip(&floor_locks[i])).await
            }))
        }),
        Box::new(move |d| {
            Box::pin(charge(admin, charged, 2, async move {
                repeat_concurrently(d, TASKS, move |i| rslock.round_trip(&resources[i])).await
            }))
        }),
    ];
    let tallies = alternate(cfg.total(), TURNS, &mut sides).await?;
    drop(sides);
    let charged = charged.take();
    ["leasehold", "floor", crate::outcome::PEERS[0]]
        .into_iter()
        .zip(tallies)
        .zip(charged)
        .map(|((side, tally), c)| {
            let tally = tally.check(side)?;
            if c.cycles == 0 {
                return Err(format!("{side}: no cycle completed").into());
            }
            let cycles = c.cycles as f64;
            Ok(Figure::server_cpu(
                side,
                c.command_us / cycles,
                c.process_us / cycles,
                tally,
            ))
        })
        .collect()
}

/// Runs one turn of a side, charging the server's counters over it to `charged[side]`.
async fn charge(
    admin: &redis::aio::MultiplexedConnection,
    charged: &RefCell<[Charged; 3]>,
    side: usize,
    turn: impl Future<Output = Result<Tally, BoxError>>,
) -> Result<Tally, BoxError> {
    let mut conn = admin.clone();
    let before = Counters::read(&mut conn).await?;
    let tally = turn.await?;
    let after = Counters::read(&mut conn).await?;
    let mut all = charged.borrow_mut();
    if let Some(c) = all.get_mut(side) {
        c.command_us += after.command_us - before.command_us;
        c.process_us += after.process_us - before.process_us;
        c.cycles += tally.ops;
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::{command_usec, main_thread_cpu_us};

    #[test]
    fn commandstats_count_the_commands_clients_send_only() {
        let info = "# Commandstats\r\n\
            cmdstat_evalsha:calls=10,usec=120,usec_per_call=12.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_hset:calls=10,usec=30,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_set:calls=5,usec=7,usec_per_call=1.40,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_info:calls=2,usec=50,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n";
        assert!((command_usec(info) - 127.0).abs() < 1e-9);
    }

    #[test]
    fn cpu_prefers_the_main_thread() {
        let info = "# CPU\r\nused_cpu_sys:2.5\r\nused_cpu_user:1.5\r\n\
            used_cpu_sys_main_thread:0.25\r\nused_cpu_user_main_thread:0.5\r\n";
        assert!((main_thread_cpu_us(info).unwrap_or_default() - 750_000.0).abs() < 1e-6);
        let old = "used_cpu_sys:2.5\r\nused_cpu_user:1.5\r\n";
        assert!((main_thread_cpu_us(old).unwrap_or_default() - 4_000_000.0).abs() < 1e-6);
        assert!(main_thread_cpu_us("nothing").is_err());
    }
}
