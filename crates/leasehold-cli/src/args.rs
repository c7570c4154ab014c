//! Command-line arguments.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use leasehold::{LockName, parse_duration};

use crate::color::ColorWhen;
use crate::exit;

const ABOUT: &str = "Run a command on exactly one node (or at most N), skip it everywhere else.";

const LONG_ABOUT: &str = "\
Run a command on exactly one node (or at most N), skip it everywhere else: a distributed
`flock` for cron jobs and timers, with leases, fencing tokens and a lease-lost signal.

The store is chosen by --store, else $LEASEHOLD_STORE, else an SQLite file in the user's state
directory ($XDG_STATE_HOME/leasehold/leases.db or ~/.local/state/leasehold/leases.db).
Store URLs: sqlite:///abs/path.db, sqlite:relative.db, postgres://user:pass@host/db,
mysql://user:pass@host/db, mariadb://..., redis://[:pass@]host[:port][/db], rediss://...,
dynamodb://TABLE?region=...&endpoint=..., etcd://[user:pass@]host:port[,host:port...][/prefix],
etcds://... (TLS), zk://[user:pass@]host[:port][,host[:port]...][/chroot],
nats://[user:pass@]host:port[/bucket]. memory: and in-memory SQLite live in one process only, so
run, status, release, clear-ledger, serve and verify refuse them (simulate and workbench use
their own).
Passwords in store URLs are redacted in every message leasehold prints.

Logging goes to stderr and is quiet by default; -v, -vv, -vvv raise it, and $LEASEHOLD_LOG
takes a tracing filter (e.g. LEASEHOLD_LOG=leasehold=debug).";

/// Shown by `leasehold --help` and `leasehold run --help`.
const AFTER_LONG_HELP: &str = exit::TABLE;
const AFTER_HELP: &str = "Exit codes and more: see --help.";

/// `leasehold`: leader election with leases, for commands.
#[derive(Debug, Parser)]
#[command(
    name = "leasehold",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP,
    propagate_version = true
)]
pub(crate) struct Cli {
    /// More log output on stderr: -v info, -vv debug, -vvv trace ($LEASEHOLD_LOG overrides)
    #[arg(short, long, action = ArgAction::Count, global = true)]
    pub(crate) verbose: u8,

    /// When to colour help, usage errors and the log
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub(crate) color: ColorWhen,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run COMMAND only if this node wins the lock; skip it otherwise
    #[command(
        long_about = RUN_LONG_ABOUT,
        after_help = AFTER_HELP,
        after_long_help = AFTER_LONG_HELP
    )]
    Run(RunArgs),
    /// Show the holders of one or more locks
    #[command(long_about = STATUS_LONG_ABOUT)]
    Status(StatusArgs),
    /// Break-glass: free a lock whoever holds it (needs --force)
    #[command(long_about = RELEASE_LONG_ABOUT)]
    Release(ReleaseArgs),
    /// Break-glass: clear a lock's period ledger so its period runs again (needs --force)
    #[command(long_about = CLEAR_LEDGER_LONG_ABOUT)]
    ClearLedger(ClearLedgerArgs),
    /// Serve the workbench: an interactive page of lease timelines computed by the real elector
    #[command(long_about = WORKBENCH_LONG_ABOUT)]
    Workbench(WorkbenchArgs),
    /// Serve a live view of the holders of chosen locks on a store, refreshed every second
    #[command(long_about = SERVE_LONG_ABOUT)]
    Serve(ServeArgs),
    /// Print a workbench scenario's timeline, computed by the real elector on virtual time
    #[command(long_about = crate::simulate::LONG_ABOUT)]
    Simulate(crate::simulate::SimulateArgs),
    /// Check a store deployment: contenders, stalls longer than the lease, a fenced register
    #[command(long_about = VERIFY_LONG_ABOUT)]
    Verify(VerifyArgs),
    /// Create (or print) the fence table that makes a script's SQL writes fenced
    #[command(long_about = FENCE_LONG_ABOUT)]
    Fence(FenceArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell)
    #[command(long_about = COMPLETIONS_LONG_ABOUT)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per subcommand with --dir
    #[command(long_about = MAN_LONG_ABOUT)]
    Man(ManArgs),
}

