//! What a scenario measured on one backend: one figure per side (leasehold first, its floor
//! second, then any peer), serialisable for the JSON report.

use serde::Serialize;

use crate::measure::Tally;
pub(crate) use crate::scenario::PartitionFigures;

/// The names of the peers' sides: rslock on Redis, etcd's v3lock service on etcd.
pub(crate) const PEERS: [&str; 2] = ["rslock", "etcd lock"];

/// What a side's main figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Unit {
    /// Operations (or sections) per second: higher is better.
    PerSecond,
    /// Milliseconds (latency, takeover time): lower is better.
    Millis,
    /// Microseconds of server CPU per acquire + release: lower is better.
    MicrosPerCycle,
    /// Store requests per second while nothing changes (the session scenarios): lower is
    /// better. One figure per size (leases held, followers waiting).
    RequestsPerSecond,
}

/// One side's figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Figure {
    pub(crate) side: String,
    /// The main figure, in the outcome's unit (for latencies: the p50).
    pub(crate) value: f64,
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
    /// Operations (or samples) behind the figure.
    pub(crate) count: u64,
    /// Skips, failed lock calls or errors.
    pub(crate) failures: u64,
    /// Fewest and most operations of one task, where tasks were tracked.
    pub(crate) per_task: Option<(u64, u64)>,
    pub(crate) first_error: Option<String>,
    /// For server CPU figures: the server process's CPU per cycle, µs, and the side's throughput
    /// (cycles per second) while it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) server: Option<ServerFigures>,
    /// For the session scenarios: the requests counted, by the server and by the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) requests: Option<RequestFigures>,
    /// For the partition scenario: joins, kills and moves at one size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) partition: Option<PartitionFigures>,
}

/// What a session scenario counted at one size over its window (the figure's `value` is
/// `server_per_s` where the server has statistics, else `client_per_s`; its `count` is the
/// size; its `failures` the leases lost).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RequestFigures {
    /// Leases held (hold-many) or followers waiting (idle-followers).
    pub(crate) size: u64,
    /// The window the requests were counted over, s.
    pub(crate) window_s: f64,
    /// Requests per second from the server's own statistics (the reads themselves taken out);
    /// `None` where the store has none.
    pub(crate) server_per_s: Option<f64>,
    /// The server statistic behind `server_per_s`.
    pub(crate) statistic: Option<&'static str>,
    /// Writes per second from the server's statistics (rows, keys or transactions changed).
    pub(crate) writes_per_s: Option<f64>,
    /// The statistic behind `writes_per_s`.
    pub(crate) write_statistic: Option<&'static str>,
    /// `LeaseStore` calls per second counted by the bench's wrapper (`extend_many` = 1).
    pub(crate) client_per_s: f64,
    /// Of those, the followers' alone (idle-followers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) followers_client_per_s: Option<f64>,
    /// Leases lost by the end of the window (hold-many: guards; idle-followers: the holder's).
    pub(crate) lost: u64,
    /// Seconds taken to acquire the leases (hold-many).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) acquire_s: Option<f64>,
}

/// The figures a server CPU side carries beside its main one (µs of command time per cycle).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ServerFigures {
    /// The server's main-thread CPU (user + system) per cycle, µs: request parsing and replies
    /// included.
    pub(crate) process_us: f64,
    /// Cycles per second while the side ran.
    pub(crate) rate: f64,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Figure {
    /// A throughput figure from a tally.
    pub(crate) fn rate(side: &str, mut t: Tally) -> Self {
        Self {
            side: side.to_owned(),
            value: t.rate(),
            p50_ms: t.percentile(50.0).map(ms),
            p99_ms: t.percentile(99.0).map(ms),
            count: t.ops,
            failures: t.failures,
            per_task: spread(&t.per_task),
            first_error: t.first_error,
            server: None,
            requests: None,
            partition: None,
        }
    }

    /// A latency figure (the p50 is the value) from a tally of samples.
    pub(crate) fn latency(side: &str, mut t: Tally) -> Self {
        let p50 = t.percentile(50.0).map(ms);
        Self {
            side: side.to_owned(),
            value: p50.unwrap_or(f64::NAN),
            p50_ms: p50,
            p99_ms: t.percentile(99.0).map(ms),
            count: t.latencies.len() as u64,
            failures: t.failures,
            per_task: None,
            first_error: t.first_error,
            server: None,
            requests: None,
            partition: None,
        }
    }

    /// A fixed reference value (such as the lease a takeover is compared with).
    pub(crate) fn reference(side: &str, value: f64) -> Self {
        Self {
            side: side.to_owned(),
            value,
            p50_ms: None,
            p99_ms: None,
            count: 0,
            failures: 0,
            per_task: None,
            first_error: None,
            server: None,
            requests: None,
            partition: None,
        }
    }

    /// A server CPU figure: `command_us` of command time per cycle (the value), `process_us` of
    /// the server's CPU per cycle, over the cycles of `t`.
    pub(crate) fn server_cpu(side: &str, command_us: f64, process_us: f64, t: Tally) -> Self {
        Self {
            side: side.to_owned(),
            value: command_us,
            p50_ms: None,
            p99_ms: None,
            count: t.ops,
            failures: t.failures,
            per_task: None,
            server: Some(ServerFigures {
                process_us,
                rate: t.rate(),
            }),
            requests: None,
            partition: None,
            first_error: t.first_error,
        }
    }

    /// A session figure: the requests counted at one size (`side` names it, e.g. `N = 100`).
    pub(crate) fn requests(side: String, r: RequestFigures, first_error: Option<String>) -> Self {
        Self {
            side,
            value: r.server_per_s.unwrap_or(r.client_per_s),
            p50_ms: None,
            p99_ms: None,
            count: r.size,
            failures: r.lost,
            per_task: None,
            first_error,
            server: None,
            requests: Some(r),
            partition: None,
        }
    }
}

fn spread(per_task: &[u64]) -> Option<(u64, u64)> {
    Some((*per_task.iter().min()?, *per_task.iter().max()?))
}

/// One scenario on one backend.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Outcome {
    pub(crate) backend: &'static str,
    pub(crate) scenario: &'static str,
    pub(crate) unit: Unit,
    /// leasehold, then the floor, then peers.
    pub(crate) figures: Vec<Figure>,
}

impl Outcome {
    /// leasehold's figure divided by the floor's.
    pub(crate) fn ratio_to_floor(&self) -> Option<f64> {
        self.ratio(1)
    }

    /// leasehold's figure divided by the peer's (rslock, etcd lock), where there is one.
    pub(crate) fn ratio_to_peer(&self) -> Option<f64> {
        let peer = self
            .figures
            .iter()
            .position(|f| PEERS.contains(&f.side.as_str()))?;
        self.ratio(peer)
    }

    /// The figure of the side called `side`.
    pub(crate) fn figure(&self, side: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.side == side)
    }

    fn ratio(&self, other: usize) -> Option<f64> {
        let ours = self.figures.first()?.value;
        let theirs = self.figures.get(other)?.value;
        let r = ours / theirs;
        r.is_finite().then_some(r)
    }
}
