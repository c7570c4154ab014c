//! The servers' own request counters, read before and after a measuring window by the session
//! scenarios (hold-many, idle-followers):
//!
//! | store | requests | writes |
//! |---|---|---|
//! | PostgreSQL | `pg_stat_database.xact_commit` of the database | `tup_inserted + tup_updated + tup_deleted` |
//! | MySQL/MariaDB | `SHOW GLOBAL STATUS` `Questions` | `Handler_write + Handler_update + Handler_delete` |
//! | Redis | `INFO commandstats` calls of the commands clients send (scripts, `PING`, pub/sub) | `rdb_changes_since_last_save` |
//! | etcd | `/metrics` `grpc_server_msg_received_total`, summed | `etcd_debugging_mvcc_current_revision` |
//! | ZooKeeper | `mntr` `zk_packets_received` | the `srvr` `Zxid` (one per write transaction) |
//! | NATS JetStream KV | the bucket stream's last sequence: the writes it stored (no monitoring port on the test server, so reads are not counted) | the same |
//!
//! On PostgreSQL the scenarios run in a database of their own, created for the scenario and
//! dropped after it, and on Redis on a private `redis-server` (as the server-cpu scenario), so
//! that nobody else is counted ([`Isolated`]). Elsewhere the counters are the whole server's:
//! another client working on the same server at the same time is counted too, which is why the
//! scenarios count client-side as well. The reads themselves are taken out
//! ([`ServerStats::own`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::LeaseStore;
use leasehold_sql::SqlStore;
use sqlx::{Connection, Executor, Row};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::BoxError;
use crate::backend::Backend;
use crate::scenario::counting::Calls;
use crate::scenario::server_cpu::{PrivateRedis, commandstats_sum};
use crate::target::{Target, hosts};

/// The commands a Redis client sends for leasehold's operations. `INFO commandstats` also lists
/// the commands a script runs (`HSET`, `PEXPIRE`, `PUBLISH`, …) under their own names, so a sum
/// over every command would count each script several times; `INFO` itself (the reads) is left
/// out.
const REDIS_CLIENT_COMMANDS: [&str; 13] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "ping",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
];

/// The counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sample {
    pub(crate) requests: f64,
    pub(crate) writes: f64,
}

/// A connection to one server's statistics.
pub(crate) enum ServerStats {
    Postgres {
        conn: Box<sqlx::PgConnection>,
        /// Whether `pg_stat_force_next_flush()` exists (PostgreSQL 15 and later).
        flushes: bool,
    },
    Mysql(Box<sqlx::MySqlConnection>),
    Redis(redis::aio::MultiplexedConnection),
    Etcd(String),
    ZooKeeper(String),
    /// A client of the server and the bench bucket's stream.
    Nats(async_nats::jetstream::Context, String),
}

impl ServerStats {
    /// The statistics of `backend`'s server at `url`, or `None` for the stores without a server
    /// (memory, SQLite), without statistics (DynamoDB through dynalite) or without a monitoring
    /// port on the test server (NATS).
    pub(crate) async fn open(backend: Backend, url: &str) -> Result<Option<Self>, BoxError> {
        Ok(Some(match backend {
            Backend::Memory | Backend::Sqlite | Backend::DynamoDb | Backend::Nats => {
                return Ok(None);
            }
            Backend::Postgres => {
                let mut conn = connect_pg(url).await?;
                let flushes = conn
                    .execute("SELECT pg_stat_force_next_flush()")
                    .await
                    .is_ok();
                Self::Postgres {
                    conn: Box::new(conn),
                    flushes,
                }
            }
            Backend::Mysql => {
                let conn = match sqlx::MySqlConnection::connect(url).await {
                    Ok(c) => c,
                    Err(_) => sqlx::MySqlConnection::connect(without_query(url)).await?,
                };
                Self::Mysql(Box::new(conn))
            }
            Backend::Redis => Self::Redis(
                redis::Client::open(url)?
                    .get_multiplexed_async_connection()
                    .await?,
            ),
            Backend::Etcd => Self::Etcd(first_host(url)?),
            Backend::ZooKeeper => Self::ZooKeeper(first_host(url)?),
        }))
    }