const COMPLETIONS_LONG_ABOUT: &str = "\
Print a completion script for SHELL on stdout. Install it where the shell looks for one, e.g.:
  leasehold completions bash > ~/.local/share/bash-completion/completions/leasehold
  leasehold completions zsh > ~/.zfunc/_leasehold   (with fpath+=~/.zfunc before compinit)
  leasehold completions fish > ~/.config/fish/completions/leasehold.fish";

const MAN_LONG_ABOUT: &str = "\
Print the manual page of leasehold (roff) on stdout, or with --dir write one page per command to
DIR (created if missing): leasehold.1, leasehold-run.1, leasehold-status.1, ... e.g.:
  leasehold man | man -l -
  sudo leasehold man --dir /usr/local/share/man/man1";

/// `leasehold completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL", value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// `leasehold man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write leasehold.1 and one page per command (leasehold-run.1, ...) to DIR instead of
    /// printing leasehold.1
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub(crate) dir: Option<PathBuf>,
}

const FENCE_LONG_ABOUT: &str = "\
Create (init) or print (sql) the fence table of an SQL database: one row per resource with the
highest fence accepted, and a trigger that refuses any update lowering it. With it, a script run
by `leasehold run` makes its writes fenced in plain SQL: it first upserts its resource's row with
$LEASEHOLD_FENCE in the same transaction as its writes, and a stale holder's transaction fails
and keeps nothing. The statements per client (psql, mariadb, sqlite3) are in docs/fencing.md.

`init` is idempotent and safe when several machines run it at once. `sql` prints the DDL for a
migration without connecting (for MySQL/MariaDB inside DELIMITER //, as the trigger body holds
semicolons; there the script runs once, and a second run fails with \"trigger already exists\",
as MySQL before 8.0.29 has no CREATE TRIGGER IF NOT EXISTS).";

/// `leasehold fence`.
#[derive(Debug, Args)]
pub(crate) struct FenceArgs {
    #[command(subcommand)]
    pub(crate) command: FenceCommand,
}

/// What `leasehold fence` does.
#[derive(Debug, Subcommand)]
pub(crate) enum FenceCommand {
    /// Create the fence table and its trigger if missing
    Init(FenceTableArgs),
    /// Print the DDL of the fence table and its trigger (no connection)
    Sql(FenceTableArgs),
}

/// The table `leasehold fence` works on.
#[derive(Debug, Args)]
pub(crate) struct FenceTableArgs {
    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// The fence table [default: leasehold_fences] (TABLE or SCHEMA.TABLE, [A-Za-z_][A-Za-z0-9_]*)
    #[arg(long, value_name = "NAME")]
    pub(crate) table: Option<String>,
}

impl FenceArgs {
    /// The store URL given by flag or environment, if any.
    pub(crate) fn store(&self) -> &StoreArgs {
        match &self.command {
            FenceCommand::Init(a) | FenceCommand::Sql(a) => &a.store,
        }
    }
}

const VERIFY_LONG_ABOUT: &str = "\
Check a store deployment the way Jepsen would: several contenders, each with its own client,
take the same lock over and over for --duration (pausing up to a tenth of the lease between
attempts: about 100 requests/s in all with the defaults). In --pause-percent of the runs the
holder freezes for 1.5 to 3 leases (a simulated GC pause or stopped VM) and then writes to a
fenced register without looking at its lease. With --proxy-cuts a local TCP proxy also cuts every
connection to the store now and then.

The history is then checked. A violation is: a stale write accepted after a higher fence
(a lost update), a fence granted twice, two contenders holding valid leases at once, or a
fence lower than one granted before it was asked for. A lock still held after the run (once
stranded leases had time to expire) is a leaked lock.

