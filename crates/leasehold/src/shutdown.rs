//! Waiting for the operating system's request to stop: SIGINT (Ctrl-C) and SIGTERM (what systemd,
//! Kubernetes and docker send) on Unix, Ctrl-C elsewhere.

use std::fmt;
use std::future::Future;
use std::io;

/// Which signal asked the process to stop.
///
/// ```
/// assert_eq!(leasehold::shutdown::StopSignal::Terminate.to_string(), "SIGTERM");
/// assert_eq!(leasehold::shutdown::StopSignal::Interrupt.to_string(), "SIGINT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopSignal {
    /// SIGINT: Ctrl-C in a terminal (on non-Unix systems, the console's Ctrl-C).
    Interrupt,
    /// SIGTERM: the polite stop request of systemd, Kubernetes, docker and `kill`.
    Terminate,
}

impl StopSignal {
    /// The conventional exit code of a process ended by this signal: 128 + its number
    /// (130 for SIGINT, 143 for SIGTERM).
    ///
    /// ```
    /// assert_eq!(leasehold::shutdown::StopSignal::Terminate.exit_code(), 143);
    /// ```
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }
}

impl fmt::Display for StopSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        })
    }
}

/// Handlers for the signals that ask a server to stop: SIGINT and SIGTERM on Unix, Ctrl-C
/// elsewhere. From [`install`](Self::install) until it is dropped these signals no longer end the
/// process at once; [`recv`](Self::recv) yields each one, so a program can start a graceful
/// shutdown on the first and give up waiting on the second.
///
/// For the common case — one future for `axum::serve(..).with_graceful_shutdown(..)` — use
/// [`shutdown_signal`].
///
/// ```no_run
/// # #[tokio::main] async fn main() -> std::io::Result<()> {
/// use leasehold::shutdown::ShutdownSignal;
/// let mut signals = ShutdownSignal::install()?; // as early as possible
/// let first = signals.recv().await;
/// tracing::info!(signal = %first, "stopping; send it again to stop at once");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ShutdownSignal {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    /// Installs the handlers now, so a signal that arrives before anything waits for it is
    /// kept for the next [`recv`](Self::recv) instead of killing the process. (On non-Unix systems
    /// the Ctrl-C handler is registered when `recv` is first polled.)
    ///
    /// # Errors
    ///
    /// An I/O error if there is no tokio runtime on this thread (the handlers need its I/O
    /// driver) or the operating system refuses the handlers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
    /// let _signals = leasehold::shutdown::ShutdownSignal::install()?;
    /// # Ok(()) }
    /// ```
    /// ```
    /// // Outside a runtime: an error, not a panic.
    /// assert!(leasehold::shutdown::ShutdownSignal::install().is_err());
    /// ```
    pub fn install() -> io::Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "no tokio runtime is running on this thread: the SIGINT/SIGTERM handlers need one",
            ));
        }
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// Waits for the next SIGINT or SIGTERM (Ctrl-C on non-Unix systems) and says which it was.
    /// Signals received since [`install`](Self::install) or the previous `recv` are not lost.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: if it is dropped before resolving, no signal is consumed.
    pub async fn recv(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.interrupt.recv() => StopSignal::Interrupt,
                Some(()) = self.terminate.recv() => StopSignal::Terminate,
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => StopSignal::Interrupt,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for Ctrl-C");
                    std::future::pending().await
                }
            }
        }
    }
}

/// A future that resolves on the first SIGINT or SIGTERM (Ctrl-C on non-Unix systems): the stop
/// request of a terminal, systemd, Kubernetes and docker. Cancel the program's
/// [`CancellationToken`](crate::CancellationToken) when it resolves, so that schedules, stable
/// leaders and the integrations stop, let a running job finish and release their leases at once.
///
/// Container platforms stop a process with SIGTERM, not Ctrl-C: waiting for
/// `tokio::signal::ctrl_c()` alone leaves the process to be killed after the platform's timeout,
/// with its leases held until they expire (and, for a period job, the period counted as run by
/// the run that was killed).
///
/// Called inside a tokio runtime it installs the handlers at once (from then on these signals
/// no longer kill the process), otherwise when first polled. If they cannot be installed it logs
/// a warning and never resolves. Use [`ShutdownSignal`] to react to a second signal too.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{CancellationToken, Elector, MemoryStore, Schedule};
///
/// let stop = CancellationToken::new();
/// let jobs = Schedule::new(Elector::new(Arc::new(MemoryStore::new())))
///     .every("report", Duration::from_secs(60), |_ctx| async { Ok::<_, std::io::Error>(()) })
///     .start(stop.clone())?;
/// leasehold::shutdown_signal().await; // SIGINT or SIGTERM
/// stop.cancel(); // a running job finishes, then its lease is released
/// jobs.stopped().await;
/// # Ok(()) }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    let early = ShutdownSignal::install();
    async move {
        let signals = match early {
            Ok(signals) => Ok(signals),
            Err(_) => ShutdownSignal::install(),
        };
        match signals {
            Ok(mut signals) => {
                let signal = signals.recv().await;
                tracing::info!(%signal, "shutdown requested");
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "cannot listen for SIGINT/SIGTERM; this shutdown signal never fires"
                );
                std::future::pending::<()>().await;
            }
        }
    }
}
