//! Finding the server a store URL names, so a [`FaultProxy`](super::FaultProxy) can stand in
//! front of it.

use std::net::SocketAddr;

/// The loopback `host:port` in a store URL (the server's address, or for DynamoDB its
/// endpoint), as written and as an address. `None` when the URL names no server on
/// `127.0.0.1` or `localhost` with an explicit port.
pub fn loopback_authority(url: &str) -> Option<(String, SocketAddr)> {
    for host in ["127.0.0.1:", "localhost:"] {
        if let Some(at) = url.find(host) {
            let port: String = url[at + host.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let port: u16 = port.parse().ok()?;
            let written = format!("{host}{port}");
            return Some((written, SocketAddr::from(([127, 0, 0, 1], port))));
        }
    }
    None
}

/// `url` with its loopback server replaced by `proxy` (see [`loopback_authority`]); `None` when
/// the URL names no loopback server.
///
/// ```
/// use leasehold_testkit::proxy::via_proxy;
///
/// let proxy = "127.0.0.1:41000".parse().unwrap();
/// assert_eq!(
///     via_proxy("redis://127.0.0.1:6379/0", proxy).as_deref(),
///     Some("redis://127.0.0.1:41000/0")
/// );
/// assert_eq!(via_proxy("sqlite:///tmp/x.db", proxy), None);
/// ```
pub fn via_proxy(url: &str, proxy: SocketAddr) -> Option<String> {
    let (written, _) = loopback_authority(url)?;
    Some(url.replacen(&written, &proxy.to_string(), 1))
}

#[cfg(test)]
mod tests {
    use super::loopback_authority;

    #[test]
    fn finds_the_loopback_server_in_each_url_form() {
        let pg = loopback_authority("postgres://postgres@127.0.0.1:5432/test");
        assert_eq!(
            pg.map(|(w, a)| (w, a.port())),
            Some(("127.0.0.1:5432".to_owned(), 5432))
        );
        let ddb =
            loopback_authority("dynamodb://t?endpoint=http://localhost:8000&create_table=true");
        assert_eq!(ddb.map(|(w, _)| w), Some("localhost:8000".to_owned()));
        assert!(loopback_authority("redis://cache.example:6379").is_none());
        assert!(loopback_authority("sqlite:///tmp/x.db").is_none());
    }
}
