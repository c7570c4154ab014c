//! The supervised command: spawning it with the lease in its environment, signalling it, and
//! waiting for it; [`Family`] is everything it started.

mod family;

use std::ffi::OsString;
use std::io;
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

use crate::exit::Failure;

pub(crate) use family::{Family, Remaining};

/// A running command.
#[derive(Debug)]
pub(crate) struct Child {
    inner: tokio::process::Child,
    /// True when the command leads its own process group, which is then signalled as a whole.
    group: bool,
    /// The command's process id, which is its group's id when `group` (kept after it is reaped,
    /// to reach what it left behind in its group).
    pid: Option<Pid>,
    name: String,
    /// SIGCHLD, which also comes when the command is stopped: the cue to look for a stop by the
    /// terminal (see [`Child::stopped_by_terminal`]). `None` where that cannot be looked at.
    sigchld: Option<tokio::signal::unix::Signal>,
}

impl Child {
    /// Starts `argv` with stdio inherited and `env` added to leasehold's environment. Unless
    /// `foreground`, the command leads a new process group so that signals reach its children.
    pub(crate) fn spawn(
        argv: &[OsString],
        env: &[(&'static str, String)],
        foreground: bool,
    ) -> Result<Self, Failure> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Failure::usage("no command given"))?;
        // Only the program name is ever printed: arguments may carry secrets.
        let name = program.to_string_lossy().into_owned();
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .kill_on_drop(false);
        if !foreground {
            cmd.process_group(0);
        }
        // Listening before the command starts, so that no stop goes unnoticed. Only a command in
        // its own process group can be stopped for reading from the terminal.
        let sigchld = (!foreground && stops::SUPPORTED)
            .then(|| tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok())
            .flatten();
        let inner = cmd.spawn().map_err(|e| {
            Failure::spawn(
                e.kind() == io::ErrorKind::NotFound,
                format!("cannot run `{name}`: {e}"),
            )
        })?;
        tracing::debug!(command = %name, pid = inner.id(), "leasehold: command started");
        let pid = inner
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Self {
            inner,
            group: !foreground,
            pid,
            name,
            sigchld,
        })
    }

    /// The watch for the command being stopped by the terminal, to poll beside
    /// [`wait`](Self::wait). Only the first call gets a working watch.
    pub(crate) fn terminal_stops(&mut self) -> TerminalStops {
        TerminalStops {
            pid: self.pid,
            sigchld: self.sigchld.take(),
        }
    }

    /// The program name, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Sends `signal` to the command (its process group unless started in the foreground).
    /// Does nothing once the command has been reaped, so a recycled pid is never signalled.
    fn signal(&self, signal: Signal) {
        // `inner.id()` is gone once the command is reaped.
        let Some(pid) = self.inner.id().and(self.pid) else {
            return;
        };
        let sent = if self.group {
            killpg(pid, signal)
        } else {
            kill(pid, signal)
        };
        match sent {
            Ok(()) => {
                tracing::debug!(command = %self.name, %signal, group = self.group, "leasehold: signalled the command")
            }
            Err(e) => {
                tracing::debug!(command = %self.name, %signal, error = %e, "leasehold: could not signal the command")
            }
        }
    }

    /// Delivers `signal` and then SIGCONT, as shells do for `kill`: a command stopped (for
    /// instance by SIGTTIN after reading from the terminal) is resumed so that it can act on it.
    pub(crate) fn deliver(&self, signal: Signal) {
        self.signal(signal);
        if signal != Signal::SIGKILL && signal != Signal::SIGCONT {
            self.signal(Signal::SIGCONT);
        }
    }

    /// The command's status if it has already exited, without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.inner.try_wait()
    }

    /// Waits for the command to exit (cancel-safe).
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.inner.wait().await
    }

    /// The command's process group (its pid), unless it runs in leasehold's (`--foreground`).
    pub(crate) fn group(&self) -> Option<Pid> {
        self.pid.filter(|_| self.group)
    }

    /// The command's pid.
    pub(crate) fn pid(&self) -> Option<Pid> {
        self.pid
    }
}

/// Watches for the command being stopped by SIGTTIN or SIGTTOU: it used the terminal from
/// outside the terminal's foreground process group.
#[derive(Debug)]
pub(crate) struct TerminalStops {
    pid: Option<Pid>,
    sigchld: Option<tokio::signal::unix::Signal>,
}

impl TerminalStops {
    /// Resolves with the stop signal when the command is found stopped by the terminal (looked
    /// at on each SIGCHLD). Stays pending where that cannot be seen (a `--foreground` command, or
    /// a platform without `waitid`). While the command stays stopped it resolves again at once.
    /// Poll it only while the command has not been reaped (beside [`Child::wait`]), so that its
    /// pid cannot have been reused.
    ///
    /// Cancel-safe.
    pub(crate) async fn next(&mut self) -> Signal {
        loop {
            if let Some(signal) = self.pid.and_then(stops::terminal_stop) {
                return signal;
            }
            let Some(sigchld) = self.sigchld.as_mut() else {
                return std::future::pending().await;
            };
            if sigchld.recv().await.is_none() {
                return std::future::pending().await;
            }
        }
    }
}

/// Seeing that the command is stopped. tokio's `Child` reaps with `waitpid` without `WUNTRACED`,
/// so it never reports stops; `waitid(WSTOPPED | WNOWAIT)` looks without consuming anything that
/// tokio waits for.
#[cfg(any(
    target_os = "android",
    target_os = "freebsd",
    all(target_os = "linux", not(target_env = "uclibc"))
))]
mod stops {
    use nix::sys::signal::Signal;
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    use nix::unistd::Pid;

    pub(super) const SUPPORTED: bool = true;

    /// The signal that stopped child `pid`, if it is stopped by SIGTTIN or SIGTTOU now.
    pub(super) fn terminal_stop(pid: Pid) -> Option<Signal> {
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::Stopped(_, signal @ (Signal::SIGTTIN | Signal::SIGTTOU))) => {
                Some(signal)
            }
            _ => None,
        }
    }
}

/// Without `waitid`, stops are not looked at.
#[cfg(not(any(
    target_os = "android",
    target_os = "freebsd",
    all(target_os = "linux", not(target_env = "uclibc"))
)))]
mod stops {
    use nix::sys::signal::Signal;
    use nix::unistd::Pid;

    pub(super) const SUPPORTED: bool = false;

    pub(super) fn terminal_stop(_pid: Pid) -> Option<Signal> {
        None
    }
}
