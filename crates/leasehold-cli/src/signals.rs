//! The signals leasehold catches while it supervises a command, to forward them.

use std::io;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::broadcast;

/// Where the signals to forward to a command come from: leasehold's own handlers, or (under
/// `run --shards`) the copies leasehold hands to each shard's command.
pub(crate) trait SignalSource {
    /// The next signal to forward (cancel-safe).
    async fn recv(&mut self) -> Signal;
}

impl SignalSource for Signals {
    async fn recv(&mut self) -> Signal {
        Signals::recv(self).await
    }
}

/// The signals leasehold forwards to one of several commands.
#[derive(Debug)]
pub(crate) struct Forwarded(pub(crate) broadcast::Receiver<Signal>);

impl SignalSource for Forwarded {
    async fn recv(&mut self) -> Signal {
        loop {
            match self.0.recv().await {
                Ok(signal) => return signal,
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    }
}

/// Handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT. While they exist these signals no longer
/// terminate leasehold; [`recv`](Self::recv) yields them so they can be forwarded.
#[derive(Debug)]
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers (needs a tokio runtime).
    pub(crate) fn install() -> io::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            quit: signal(SignalKind::quit())?,
        })
    }

    /// The next signal received (cancel-safe).
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            Some(()) = self.int.recv() => Signal::SIGINT,
            Some(()) = self.term.recv() => Signal::SIGTERM,
            Some(()) = self.hup.recv() => Signal::SIGHUP,
            Some(()) = self.quit.recv() => Signal::SIGQUIT,
            else => std::future::pending().await,
        }
    }
}
