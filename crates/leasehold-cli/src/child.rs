//! The supervised command: spawning it with the lease in its environment, signalling it, and
//! waiting for it.

use std::ffi::OsString;
use std::io;
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

use crate::exit::Failure;

/// A running command.
#[derive(Debug)]
pub(crate) struct Child {
    inner: tokio::process::Child,
    /// True when the command leads its own process group, which is then signalled as a whole.
    group: bool,
    name: String,
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
        let inner = cmd.spawn().map_err(|e| {
            Failure::spawn(
                e.kind() == io::ErrorKind::NotFound,
                format!("cannot run `{name}`: {e}"),
            )
        })?;
        tracing::debug!(command = %name, pid = inner.id(), "leasehold: command started");
        Ok(Self {
            inner,
            group: !foreground,
            name,
        })
    }

    /// The program name, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Sends `signal` to the command (its process group unless started in the foreground).
    /// Does nothing once the command has been reaped, so a recycled pid is never signalled.
    fn signal(&self, signal: Signal) {
        let Some(pid) = self.inner.id().and_then(|id| i32::try_from(id).ok()) else {
            return;
        };
        let pid = Pid::from_raw(pid);
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
}