The lock is leasehold-verify-<random> unless --lock is given: real locks are never touched.
--no-fence-check makes the register accept every write: the deliberately unsafe setup, to
see what the fences prevent (the run then fails).

Exit codes: 0 no violation and no leaked lock; 1 a violation or a leaked lock;
75 or 125 as for the other commands (store unavailable, bad flags or URL).";

const RUN_LONG_ABOUT: &str = "\
Run COMMAND only if this node wins the lock; skip it otherwise.

The command is started only after the lease is acquired, with stdin, stdout and stderr passed
through, and with these variables set so it can pass the fence to the resources it writes:
  LEASEHOLD_LOCK   the lock name
  LEASEHOLD_FENCE  the fencing number, strictly increasing per lock (and slot)
  LEASEHOLD_SLOT   the slot (0 unless --slots > 1)
  LEASEHOLD_OWNER  the owner recorded in the store (--node-id, default hostname:pid)
  LEASEHOLD_PERIOD the period id granted (with --once-per): floor((store time - offset) / period)

While it runs, the lease is renewed every lease/3 (unless --no-auto-extend).

The command is stopped before the store can grant the lock to anyone else (unless --on-lost
continue): if what is left of the lease drops below --kill-grace because renewals fail (or
with --no-auto-extend, because the lease runs out), or the lease is lost, the command and
everything it started get SIGTERM, and SIGKILL after --kill-grace but never later than the
lease's local deadline (the lease less a tenth); leasehold then waits until they are gone and
exits 124. --kill-grace defaults to 10s, at most a third of the lease, and a longer one is
refused (renewals come every lease/3, so a grace within a third never fires while renewals
succeed).

Like flock(1), the lock is held while anything the command started still runs: when the
command exits but processes of its process group (and, on Linux, any descendant, including
ones that double-fork or setsid: leasehold is their child subreaper) are still alive, leasehold
says so once, keeps renewing the lease until they have exited, then releases it and exits with
the command's status. --leftovers kill stops them instead (SIGTERM, SIGKILL after
--kill-grace). Processes started through another daemon (systemd-run, at, a service manager)
cannot be seen.

SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to leasehold are forwarded to the command (once it has
exited, to what it left running); the lease is released once they have exited.

The command runs in its own process group so that signals reach the processes it starts too;
--foreground keeps it in leasehold's group (for commands that read from the terminal), and then
forwarded signals reach only the command itself while it runs (on Linux, stopping it for the
lease still reaches every process below leasehold).

Examples:
  leasehold run --lock nightly-report -- /usr/local/bin/report --all
  leasehold run --lock hourly-sync --once-per 1h -- ./sync.sh
  leasehold run --lock hourly-sync --min-lease 55m -- ./sync.sh
  leasehold run --lock import --wait 30s --skipped-exit-code 3 -- ./import.sh";

const STATUS_LONG_ABOUT: &str = "\
Show the holders of one or more locks: slot, owner, fence, acquisition and expiry time (UTC, by
the store's clock) and the time left, computed against this machine's clock (exact for SQLite,
which shares it; off by the clock skew for a remote store). --json prints one JSON document.

Every holder of a group lock is shown; --slots N looks at the first N slots only and also counts
the free ones. --all lists every lock that has holders instead, read in pages of at most 100
locks with bounded requests; when the store has more than one run shows, the last line (or
`next` in the JSON) gives the cursor to continue with --after.";

const RELEASE_LONG_ABOUT: &str = "\
Break-glass: free every live slot of LOCK whoever holds it. Fences are kept, so the next holder
still gets a higher one. The old holder notices at its next renewal (at most a third of its
lease later) and, under `leasehold run --on-lost kill`, stops its command and exits 124. Until it
notices, two holders may overlap: use it for holders that are gone or stuck, and let fencing
protect the resource. Refuses to run without --force.";