    /// As [`open`](Self::open), and on NATS the bench bucket's stream, whose last sequence
    /// counts the writes it stored: the requests of a scenario that only writes (hold-many's
    /// renewals), not of one that reads (idle followers).
    pub(crate) async fn open_counting_writes(
        backend: Backend,
        url: &str,
    ) -> Result<Option<Self>, BoxError> {
        if backend != Backend::Nats {
            return Self::open(backend, url).await;
        }
        let store =
            leasehold_nats::NatsStore::connect_with(url, crate::backend::nats_options()).await?;
        let stream = format!("KV_{}", store.options().bucket());
        let js = async_nats::jetstream::new(store.client().await?);
        Ok(Some(Self::Nats(js, stream)))
    }

    /// What the requests figure counts.
    pub(crate) fn statistic(&self) -> &'static str {
        match self {
            Self::Postgres { .. } => "pg_stat_database.xact_commit",
            Self::Mysql(_) => "Questions",
            Self::Redis(_) => "commandstats: EVALSHA/EVAL/FCALL, PING, (UN)SUBSCRIBE calls",
            Self::Etcd(_) => "grpc_server_msg_received_total",
            Self::ZooKeeper(_) => "mntr zk_packets_received",
            Self::Nats(..) => "stream last sequence (stored writes; reads not counted)",
        }
    }

    /// What the writes figure counts.
    pub(crate) fn write_statistic(&self) -> &'static str {
        match self {
            Self::Postgres { .. } => "tup_inserted + tup_updated + tup_deleted",
            Self::Mysql(_) => "Handler_write + Handler_update + Handler_delete",
            Self::Redis(_) => "rdb_changes_since_last_save",
            Self::Etcd(_) => "etcd_debugging_mvcc_current_revision",
            Self::ZooKeeper(_) => "srvr Zxid",
            Self::Nats(..) => "stream last sequence",
        }
    }

    /// The requests the reads themselves add to the difference of two samples: on PostgreSQL
    /// the second read's flush and the first read's query (two transactions; one without the
    /// flush), on MySQL the second read's `SHOW` (`Questions` counts the statement that reads
    /// it), on ZooKeeper the first read's `srvr` and the second read's `mntr` (each four-letter
    /// word is a packet). Redis' `INFO` and etcd's HTTP `/metrics` are not counted.
    pub(crate) fn own(&self) -> f64 {
        match self {
            Self::Postgres { flushes, .. } => 1.0 + f64::from(u8::from(*flushes)),
            Self::Mysql(_) => 1.0,
            Self::ZooKeeper(_) => 2.0,
            Self::Redis(_) | Self::Etcd(_) | Self::Nats(..) => 0.0,
        }
    }

    /// How long to wait before the first read so that the counters hold everything done before
    /// it: on PostgreSQL a backend that goes idle reports its pending statistics up to 10 s
    /// later (`PGSTAT_IDLE_INTERVAL`), and `pg_stat_force_next_flush()` flushes only the calling
    /// backend's — without the wait, the acquisitions of a pool connection that has gone idle
    /// land in the window.
    pub(crate) fn settle(stats: Option<&Self>) -> Duration {
        match stats {
            Some(Self::Postgres { .. }) => Duration::from_secs(11),
            _ => Duration::ZERO,
        }
    }

    /// The counters now.
    pub(crate) async fn read(&mut self) -> Result<Sample, BoxError> {
        match self {
            Self::Postgres { conn, flushes } => {
                if *flushes {
                    conn.execute("SELECT pg_stat_force_next_flush()").await?;
                }
                let row = conn
                    .fetch_one(
                        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted \
                         FROM pg_stat_database WHERE datname = current_database()",
                    )
                    .await?;
                Ok(Sample {
                    requests: row.try_get::<i64, _>(0)? as f64,
                    writes: row.try_get::<i64, _>(1)? as f64,
                })
            }
            Self::Mysql(conn) => {
                let rows = conn
                    .fetch_all(
                        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', \
                         'Handler_write', 'Handler_update', 'Handler_delete')",
                    )
                    .await?;
                let mut sample = Sample::default();
                for row in rows {
                    let name: String = row.try_get(0)?;
                    let value: f64 = row.try_get::<String, _>(1)?.trim().parse()?;
                    if name.eq_ignore_ascii_case("Questions") {
                        sample.requests = value;
                    } else {
                        sample.writes += value;
                    }
                }
                Ok(sample)
            }
            Self::Redis(conn) => {
                let stats: String = redis::cmd("INFO")
                    .arg("commandstats")
                    .query_async(conn)
                    .await?;
                let persistence: String = redis::cmd("INFO")
                    .arg("persistence")
                    .query_async(conn)
                    .await?;
                Ok(Sample {
                    requests: redis_calls(&stats),
                    writes: field(&persistence, "rdb_changes_since_last_save", ':')
                        .ok_or("INFO persistence has no rdb_changes_since_last_save")?,
                })
            }
            Self::Etcd(host) => {
                let text = http_get(host, "/metrics").await?;
                Ok(Sample {
                    requests: prometheus_sum(&text, "grpc_server_msg_received_total"),
                    writes: prometheus_sum(&text, "etcd_debugging_mvcc_current_revision"),
                })
            }
            Self::ZooKeeper(host) => {
                let mntr = four_letter_word(host, "mntr").await?;
                let srvr = four_letter_word(host, "srvr").await?;
                Ok(Sample {
                    requests: field(&mntr, "zk_packets_received", '\t')
                        .ok_or("mntr has no zk_packets_received (is `mntr` whitelisted?)")?,
                    writes: zxid(&srvr).ok_or("srvr has no Zxid")?,
                })
            }
            Self::Nats(js, stream) => {
                let mut stream = js.get_stream(stream.as_str()).await?;
                let last = stream.info().await?.state.last_sequence;
                Ok(Sample {
                    requests: last as f64,
                    writes: last as f64,
                })
            }
        }
    }
}

