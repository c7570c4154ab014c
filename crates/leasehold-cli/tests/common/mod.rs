//! Helpers for running the built `leasehold` binary against a temporary SQLite store.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

/// Generous bounds: the machine is small and shared.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A temporary directory with its own SQLite store.
pub struct Env {
    dir: tempfile::TempDir,
    store: String,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = format!("sqlite://{}", dir.path().join("leases.db").display());
        Self { dir, store }
    }

    /// The store URL.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// A file path inside the temp dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `leasehold ARGS` with this store in `LEASEHOLD_STORE`, a private state directory and
    /// default logging.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = command(BIN);
        c.args(args)
            .env("LEASEHOLD_STORE", &self.store)
            .env("XDG_STATE_HOME", self.path("state"))
            .env_remove("LEASEHOLD_LOG")
            .stdin(Stdio::null());
        c
    }

    /// `leasehold ARGS` under a pseudo-terminal, with `script(1)` from util-linux: the
    /// terminal's output (leasehold's stdout and stderr, with `\r\n` line ends) is `script`'s
    /// stdout, and `script` exits with leasehold's code.
    pub fn cmd_in_terminal(&self, args: &[&str]) -> Command {
        let line = std::iter::once(BIN)
            .chain(args.iter().copied())
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ");
        let mut c = command("script");
        c.args(["-qec", &line, "/dev/null"])
            .env("LEASEHOLD_STORE", &self.store)
            .env("XDG_STATE_HOME", self.path("state"))
            .env_remove("LEASEHOLD_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs `leasehold ARGS` to completion (bounded by [`PATIENCE`]).
    pub fn output(&self, args: &[&str]) -> Output {
        finish(self.spawn(args))
    }

    /// Starts `leasehold ARGS` with stdout and stderr captured.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn leasehold")
    }

    /// `status --json LOCK` parsed.
    pub fn status(&self, lock: &str) -> serde_json::Value {
        let out = self.output(&["status", "--json", lock]);
        assert_eq!(code(&out.status), 0, "status failed: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("status --json is JSON")
    }

    /// The holders of `lock`, from `status --json`.
    pub fn holders(&self, lock: &str) -> Vec<serde_json::Value> {
        let status = self.status(lock);
        status["locks"][0]["holders"]
            .as_array()
            .cloned()
            .expect("holders array")
    }
}

/// A command for `program` whose process gets SIGTERM when the thread that started it ends
/// (`setpriv --pdeathsig`, util-linux, the kernel's parent-death signal): a test that panics
/// or forgets a child leaves no process behind, and a `leasehold run` stops its command on the
/// way out. The process keeps the id `spawn` reports (setpriv execs `program`). Every process
/// these tests start goes through here.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--pdeathsig", "TERM", "--"]).arg(program);
    c
}

/// `text` quoted for `sh`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Collects a child's stderr (or another of its pipes) line by line while it runs.
pub struct Stderr {
    lines: Receiver<String>,
    all: Arc<Mutex<String>>,
}

impl Stderr {
    pub fn watch(child: &mut Child) -> Self {
        let pipe: ChildStderr = child.stderr.take().expect("stderr piped");
        Self::pipe(pipe)
    }

    /// The child's stdout instead (say, `script`'s copy of a terminal).
    pub fn watch_stdout(child: &mut Child) -> Self {
        Self::pipe(child.stdout.take().expect("stdout piped"))
    }

    fn pipe(pipe: impl std::io::Read + Send + 'static) -> Self {
        let (tx, lines) = channel();
        let all = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&all);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        Self { lines, all }
    }

    /// Waits for a line containing `needle`.
    pub fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return,
                Ok(_) => {}
                Err(_) => panic!("no line with {needle:?} in stderr:\n{}", self.text()),
            }
        }
    }

    pub fn text(&self) -> String {
        self.all.lock().unwrap().clone()
    }
}

/// Waits for `child` to exit (bounded by [`PATIENCE`]), killing it on timeout.
pub fn exit_status(mut child: Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("leasehold did not exit within {PATIENCE:?}");
        }
        sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` to exit (bounded by [`PATIENCE`]), killing it on timeout.
pub fn finish(child: Child) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(out) => out.expect("wait for leasehold"),
        Err(_) => {
            signal(pid, "KILL");
            panic!("leasehold (pid {pid}) did not finish within {PATIENCE:?}");
        }
    }
}

/// The exit code; panics if the process died of a signal.
pub fn code(status: &ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| panic!("ended by a signal: {status:?}"))
}

/// Lossy text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits until `path` exists and is non-empty.
pub fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && !s.trim().is_empty()
        {
            return s.trim().to_owned();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{} did not appear within {PATIENCE:?}",
            path.display()
        );
        sleep(Duration::from_millis(25));
    }
}

/// Sends a signal by number or name to one process id with kill(1).
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status();
}

/// Sleeps until `t0 + at`.
pub fn sleep_until(t0: Instant, at: Duration) {
    if let Some(left) = (t0 + at).checked_duration_since(Instant::now()) {
        sleep(left);
    }
}

/// A name no other test run uses: `tag`, this process's id and the clock's nanoseconds.
pub fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{tag}-{}-{nanos}", std::process::id())
}

/// A server URL from `var`; `None` (skip, with a notice) when unset, a failure under CI.
pub fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set under CI; scripts/test starts the server and sets it")
        }
        _ => {
            eprintln!("skipping: {var} is not set (run scripts/test to start the servers)");
            None
        }
    }
}