const CLEAR_LEDGER_LONG_ABOUT: &str = "\
Break-glass: delete the period ledger record of LOCK, the record by which `leasehold run
--once-per` runs a command at most once per period. The next `run --once-per` of the lock then
runs its command again, even within the period that already ran (once the lock is free).
Prints the record it deleted, as `leasehold status LOCK` shows it, or says there was none.

Only the ledger is deleted: a holder of the lock keeps its lease, and fences keep rising. A run
that holds the lock but has not started its command yet cannot start it any more. Use it to
repeat a period's run (after a run that did the wrong thing, say); check `leasehold status
LOCK` first. Refuses to run without --force.";

/// Where the leases live.
#[derive(Clone, Args)]
pub(crate) struct StoreArgs {
    /// Store URL [env: LEASEHOLD_STORE] [default: SQLite file in the user's state directory]
    #[arg(
        long,
        value_name = "URL",
        env = "LEASEHOLD_STORE",
        hide_env = true,
        hide_env_values = true
    )]
    pub(crate) store: Option<String>,
}

/// What to do when the lease is lost while the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnLost {
    /// Stop the command before the store can grant the lock again: SIGTERM once what is left of
    /// the lease is below --kill-grace, SIGKILL at the local deadline at the latest; exit 124
    /// (123 if it had already finished when the loss was noticed)
    Kill,
    /// Let the command finish; print a warning; exit with the command's code
    Continue,
}

/// What to do with the processes the command leaves running when it exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Leftovers {
    /// Keep holding (and renewing) the lock until they have exited, then release it
    Wait,
    /// Stop them (SIGTERM, then SIGKILL after --kill-grace), then release the lock
    Kill,
}

/// `leasehold run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The lock to hold while COMMAND runs ([A-Za-z0-9_.:/-], starting with a letter or digit; every '/' followed by one; no '..')
    #[arg(long, value_name = "NAME", value_parser = parse_lock)]
    pub(crate) lock: LockName,

    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// How long to keep trying for the lock before skipping (0 = one attempt)
    #[arg(long, value_name = "D", default_value = "0", value_parser = parse_duration)]
    pub(crate) wait: Duration,

    /// While waiting (--wait), say on stderr who holds the lock when the wait starts and then
    /// every D (at least 100ms)
    #[arg(long, value_name = "D", default_value = "30s", value_parser = parse_progress_every)]
    pub(crate) progress_every: Duration,

    /// Lease length: how long the store keeps the lock if this node stops renewing it
    /// [default: 15s (the library's default lease), or --min-lease if longer]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub(crate) lease: Option<Duration>,

    /// Keep the lock at least this long after acquisition, also after COMMAND ends
    /// ("at most once per period")
    #[arg(long, value_name = "D", default_value = "0", value_parser = parse_duration)]
    pub(crate) min_lease: Duration,

    /// Run COMMAND at most once per period of this length across every host using the store:
    /// periods are counted on the store's clock from the Unix epoch (plus --period-offset), and
    /// a host whose run for the current period was already granted elsewhere skips with one line
    /// saying when and by whom (1ms to 36500d, whole milliseconds; single-holder locks only)
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub(crate) once_per: Option<Duration>,

    /// Shift the --once-per periods by this much (below the period; e.g. --once-per 1d
    /// --period-offset 2h for days starting at 02:00 UTC)
    #[arg(long, value_name = "D", requires = "once_per", value_parser = parse_duration)]
    pub(crate) period_offset: Option<Duration>,

    /// Do not renew the lease while COMMAND runs: the lease then bounds its run time
    #[arg(long)]
    pub(crate) no_auto_extend: bool,

    /// What to do if the lease is lost while COMMAND runs
    #[arg(long, value_enum, value_name = "ACTION", default_value_t = OnLost::Kill)]
    pub(crate) on_lost: OnLost,

    /// How long before the lease's local deadline SIGTERM comes when renewals fail, and how long
    /// after SIGTERM SIGKILL follows (never past that deadline); at most a third of the lease
    /// [default: 10s, at most a third of the lease]
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub(crate) kill_grace: Option<Duration>,

    /// What to do when COMMAND exits while processes it started still run (in its process group
    /// or, on Linux, below it): wait for them, holding and renewing the lock, or kill them
    #[arg(long, value_enum, value_name = "ACTION", default_value_t = Leftovers::Wait)]
    pub(crate) leftovers: Leftovers,

    /// Exit code when the lock is held elsewhere and COMMAND is skipped
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) skipped_exit_code: u8,

    /// Allow up to N concurrent holders of the lock (each gets its own slot and fence; at most
    /// 1024)
    #[arg(long, value_name = "N", default_value_t = 1,
        value_parser = parse_slots)]
    pub(crate) slots: u32,

    /// Join the partition set NAME (--lock) of N shards and run one COMMAND per shard this
    /// node owns, with LEASEHOLD_SHARD and LEASEHOLD_SHARDS in its environment, until leasehold
    /// gets SIGINT or SIGTERM (1 to 65536; see "Shards" in the manual)
    #[arg(long, value_name = "N", value_parser = parse_shards,
        conflicts_with_all = ["once_per", "period_offset", "slots", "min_lease", "wait",
            "no_auto_extend", "foreground", "metrics_file", "skipped_exit_code"])]
    pub(crate) shards: Option<u32>,

    /// Owner recorded in the store, at most 255 bytes [default: hostname:pid]
    #[arg(long, value_name = "ID", value_parser = parse_node_id)]
    pub(crate) node_id: Option<String>,

    /// Keep COMMAND in leasehold's process group (lets it read from the terminal; only COMMAND
    /// itself, not its children, is then signalled)
    #[arg(long)]
    pub(crate) foreground: bool,

    /// Print nothing when waiting or skipping
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// After the run (or the skip), write its metrics to PATH in node_exporter's textfile format
    /// (*.prom; written atomically, keeping the last success time of earlier runs)
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub(crate) metrics_file: Option<PathBuf>,

    /// The command and its arguments (put them after `--`)
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_parser = clap::value_parser!(OsString)
    )]
    pub(crate) command: Vec<OsString>,
}