/// What a window counted: per second.
#[derive(Debug, Clone)]
pub(crate) struct Counted {
    /// The server's requests and writes per second, where it has statistics.
    pub(crate) server: Option<(f64, Option<f64>)>,
    /// The client-side count of each group of [`Calls`], per second.
    pub(crate) client: Vec<f64>,
    /// The window's length, s (from the first read's answer to the second's).
    pub(crate) seconds: f64,
}

/// Counts the requests over `window`: the server's counters (if any) and each group of `calls`.
pub(crate) async fn count_over(
    stats: &mut Option<ServerStats>,
    calls: &[&Calls],
    window: Duration,
) -> Result<Counted, BoxError> {
    let before = match stats {
        Some(s) => Some(s.read().await?),
        None => None,
    };
    let started = Instant::now();
    let client_before: Vec<u64> = calls.iter().map(|c| c.all()).collect();
    tokio::time::sleep(window).await;
    let client_after: Vec<u64> = calls.iter().map(|c| c.all()).collect();
    let slept = started.elapsed().as_secs_f64();
    let after = match stats {
        Some(s) => Some(s.read().await?),
        None => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    let server = match (stats, before, after) {
        (Some(s), Some(b), Some(a)) => {
            let requests = (a.requests - b.requests - s.own()).max(0.0) / seconds;
            // A counter that went back (a Redis save resets its change count) says nothing.
            let writes = (a.writes >= b.writes).then(|| (a.writes - b.writes) / seconds);
            Some((requests, writes))
        }
        _ => None,
    };
    Ok(Counted {
        server,
        client: client_before
            .iter()
            .zip(client_after)
            .map(|(b, a)| a.saturating_sub(*b) as f64 / slept)
            .collect(),
        seconds,
    })
}

/// The first `host:port` of a store URL.
fn first_host(url: &str) -> Result<String, BoxError> {
    hosts(url)
        .into_iter()
        .next()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("no host in {url}").into())
}

