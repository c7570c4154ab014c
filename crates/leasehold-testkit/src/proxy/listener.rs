//! The accept loop: listens while the proxy is not cut, and starts a forwarder per connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tracing::{debug, warn};

use super::connection::forward;
use super::control::{ProxyMode, Shared};

/// How long to wait before trying again to listen on the proxy's port after a cut.
const REBIND_PAUSE: Duration = Duration::from_millis(10);

pub(super) async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut listener = Some(listener);
    let mut mode = shared.mode.subscribe();
    loop {
        let current = *mode.borrow_and_update();
        if current == ProxyMode::Cut {
            if listener.take().is_some() {
                debug!(addr = %shared.addr, "proxy cut; refusing connections");
                shared.listening.send_replace(false);
            }
            tokio::select! {
                _ = mode.changed() => continue,
                () = shared.shutdown.cancelled() => return,
            }
        }
        let Some(bound) = listener.as_ref() else {
            match TcpListener::bind(shared.addr).await {
                Ok(l) => {
                    debug!(addr = %shared.addr, "proxy listening again");
                    listener = Some(l);
                    shared.listening.send_replace(true);
                }
                Err(e) => {
                    warn!(addr = %shared.addr, error = %e, "proxy cannot listen again yet");
                    tokio::select! {
                        () = tokio::time::sleep(REBIND_PAUSE) => {}
                        () = shared.shutdown.cancelled() => return,
                    }
                }
            }
            continue;
        };
        tokio::select! {
            accepted = bound.accept() => match accepted {
                Ok((client, _)) => {
                    tokio::spawn(forward(Arc::clone(&shared), client));
                }
                Err(e) => debug!(error = %e, "proxy accept failed"),
            },
            _ = mode.changed() => {}
            () = shared.shutdown.cancelled() => return,
        }
    }
}