/// `leasehold status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// Print one JSON document instead of text
    #[arg(long)]
    pub(crate) json: bool,

    /// Number of slots to look at (as given to `run --slots`) [default: every slot]
    #[arg(long, value_name = "N", value_parser = parse_slots, conflicts_with = "all")]
    pub(crate) slots: Option<u32>,

    /// Show every lock that has holders instead of the LOCKs given
    #[arg(long, conflicts_with = "locks")]
    pub(crate) all: bool,

    /// With --all: continue a listing where the last one stopped (the cursor it printed)
    #[arg(long, value_name = "CURSOR", conflicts_with = "locks", value_parser = parse_cursor)]
    pub(crate) after: Option<leasehold::store::ListCursor>,

    /// The locks to show
    #[arg(value_name = "LOCK", required_unless_present_any = ["all", "after"], num_args = 1.., value_parser = parse_lock)]
    pub(crate) locks: Vec<LockName>,
}

/// A list cursor for `status --all --after`.
fn parse_cursor(text: &str) -> Result<leasehold::store::ListCursor, leasehold::store::CursorError> {
    leasehold::store::ListCursor::new(text)
}

/// `leasehold release`.
#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    /// Confirm that the lock may be taken from its holder
    #[arg(long)]
    pub(crate) force: bool,

    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// Number of slots to free (as given to `run --slots`)
    #[arg(long, value_name = "N", default_value_t = 1,
        value_parser = parse_slots)]
    pub(crate) slots: u32,

    /// The lock to free
    #[arg(value_name = "LOCK", value_parser = parse_lock)]
    pub(crate) lock: LockName,
}