fn without_query(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}

/// The summed `calls` of [`REDIS_CLIENT_COMMANDS`] in an `INFO commandstats` reply.
fn redis_calls(info: &str) -> f64 {
    commandstats_sum(info, &REDIS_CLIENT_COMMANDS, "calls")
}

/// The value of `name` in `name<sep>value` lines.
fn field(text: &str, name: &str, sep: char) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(sep))
        .and_then(|v| v.trim().parse().ok())
}

/// The sum of every sample of the metric `name` (any labels) in Prometheus' text format.
fn prometheus_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            // `name{labels} value` or `name value`, not a longer name.
            let rest = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once('}')?.1,
                None if rest.starts_with(' ') => rest,
                None => return None,
            };
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .sum()
}

/// The `Zxid: 0x…` of a `srvr` reply.
fn zxid(srvr: &str) -> Option<f64> {
    let hex = srvr
        .lines()
        .find_map(|l| l.strip_prefix("Zxid:"))?
        .trim()
        .trim_start_matches("0x");
    u64::from_str_radix(hex, 16).ok().map(|z| z as f64)
}

/// Reads everything a server sends after `request` until it closes the connection.
async fn exchange(host: &str, request: &[u8]) -> Result<String, BoxError> {
    let mut stream = tokio::net::TcpStream::connect(host).await?;
    stream.write_all(request).await?;
    let mut reply = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut reply),
    )
    .await
    .map_err(|_| format!("{host} did not finish its answer within 10 s"))??;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// ZooKeeper's four-letter word `word`.
async fn four_letter_word(host: &str, word: &str) -> Result<String, BoxError> {
    exchange(host, word.as_bytes()).await
}

/// The body of a plain HTTP/1.0 `GET` (the server closes the connection after it, so no
/// chunked encoding).
async fn http_get(host: &str, path: &str) -> Result<String, BoxError> {
    let reply = exchange(
        host,
        format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes(),
    )
    .await?;
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("GET {path} on {host}: no HTTP answer"))?;
    let status = head.lines().next().unwrap_or_default();
    if !status.contains(" 200") {
        return Err(format!("GET {path} on {host}: {status}").into());
    }
    Ok(body.to_owned())
}

/// Where a session scenario runs: the target's server, or one of its own where the statistics
/// would otherwise count other clients (a private PostgreSQL database, a private `redis-server`).
pub(crate) struct Isolated {
    /// The URL the scenario's clients connect to.
    pub(crate) url: String,
    /// The private database, dropped by [`close`](Self::close): (the admin URL, its name).
    database: Option<(String, String)>,
    /// The private Redis, killed when dropped.
    _redis: Option<PrivateRedis>,
}

impl Isolated {
    pub(crate) async fn open(t: &Target, what: &str) -> Result<Self, BoxError> {
        match t.backend {
            Backend::Postgres => {
                let name = format!("leasehold_bench_{}", t.resource(what, 0).replace('-', "_"));
                let mut admin = connect_pg(&t.url).await?;
                admin
                    .execute(format!("CREATE DATABASE \"{name}\"").as_str())
                    .await?;
                Ok(Self {
                    url: with_database(&t.url, &name),
                    database: Some((t.url.clone(), name)),
                    _redis: None,
                })
            }
            Backend::Redis => {
                let redis = PrivateRedis::start().await?;
                Ok(Self {
                    url: redis.url.clone(),
                    database: None,
                    _redis: Some(redis),
                })
            }
            _ => Ok(Self {
                url: t.url.clone(),
                database: None,
                _redis: None,
            }),
        }
    }

    /// Drops the private database (its connections first).
    pub(crate) async fn close(self) -> Result<(), BoxError> {
        if let Some((admin_url, name)) = &self.database {
            let mut admin = connect_pg(admin_url).await?;
            admin
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                .await?;
        }
        Ok(())
    }

