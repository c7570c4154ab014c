//! The axum equivalent of the Ktor plugin's `ktor-app`: leader-only jobs bound to the server's
//! lifecycle, the management route and Prometheus metrics behind a bearer token, a health check
//! with client-go's semantics, a leader-only route.
//!
//! ```text
//! LEASEHOLD_MANAGEMENT_TOKEN=$(openssl rand -hex 32) \
//!   cargo run -p leasehold-axum --example axum_app -- [--listen 127.0.0.1:8080] [--node NAME]
//!       [--store sqlite:///path/to.db | --memory] [--run-for SECONDS]
//! curl -H "Authorization: Bearer $LEASEHOLD_MANAGEMENT_TOKEN" localhost:8080/management/leader-election
//! curl -H "Authorization: Bearer $LEASEHOLD_MANAGEMENT_TOKEN" localhost:8080/metrics
//! curl localhost:8080/healthz             # 503 only if this node leads without renewing
//! curl -X POST localhost:8080/rebuild   # 503 + Retry-After on followers
//! ```
//!
//! Without `--store` it uses the embedded default store: an SQLite file in
//! `$XDG_STATE_HOME/leasehold/axum-app.db` (or `~/.local/state/leasehold/`, or the temp dir).
//! Start it twice with different `--listen`/`--node` to watch the job run on one instance only.
//! It stops cleanly on Ctrl-C, on SIGTERM (what systemd, Kubernetes and docker send) or after
//! `--run-for SECONDS`: the server, the jobs and the leader-only campaign stop together and their
//! leases are released, so another instance takes over at once.

#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::{Extension, Router};
use leasehold::{CancellationToken, ElectionOptions, Elector, Job, LeaseStore, MemoryStore};
use leasehold_axum::{
    BearerToken, LeaderFence, LeaderHealth, LeaderJobs, LeaderOnly, PrometheusMetrics,
};
use leasehold_sql::SqlStore;
use tracing::{info, warn};

struct Args {
    listen: SocketAddr,
    node: Option<String>,
    store: Option<String>,
    memory: bool,
    run_for: Option<Duration>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
        node: None,
        store: None,
        memory: false,
        run_for: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => args.listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--node" => args.node = Some(value()?),
            "--store" => args.store = Some(value()?),
            "--memory" => args.memory = true,
            "--run-for" => {
                let secs: f64 = value()?.parse().map_err(|e| format!("--run-for: {e}"))?;
                args.run_for =
                    Some(Duration::try_from_secs_f64(secs).map_err(|e| format!("--run-for: {e}"))?);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// The default embedded store: an SQLite file in the state directory.
fn default_sqlite_url() -> Result<String, Box<dyn std::error::Error>> {
    let dir = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("leasehold");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("axum-app.db");
    let path = path
        .to_str()
        .ok_or("the state directory is not valid UTF-8; pass --store")?;
    Ok(format!(
        "sqlite://{}",
        path.replace('%', "%25")
            .replace('?', "%3F")
            .replace('#', "%23")
    ))
}

// pub(crate): tests/sigterm.rs runs this very example in a child process and signals it.
#[tokio::main]
pub(crate) async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = parse_args()?;
    // Installed first: from here on SIGINT and SIGTERM start a clean shutdown instead of killing
    // the process with its leases held.
    let signal = leasehold_axum::shutdown_signal();
    // Install the recorder before the first election so every metric is collected.
    let prometheus = PrometheusMetrics::install()?;

    let store: Arc<dyn LeaseStore> = if args.memory {
        Arc::new(MemoryStore::new())
    } else {
        let url = match args.store {
            Some(url) => url,
            None => default_sqlite_url()?,
        };
        info!(store = %leasehold::store::redact_url(&url), "opening the lease store");
        Arc::new(SqlStore::connect(&url).await?)
    };
    let mut options = ElectionOptions::builder()
        .lease(Duration::from_secs(30))
        .auto_extend(true);
    if let Some(node) = args.node {
        options = options.node_id(node);
    }
    let elector = Elector::with_options(store, options.build()?);
    // GET /healthz for a liveness probe: 503 only while this node leads a lock it has not renewed
    // for the lease plus 20 s (client-go's HealthzAdaptor).
    let health = LeaderHealth::new(&elector).router()?;

    let shutdown = CancellationToken::new();
    let jobs = LeaderJobs::new(elector.clone())
        .grace_period(Duration::from_secs(5))
        .every(
            "projection-refresh",
            Duration::from_secs(10),
            |ctx| async move {
                info!(
                    fence = ctx.fence(),
                    "refreshing the projection (leader only)"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok::<_, std::io::Error>(())
            },
        )
        .job(
            Job::every(
                "nightly-report",
                Duration::from_secs(60),
                |ctx| async move {
                    info!(fence = ctx.fence(), "building the report (leader only)");
                    Ok::<_, String>(())
                },
            )
            .offset(Duration::from_secs(30)),
        )
        .start(shutdown.clone())?;
    let leader = LeaderOnly::builder(&elector, "api-writer").start(shutdown.clone())?;

    // Shows which node leads api-writer; serves /metrics behind the same authentication.
    let management = jobs.management().leader(&leader).metrics(prometheus);
    let management = match BearerToken::from_env("LEASEHOLD_MANAGEMENT_TOKEN")? {
        Some(token) => management.bearer_token(token),
        None => {
            warn!(
                "LEASEHOLD_MANAGEMENT_TOKEN is unset: management is served only on a loopback address"
            );
            management.loopback_only(args.listen)
        }
    };
    let app = Router::new()
        .route(
            "/rebuild",
            post(
                |Extension(LeaderFence(fence)): Extension<LeaderFence>| async move {
                    format!("rebuilding with fence {fence}\n")
                },
            ),
        )
        .route_layer(leader.layer())
        .merge(health)
        .merge(match management.router() {
            Ok(router) => router,
            Err(e) => {
                // A configuration error: stop what was started, releasing its leases.
                shutdown.cancel();
                jobs.stopped().await;
                leader.stopped().await;
                return Err(e.into());
            }
        });

    let stop = shutdown.clone();
    tokio::spawn(async move {
        match args.run_for {
            Some(after) => tokio::select! {
                () = signal => {}
                () = tokio::time::sleep(after) => info!(?after, "--run-for elapsed"),
            },
            None => signal.await,
        }
        info!("shutting down");
        stop.cancel();
    });

    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    info!(addr = %listener.local_addr()?, "listening");
    // Like axum::serve with graceful shutdown, but a client that never finishes its request can
    // hold neither a connection nor the shutdown (HEADER_READ_TIMEOUT, SHUTDOWN_GRACE).
    leasehold_axum::serve(listener, app, jobs.shutdown_signal()).await;
    jobs.stopped().await;
    leader.stopped().await;
    info!("stopped cleanly: jobs finished and leases released");
    Ok(())
}