/// `leasehold clear-ledger`.
#[derive(Debug, Args)]
pub(crate) struct ClearLedgerArgs {
    /// Confirm that the lock's period may run again
    #[arg(long)]
    pub(crate) force: bool,

    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// The lock whose period ledger record to delete
    #[arg(value_name = "LOCK", value_parser = parse_lock)]
    pub(crate) lock: LockName,
}

const WORKBENCH_LONG_ABOUT: &str = "\
Serve the workbench: an interactive page where three nodes contend for a lock tick by tick
(contention, expiry and takeover, auto-extension, 1 -> N slots, fencing, once per period). Every
timeline is computed by the real elector on an in-memory store under virtual time. The page is
embedded in the binary and works offline. Prints `listening on http://ADDR/` and serves until Ctrl-C or
SIGTERM (requests in flight get 3 s; a second signal stops at once). Requests must name
localhost, 127.0.0.1, [::1] or the bound address in Host: unless --allow-remote. See
docs/workbench.md.";

const SERVE_LONG_ABOUT: &str = "\
Serve a live view of a real store: for each --lock, its current holders (slot, owner, fence,
time left), refreshed every second, beside the read-only management report (JSON at
/management/leader-election) and Prometheus metrics of the holders (/metrics, text format).
Prints `listening on http://ADDR/` and serves until Ctrl-C or SIGTERM
(requests in flight get 3 s; a second signal stops at once). Requests must name localhost,
127.0.0.1, [::1] or the bound address in Host: unless --allow-remote.

Example:
  leasehold serve --store postgres://app@db/leases --lock nightly-report --lock hourly-sync";

/// Where a web command listens.
#[derive(Debug, Clone, Args)]
pub(crate) struct BindArgs {
    /// Also listen on a non-loopback address, and answer requests naming any host: the pages
    /// have no authentication
    #[arg(long)]
    pub(crate) allow_remote: bool,
}

/// `leasehold workbench`.
#[derive(Debug, Args)]
pub(crate) struct WorkbenchArgs {
    /// Address to listen on (port 0 picks a free port)
    #[arg(long, value_name = "IP:PORT", default_value_t = leasehold_workbench::web::WORKBENCH_BIND)]
    pub(crate) bind: std::net::SocketAddr,

    #[command(flatten)]
    pub(crate) remote: BindArgs,
}

/// `leasehold serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// A lock to show (repeat for more)
    #[arg(long = "lock", value_name = "NAME", required = true, value_parser = parse_lock)]
    pub(crate) locks: Vec<LockName>,

    /// Number of slots to look at (as given to `run --slots`)
    #[arg(long, value_name = "N", default_value_t = 1,
        value_parser = parse_slots)]
    pub(crate) slots: u32,

    /// Address to listen on (port 0 picks a free port)
    #[arg(long, value_name = "IP:PORT", default_value_t = leasehold_workbench::web::LIVE_BIND)]
    pub(crate) bind: std::net::SocketAddr,

    #[command(flatten)]
    pub(crate) remote: BindArgs,
}

/// `leasehold verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// The lock to contend for [default: leasehold-verify-<random>]
    #[arg(long, value_name = "NAME", value_parser = parse_lock)]
    pub(crate) lock: Option<LockName>,

    /// Contenders, each with its own store client (2-64)
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = parse_contenders)]
    pub(crate) contenders: usize,

    /// How long the contenders run (at most 24h)
    #[arg(long, value_name = "D", default_value = "20s", value_parser = parse_run_duration)]
    pub(crate) duration: std::time::Duration,

    /// The lease each holder takes (not renewed: a frozen holder loses it)
    #[arg(long, value_name = "D", default_value = "1s", value_parser = parse_duration)]
    pub(crate) lease: std::time::Duration,

    /// Percent of runs in which the holder freezes for 1.5-3 leases before writing (0-100)
    #[arg(long, value_name = "P", default_value_t = 20,
        value_parser = clap::value_parser!(u8).range(0..=100))]
    pub(crate) pause_percent: u8,

    /// Accept every write, stale or not: the deliberately unsafe setup (the run fails)
    #[arg(long)]
    pub(crate) no_fence_check: bool,

    /// Cut every connection to the store now and then through a local TCP proxy (needs a
    /// server on 127.0.0.1 or localhost)
    #[arg(long)]
    pub(crate) proxy_cuts: bool,

    /// Write the full history, one JSON operation per line, to PATH ("-": stdout, and the
    /// summary goes to stderr)
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<std::path::PathBuf>,
}