    /// A new client, as [`Target::client`] but at the isolated URL.
    pub(crate) async fn client(&self, t: &Target) -> Result<Arc<dyn LeaseStore>, BoxError> {
        t.client_at(&self.url).await
    }

    /// A client for one follower: as [`client`](Self::client), with SQL pools of two
    /// connections (a waiting follower uses one for its attempts and, on PostgreSQL, one for
    /// `LISTEN`), so that 64 followers fit in the servers' connection limits.
    pub(crate) async fn follower_client(
        &self,
        t: &Target,
    ) -> Result<Arc<dyn LeaseStore>, BoxError> {
        match t.backend {
            Backend::Postgres | Backend::Mysql | Backend::Sqlite => Ok(Arc::new(
                SqlStore::connect_with(
                    &self.url,
                    leasehold_sql::SqlOptions::default().with_max_connections(2),
                )
                .await?,
            )),
            _ => self.client(t).await,
        }
    }
}

async fn connect_pg(url: &str) -> Result<sqlx::PgConnection, BoxError> {
    Ok(match sqlx::PgConnection::connect(url).await {
        Ok(c) => c,
        // The store's own query options are not sqlx's.
        Err(_) => sqlx::PgConnection::connect(without_query(url)).await?,
    })
}

/// `url` with its database (the path) replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_at = base.find("://").map_or(0, |i| i + 3);
    let path_at = base[authority_at..]
        .find('/')
        .map_or(base.len(), |i| authority_at + i);
    let mut out = format!("{}/{name}", &base[..path_at]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_counts_the_commands_clients_send() {
        let info = "# Commandstats\r\n\
            cmdstat_evalsha:calls=10,usec=120,usec_per_call=12.00\r\n\
            cmdstat_hset:calls=10,usec=30,usec_per_call=3.00\r\n\
            cmdstat_info:calls=2,usec=50,usec_per_call=25.00\r\n\
            cmdstat_ping:calls=1,usec=1,usec_per_call=1.00\r\n";
        assert!((redis_calls(info) - 11.0).abs() < 1e-9);
        let persistence = "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:78898\r\n";
        assert_eq!(
            field(persistence, "rdb_changes_since_last_save", ':'),
            Some(78898.0)
        );
    }

    #[test]
    fn prometheus_samples_are_summed_by_name() {
        let text = "# HELP grpc_server_msg_received_total x\n\
            grpc_server_msg_received_total{grpc_method=\"Range\"} 5\n\
            grpc_server_msg_received_total{grpc_method=\"Txn\"} 7\n\
            grpc_server_msg_received_total_other 100\n\
            etcd_debugging_mvcc_current_revision 13747\n";
        assert!((prometheus_sum(text, "grpc_server_msg_received_total") - 12.0).abs() < 1e-9);
        assert!(
            (prometheus_sum(text, "etcd_debugging_mvcc_current_revision") - 13747.0).abs() < 1e-9
        );
    }

    #[test]
    fn zookeeper_words_are_parsed() {
        let mntr = "zk_version\t3.8.0\nzk_packets_received\t75338\n";
        assert_eq!(field(mntr, "zk_packets_received", '\t'), Some(75338.0));
        let srvr = "Zookeeper version: 3.8.0\nReceived: 1\nZxid: 0x6daa\nMode: standalone\n";
        assert_eq!(zxid(srvr), Some(28074.0));
    }

    #[test]
    fn hosts_come_from_store_urls() -> Result<(), BoxError> {
        assert_eq!(
            first_host("zk://127.0.0.1:21810,h:2/chroot?skew=50ms")?,
            "127.0.0.1:21810"
        );
        assert_eq!(first_host("etcd://127.0.0.1:23790")?, "127.0.0.1:23790");
        assert_eq!(
            without_query("postgres://u@h/db?table=x"),
            "postgres://u@h/db"
        );
        Ok(())
    }
}
