//! Loopback ports for the servers a test starts itself (etcd members, a private Redis, …).

use std::net::TcpListener;
use std::ops::Range;

use rand::Rng;

/// Where [`free_port`] looks: below Linux's default ephemeral range (32768–60999). The kernel
/// takes the port of every `bind` to port 0 and the source port of every outgoing connection
/// from that range, so a port found free there can be taken by any connection of a test running
/// alongside before the server it was meant for binds it. Here only another caller of
/// [`free_port`] can, and it picks at random among 12,000.
pub const FREE_PORTS: Range<u16> = 20_000..32_000;

/// How many ports [`free_port`] tries before it gives up.
const TRIES: usize = 200;

/// A loopback port in [`FREE_PORTS`] that nothing listens on now, for a server the test starts
/// next.
///
/// ```
/// let port = leasehold_testkit::free_port().expect("a free port");
/// assert!(leasehold_testkit::FREE_PORTS.contains(&port));
/// std::net::TcpListener::bind(("127.0.0.1", port)).expect("still free");
/// ```
///
/// # Errors
///
/// The last bind error when none of 200 random ports in the range could be bound.
pub fn free_port() -> std::io::Result<u16> {
    let mut rng = rand::rng();
    let mut last = None;
    for _ in 0..TRIES {
        let port = rng.random_range(FREE_PORTS);
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no port tried")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_free_port_is_in_the_range_and_not_in_use() {
        let taken: Vec<(u16, TcpListener)> = FREE_PORTS
            .step_by(240)
            .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok().map(|l| (p, l)))
            .collect();
        assert!(taken.len() > 10);
        for _ in 0..50 {
            let port = free_port().unwrap();
            assert!(FREE_PORTS.contains(&port));
            assert!(taken.iter().all(|(p, _)| *p != port), "{port} is taken");
        }
    }
}