impl Cli {
    /// The store URL given by flag or environment, if any.
    pub(crate) fn store_url(&self) -> Option<&str> {
        match &self.command {
            Command::Run(a) => a.store.url(),
            Command::Status(a) => a.store.url(),
            Command::Release(a) => a.store.url(),
            Command::ClearLedger(a) => a.store.url(),
            Command::Workbench(_) => None,
            Command::Serve(a) => a.store.url(),
            Command::Simulate(_) => None,
            Command::Verify(a) => a.store.url(),
            Command::Fence(a) => a.store().url(),
            Command::Completions(_) | Command::Man(_) => None,
        }
    }
}

impl std::fmt::Debug for StoreArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreArgs")
            .field(
                "store",
                &self.store.as_deref().map(leasehold::store::redact_url),
            )
            .finish()
    }
}

impl StoreArgs {
    /// The URL given, treating an empty one as absent.
    pub(crate) fn url(&self) -> Option<&str> {
        self.store.as_deref().filter(|s| !s.trim().is_empty())
    }
}

fn parse_lock(text: &str) -> Result<LockName, leasehold::error::NameError> {
    LockName::new(text)
}

/// A contender count for `verify`: 2 to [`MAX_CONTENDERS`](crate::verify::MAX_CONTENDERS).
fn parse_contenders(text: &str) -> Result<usize, String> {
    let max = crate::verify::MAX_CONTENDERS;
    match text.trim().parse::<usize>() {
        Ok(n) if (2..=max).contains(&n) => Ok(n),
        _ => Err(format!("{text:?} is not a whole number from 2 to {max}")),
    }
}

/// A `verify --duration`: a duration of at most [`MAX_RUN`](crate::verify::MAX_RUN).
fn parse_run_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d.is_zero() || d > crate::verify::MAX_RUN {
        return Err(format!("{text:?} is not a duration from 1ms to 24h"));
    }
    Ok(d)
}

/// A `run --progress-every`: a duration of at least
/// [`MIN_PROGRESS_EVERY`](crate::waiting::MIN_PROGRESS_EVERY) (and at most
/// [`leasehold::limits::MAX_DURATION`], as every duration).
fn parse_progress_every(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    let min = crate::waiting::MIN_PROGRESS_EVERY;
    if d < min {
        return Err(format!(
            "{text:?} is too often to ask the store who holds the lock: use at least {}ms",
            min.as_millis()
        ));
    }
    Ok(d)
}

/// A slot count: 1 to [`leasehold::limits::MAX_SLOTS`] (clap names the flag in the error).
/// `--shards`: 1 to [`MAX_SHARDS`](leasehold::limits::MAX_SHARDS).
fn parse_shards(text: &str) -> Result<u32, String> {
    let max = leasehold::limits::MAX_SHARDS;
    let allowed = format!("a whole number from 1 to {max}");
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not {allowed}"));
    }
    // Any number too large for u32 is simply too many shards.
    let shards = digits.parse::<u32>().unwrap_or(u32::MAX);
    if shards == 0 {
        return Err(format!(
            "a set of 0 shards would never run anything; use {allowed}"
        ));
    }
    if shards > max {
        return Err(format!(
            "at most {max} shards are allowed (leasehold::limits::MAX_SHARDS); got {digits}"
        ));
    }
    Ok(shards)
}

fn parse_slots(text: &str) -> Result<u32, String> {
    let max = leasehold::limits::MAX_SLOTS;
    let allowed = format!("a whole number from 1 to {max}");
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not {allowed}"));
    }
    // Any number too large for u32 is simply too many slots.
    let slots = digits.parse::<u32>().unwrap_or(u32::MAX);
    if slots == 0 {
        return Err(format!("0 slots would never run anything; use {allowed}"));
    }
    leasehold::store::check_slots(slots).map_err(|_| {
        format!("at most {max} slots are allowed (leasehold::limits::MAX_SLOTS); got {digits}")
    })
}

/// A node id as the core accepts it (clap names the flag in the error).
fn parse_node_id(text: &str) -> Result<String, leasehold::error::OptionsError> {
    leasehold::options::validate_node_id(text).map(|()| text.to_owned())
}

/// Prints a clap error or help text and picks the exit code: 0 for `--help`/`--version`,
/// 125 (not clap's 2) for usage errors, so that usage errors never collide with a command's code.
/// Usage errors can quote what was typed (say, a store URL given where a lock name belongs), so
/// they go through the same redaction as every other message, and are coloured (as `color`
/// says) only when there was nothing to redact: redaction works on plain text.
pub(crate) fn parse_failed(e: &clap::Error, color: ColorWhen) -> ExitCode {
    let rendered = e.render();
    let plain = rendered.to_string();
    if e.use_stderr() {
        if color.colors(&std::io::stderr()) && crate::say::scrubbed(&plain) == plain {
            crate::say::raw_err(&rendered.ansi().to_string());
        } else {
            crate::say::raw_err(&plain);
        }
        exit::code(exit::USAGE)
    } else {
        // Help and version text: the example URLs in it are not secrets.
        if color.colors(&std::io::stdout()) {
            crate::say::document(&rendered.ansi().to_string());
        } else {
            crate::say::document(&plain);
        }
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_the_command_after_double_dash() -> Result<(), clap::Error> {
        let cli = Cli::try_parse_from([
            "leasehold",
            "run",
            "--lock",
            "a",
            "--wait",
            "PT2S",
            "--",
            "sh",
            "-c",
            "exit 7",
        ])?;
        let Command::Run(run) = cli.command else {
            return Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand));
        };
        assert_eq!(run.wait, Duration::from_secs(2));
        assert_eq!(run.command, ["sh", "-c", "exit 7"].map(OsString::from));
        assert_eq!(run.on_lost, OnLost::Kill);
        assert_eq!(run.leftovers, Leftovers::Wait);
        assert_eq!(run.kill_grace, None);
        Ok(())
    }

    /// The help names the library's default lease, which `run` uses.
    #[test]
    fn the_lease_help_names_the_default_lease() {
        let lease = format!(
            "{}s",
            leasehold::ElectionOptions::default().lease().as_secs()
        );
        let command = Cli::command();
        let run = command
            .find_subcommand("run")
            .and_then(|run| run.get_arguments().find(|a| a.get_id() == "lease"))
            .and_then(|a| a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(run.contains(&format!("[default: {lease} ")), "{run}");
    }

    /// `run` keeps the library's default: one attempt, then skip (never an implicit wait, which
    /// would run a job a second time right after the holder finished it).
    #[test]
    fn run_makes_one_attempt_by_default() -> Result<(), clap::Error> {
        let cli = Cli::try_parse_from(["leasehold", "run", "--lock", "a", "--", "true"])?;
        let Command::Run(run) = cli.command else {
            return Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand));
        };
        assert_eq!(run.wait, Duration::ZERO);
        assert_eq!(run.wait, leasehold::ElectionOptions::default().wait());
        Ok(())
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            &["leasehold", "run", "--lock", "a b", "--", "true"][..],
            &[
                "leasehold",
                "run",
                "--lock",
                "a",
                "--wait",
                "5x",
                "--",
                "true",
            ],
            &["leasehold", "run", "--lock", "a"],
            &["leasehold", "status", "--slots", "0", "a"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}
