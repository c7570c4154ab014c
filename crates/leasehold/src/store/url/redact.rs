//! Redaction: secrets in store URLs (passwords, tokens, secret-looking query parameters) are
//! masked wherever a URL is shown, and scrubbed from free text that may quote them.

use super::decode::percent_decode_lossy;

/// Secrets shorter than this are not scrubbed from free text (it would mangle every message);
/// the URL itself is always redacted whole.
pub const MIN_SCRUBBED_SECRET_LEN: usize = 3;

/// `text` with every secret of `url` replaced by `***` and every URL in it redacted: for an
/// error message from a driver, which may quote the URL, its password, or pieces of either.
///
/// The secrets go first: a password holding a quote or a space ends a URL early for
/// [`redact_urls_in`], which would then hide only its start. A quoted word (`"…"`) that is part
/// of a secret is replaced too: a parser that misread a password with unencoded delimiters may
/// quote a piece of it, e.g. as a parameter name.
///
/// ```
/// use leasehold::store::scrub;
/// let url = "postgres://app:hun'ter 2@db/x";
/// let shown = scrub(&format!("cannot reach {url}: password \"hun'ter 2\" refused"), url);
/// assert!(!shown.contains("ter") && shown.contains("app"), "{shown}");
/// ```
pub fn scrub(text: &str, url: &str) -> String {
    scrub_secrets(text, &url_secrets(url))
}

/// [`scrub`] with the secrets of a URL found once ([`url_secrets`]), for the many messages of a
/// long-lived process.
///
/// ```
/// use leasehold::store::{scrub_secrets, url_secrets};
/// let secrets = url_secrets("redis://:s3cr3t@cache:6379");
/// assert_eq!(scrub_secrets("AUTH s3cr3t failed", &secrets), "AUTH *** failed");
/// ```
pub fn scrub_secrets(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if secret.len() >= MIN_SCRUBBED_SECRET_LEN && out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    let mut out = redact_urls_in(&out);
    // Only a secret holding a URL delimiter (RFC 3986's gen-delims and sub-delims), `%`, a
    // quote or white space can have been split into pieces by a parser; a quoted word inside
    // any other secret (a password `slot99`, and `"slot"` in JSON) is left as it is.
    let splittable: Vec<&String> = secrets
        .iter()
        .filter(|s| {
            s.chars()
                .any(|c| c.is_whitespace() || ":/?#[]@!$&'()*+,;=%\"".contains(c))
        })
        .collect();
    let quoted: Vec<String> = out
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|q| q.len() >= MIN_SCRUBBED_SECRET_LEN && splittable.iter().any(|s| s.contains(*q)))
        .map(|q| format!("\"{q}\""))
        .collect();
    for q in quoted {
        out = out.replace(&q, &format!("\"{MASK}\""));
    }
    out
}

/// Query parameter names whose values are secrets (matched case-insensitively, as a part of the
/// percent-decoded name: `aws_secret`, `ssl-key` and `PASSWORD` are all secret).
const SECRET_PARAMS: &[&str] = &[
    "password",
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
    "signature",
];

/// The characters the `url` crate percent-encodes in a user-info (WHATWG URL standard).
const USERINFO: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b':')
    .add(b';')
    .add(b'=')
    .add(b'@')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'|');

/// What replaces a secret.
const MASK: &str = "***";

/// True if a query parameter named `name` (raw or percent-encoded) holds a secret.
pub(crate) fn is_secret_param(name: &str) -> bool {
    let name = percent_decode_lossy(name).to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| name.contains(s))
}

/// Replaces every secret in a URL with `***`: the password of its user-info, the values of
/// secret-looking query parameters (`password=`, `secret=`, `token=`, `key=`, … also as part of a
/// longer name such as `aws_secret_key`), and the secrets of any URL nested in a parameter value
/// (such as `endpoint=http://user:pw@host`).
///
/// It never needs the URL to be well formed, and errs on the side of hiding: the user-info runs
/// from after `scheme://` to the **last** `@`, so a password holding `@`, `/`, `?`, `#`, `:`, `%`,
/// spaces or any other character is hidden whole, whether or not it was percent-encoded. A
/// user-info without `//` before it (`postgres:u:pw@h`) is hidden whole, and so is a "port" that is
/// not a number (a password whose host is missing: `postgres://u:pw/x` shows as
/// `postgres://u:***`). Every store and the CLI print URLs only through this function.
///
/// ```
/// use leasehold::store::redact_url;
/// assert_eq!(redact_url("postgres://app:s3cret@db:5432/x"), "postgres://app:***@db:5432/x");
/// assert_eq!(redact_url("postgres://u:s3c/r3t@host/db"), "postgres://u:***@host/db");
/// assert_eq!(redact_url("redis://h/0?password=abc&db=1"), "redis://h/0?password=***&db=1");
/// assert_eq!(
///     redact_url("dynamodb://t?endpoint=http://id:pw@127.0.0.1:8000"),
///     "dynamodb://t?endpoint=http://id:***@127.0.0.1:8000"
/// );
/// assert_eq!(redact_url("memory:"), "memory:");
/// ```
pub fn redact_url(url: &str) -> String {
    redact(url, &mut Vec::new())
}

/// The secrets [`redact_url`] hides in `url`, each as written, percent-decoded and
/// re-encoded as a URL parser normalises it (longest first, without duplicates): for scrubbing free text, such as a driver's error message, that may
/// quote them.
///
/// ```
/// use leasehold::store::url_secrets;
/// let secrets = url_secrets("postgres://u:p%40ss@h/db?sslpassword=k3y");
/// assert!(secrets.contains(&"p%40ss".to_owned()) && secrets.contains(&"p@ss".to_owned()));
/// assert!(secrets.contains(&"k3y".to_owned()));
/// assert!(url_secrets("redis://:pa ss@h").contains(&"pa%20ss".to_owned()));
/// ```
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    redact(url, &mut found);
    let mut all = Vec::new();
    for s in found {
        let decoded = percent_decode_lossy(&s);
        // As a URL parser re-encodes it (a driver may quote the normalised URL).
        let encoded = percent_encoding::utf8_percent_encode(&decoded, USERINFO).to_string();
        all.push(encoded);
        all.push(decoded);
        all.push(s);
    }
    all.retain(|s| !s.is_empty());
    all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    all.dedup();
    all
}

/// `text` with every URL-looking word (`scheme://…` up to white space or a quote) passed through
/// [`redact_url`]: for messages that may quote a URL.
///
/// ```
/// use leasehold::store::redact_urls_in;
/// assert_eq!(
///     redact_urls_in("cannot open 'mysql://root:pw@db/x': refused"),
///     "cannot open 'mysql://root:***@db/x': refused"
/// );
/// ```
pub fn redact_urls_in(text: &str) -> String {
    let is_scheme = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
    let ends_word = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(sep) = rest.find("://") {
        let start = rest[..sep].rfind(|c: char| !is_scheme(c)).map_or(0, |i| {
            i + rest[i..].chars().next().map_or(1, char::len_utf8)
        });
        let mut end = rest[sep..].find(ends_word).map_or(rest.len(), |i| sep + i);
        // Punctuation after a URL in a sentence ("… store URL x://h/db: reason").
        while end > sep + 3 && rest[..end].ends_with([':', ',', ';', '.', ')']) {
            end -= 1;
        }
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// True for RFC 3986 scheme syntax: a letter, then letters, digits, `+`, `-` or `.`.
pub(crate) fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Redacts `url`, pushing each secret (as written) onto `secrets`.
///
/// A URL whose password or query holds unencoded delimiters can be read two ways: with the
/// user-info ending at the last `@` (what a user who did not encode the password meant), or
/// with the authority ending at the first `/`, `?` or `#` (what a URL parser reads). Everything
/// either reading calls a secret is hidden.
fn redact(url: &str, secrets: &mut Vec<String>) -> String {
    let mut mask = Mask {
        text: url,
        hidden: vec![false; url.len()],
        pieces: Vec::new(),
    };
    mark_url(&mut mask, 0, url.len());
    let (out, runs) = mask.render();
    secrets.extend(mask.pieces);
    secrets.extend(runs);
    out
}

/// Which bytes of a text are secret.
struct Mask<'a> {
    text: &'a str,
    hidden: Vec<bool>,
    /// Each secret found, as written.
    pieces: Vec<String>,
}

impl Mask<'_> {
    fn hide(&mut self, start: usize, end: usize) {
        if start < end {
            self.hidden[start..end].iter_mut().for_each(|h| *h = true);
            self.pieces.push(self.text[start..end].to_owned());
        }
    }

    /// The text with each run of hidden bytes replaced by `***`, and the runs.
    fn render(&self) -> (String, Vec<String>) {
        let mut out = String::with_capacity(self.text.len());
        let mut runs = Vec::new();
        let mut run_start = None;
        for (i, c) in self.text.char_indices() {
            match (self.hidden[i], run_start) {
                (true, None) => {
                    run_start = Some(i);
                    out.push_str(MASK);
                }
                (true, Some(_)) => {}
                (false, Some(s)) => {
                    runs.push(self.text[s..i].to_owned());
                    run_start = None;
                    out.push(c);
                }
                (false, None) => out.push(c),
            }
        }
        if let Some(s) = run_start {
            runs.push(self.text[s..].to_owned());
        }
        (out, runs)
    }
}

/// Marks the secrets of the URL `mask.text[start..end]`.
fn mark_url(mask: &mut Mask<'_>, start: usize, end: usize) {
    let text = &mask.text[start..end];
    let Some((scheme, _)) = text.split_once(':').filter(|(s, _)| is_scheme(s)) else {
        // Not a URL: hide everything before the last `@`, if any.
        if let Some(at) = text.rfind('@') {
            mask.hide(start, start + at);
        }
        return;
    };
    let mut pos = start + scheme.len() + 1;
    let slashes = mask.text[pos..end].starts_with("//");
    if slashes {
        pos += 2;
    }
    let rest = &mask.text[pos..end];
    // The user-info as meant: up to the last `@`, unless that `@` belongs to a URL nested in
    // the query (`?endpoint=http://id:pw@host`), which the query reading below handles.
    let nested = rest.find("://").filter(|&i| rest[..i].contains('?'));
    let meant = rest[..nested.unwrap_or(rest.len())].rfind('@');
    if let Some(at) = meant {
        mark_userinfo(mask, pos, pos + at, slashes, scheme);
        mark_query(mask, pos + at + 1, end);
    }
    // The user-info as parsed: inside the authority, which ends at the first `/`, `?` or `#`.
    let authority_end = rest.find(['/', '?', '#']).map_or(end, |i| pos + i);
    let authority = &mask.text[pos..authority_end];
    match authority.rfind('@') {
        Some(at) => mark_userinfo(mask, pos, pos + at, slashes, scheme),
        None if meant.is_none() && slashes && !is_file_scheme(scheme) => {
            // A "port" that is not a number: most likely a password whose `@host` is
            // missing. Hide it and everything after it.
            if let Some(port) = bad_port(authority) {
                mask.hide(authority_end - port.len(), end);
            }
        }
        None => {}
    }
    mark_query(mask, authority_end, end);
}

/// Schemes whose user-info without a `:` is a secret token, not a user name
/// (`nats://TOKEN@host`, as the NATS clients read it).
const TOKEN_USERINFO_SCHEMES: &[&str] = &["nats", "tls", "ws", "wss"];

/// Marks the password of the user-info `mask.text[start..end]` (all of it when it is not
/// plainly `user:password` after `//`, or when `scheme` reads a lone user name as a token).
fn mark_userinfo(mask: &mut Mask<'_>, start: usize, end: usize, slashes: bool, scheme: &str) {
    let userinfo = &mask.text[start..end];
    // A user name holding `/`, `?` or `#` may really be a path or query whose secret value
    // holds the `@`: hide it all.
    let plain = |user: &str| slashes && !user.contains(['/', '?', '#']);
    let token = TOKEN_USERINFO_SCHEMES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(scheme));
    match userinfo.find(':') {
        Some(colon) if plain(&userinfo[..colon]) => mask.hide(start + colon + 1, end),
        None if plain(userinfo) && !token => {}
        None if token => mask.hide(start, end),
        split => {
            mask.hide(start, end);
            if let Some(colon) = split {
                // The password alone, for scrubbing messages that quote it.
                mask.pieces.push(userinfo[colon + 1..].to_owned());
            }
        }
    }
}

/// Marks secret values in the query string that starts at the first `?` in
/// `mask.text[from..end]` and runs to the next `#`.
fn mark_query(mask: &mut Mask<'_>, from: usize, end: usize) {
    let Some(q) = mask.text[from..end].find('?') else {
        return;
    };
    let start = from + q + 1;
    let stop = mask.text[start..end].find('#').map_or(end, |i| start + i);
    let mut pair_start = start;
    while pair_start <= stop {
        let pair_end = mask.text[pair_start..stop]
            .find('&')
            .map_or(stop, |i| pair_start + i);
        if let Some(eq) = mask.text[pair_start..pair_end].find('=') {
            let key = &mask.text[pair_start..pair_start + eq];
            let value_start = pair_start + eq + 1;
            let value = &mask.text[value_start..pair_end];
            if is_secret_param(key) {
                mask.hide(value_start, pair_end);
            } else {
                let decoded = percent_decode_lossy(value);
                if decoded.contains('@') || decoded.contains("://") {
                    // A URL in a parameter (`endpoint=http://user:pw@host`).
                    if decoded == value {
                        mark_url(mask, value_start, pair_end);
                    } else {
                        let nested = url_secrets(&decoded);
                        if !nested.is_empty() {
                            mask.hide(value_start, pair_end);
                            mask.pieces.extend(nested);
                        }
                    }
                }
            }
        } else {
            // A piece of a nested URL whose user-info held an unencoded `&`: `user:password`,
            // or a password's tail before `@host`.
            let pair = &mask.text[pair_start..pair_end];
            let secret_end = pair.rfind('@').map_or(pair.len(), |at| at);
            match pair[..secret_end].find(':') {
                Some(colon) => mask.hide(pair_start + colon + 1, pair_start + secret_end),
                None if secret_end < pair.len() => mask.hide(pair_start, pair_start + secret_end),
                None => {}
            }
        }
        pair_start = pair_end + 1;
    }
    // The tail of a nested URL whose password held an unencoded `#`.
    if let Some(at) = mask.text[stop..end].rfind('@') {
        mask.hide(stop + 1, stop + at);
    }
}

/// The "port" after the first `:` of a host (after IPv6 brackets) when it is not a number.
///
/// A comma-separated list of hosts (`h1:2379,h2:2379`, as etcd and libpq URLs take) is read host
/// by host: the first `host:port` whose port is not a number starts the "port".
fn bad_port(hosts: &str) -> Option<&str> {
    let mut offset = 0;
    for host in hosts.split(',') {
        if let Some(port) = bad_port_of(host) {
            let from = offset + host.len() - port.len();
            return Some(&hosts[from..]);
        }
        offset += host.len() + 1;
    }
    None
}

/// The port of one `host:port` if it is not a port number (digits, at most 65535): a longer
/// number is a password too (`postgres://app:20240101/db`).
fn bad_port_of(host: &str) -> Option<&str> {
    let after_bracket = if host.starts_with('[') {
        host.find(']').map_or(0, |i| i + 1)
    } else {
        0
    };
    let colon = host[after_bracket..].find(':')? + after_bracket;
    let port = &host[colon + 1..];
    let number = port.chars().all(|c| c.is_ascii_digit());
    (!number || (!port.is_empty() && port.parse::<u16>().is_err())).then_some(port)
}

/// Schemes whose `//` is followed by a path rather than a host (`sqlite://:memory:`).
fn is_file_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("sqlite") || scheme.eq_ignore_ascii_case("file")
}

#[cfg(test)]
mod tests {
    use super::super::open::OpenError;
    use super::*;

    /// Every RFC 3986 gen-delim and sub-delim, `%`, space, a tab and non-ASCII.
    const NASTY: &[&str] = &[
        ":", "/", "?", "#", "[", "]", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=",
        "%", "%2", "%40", " ", "\t", "é", "密码", "\\", "\"", "<>",
    ];

    const SCHEMES: &[&str] = &[
        "postgres",
        "postgresql",
        "mysql",
        "mariadb",
        "redis",
        "rediss",
        "valkey",
        "sqlite",
        "nosuch",
        "x+y",
    ];

    /// `s3cr3t` with `c` in the middle, so a leak of either half shows.
    fn password_with(c: &str) -> String {
        format!("S3cr{c}Et9")
    }

    fn assert_hidden(url: &str, secret: &str) {
        let shown = redact_url(url);
        for part in [secret, "S3cr", "Et9"] {
            assert!(!shown.contains(part), "{url:?} shows {part:?}: {shown:?}");
        }
        assert!(
            url_secrets(url).iter().any(|s| s.contains("S3cr")),
            "{url:?}: {:?}",
            url_secrets(url)
        );
    }

    #[test]
    fn passwords_with_any_character_are_hidden_for_every_scheme() {
        for scheme in SCHEMES {
            for c in NASTY {
                let pw = password_with(c);
                for user in ["u", "app", &format!("us{c}er"), ""] {
                    for url in [
                        format!("{scheme}://{user}:{pw}@db.internal:5432/x?sslmode=off"),
                        format!("{scheme}://{user}:{pw}@h"),
                        format!("{scheme}://{user}:{pw}@h/db#frag"),
                        format!("{scheme}:{user}:{pw}@h/db"),
                        format!("{scheme}://h/x?password={pw}"),
                        format!("{scheme}://h/x?a=1&sslpassword={pw}&b=2"),
                        format!("{scheme}://h/x?AWS_SECRET_ACCESS_KEY={pw}"),
                        format!("{scheme}://h/x?auth_token={pw}"),
                        format!("{scheme}://t?endpoint=http://id:{pw}@127.0.0.1:8000&region=eu"),
                        format!("{scheme}://{user}:{pw}@h/x?endpoint=https://{user}:{pw}@e/"),
                    ] {
                        // A `&`, `#` or `=` in a query value ends it unless encoded: the
                        // value as the store would read it is what must be hidden.
                        if url.contains('?')
                            && url.contains(&format!("={pw}"))
                            && matches!(*c, "&" | "#")
                        {
                            continue;
                        }
                        assert_hidden(&url, &pw);
                    }
                }
                // No host: the password is a "port" that is not a number. (With an `@` in
                // the password this is a valid URL with a host, which is shown.)
                for user in ["u", "app", ""]
                    .into_iter()
                    .filter(|_| !c.contains('@') && *scheme != "sqlite")
                {
                    assert_hidden(&format!("{scheme}://{user}:{pw}"), &pw);
                }
            }
        }
    }

    #[test]
    fn the_user_and_host_stay_visible() {
        assert_eq!(redact_url("mysql://root@h/db"), "mysql://root@h/db");
        assert_eq!(redact_url("rediss://:pw@h:6380"), "rediss://:***@h:6380");
        assert_eq!(redact_url("x://u:p@ss@h/p?a=1"), "x://u:***@h/p?a=1");
        assert_eq!(
            redact_url("postgres://u:a/b?c#d:e@h:5/x?sslmode=off"),
            "postgres://u:***@h:5/x?sslmode=off"
        );
        assert_eq!(
            redact_url("postgres://us%40er:p@h"),
            "postgres://us%40er:***@h"
        );
        assert_eq!(redact_url("postgres:u:pw@h/x"), "postgres:***@h/x");
        assert_eq!(redact_url("postgres://u:s3c/r3t"), "postgres://u:***");
        assert_eq!(redact_url("postgres://u:a://b@h/x"), "postgres://u:***@h/x");
        assert_eq!(redact_url("postgres://u:p?a://b@h/x"), "postgres://u:***");
        // A list of hosts (etcd, libpq) is not a password, nor is what follows it.
        for url in [
            "etcd://127.0.0.1:2379,127.0.0.1:2380/jobs?prefx=a",
            "etcd://a:1,[::1]:2,b/p",
            "postgres://h1:5432,h2/db",
        ] {
            assert_eq!(redact_url(url), url);
        }
        assert_eq!(redact_url("etcd://h:1,u:s3cret/p"), "etcd://h:1,u:***");
        assert_eq!(
            redact_url("etcd://u:pw@a:1,b:2/p"),
            "etcd://u:***@a:1,b:2/p"
        );
        assert_eq!(
            redact_url("postgres://[::1]:5432/x"),
            "postgres://[::1]:5432/x"
        );
        assert_eq!(redact_url("sqlite://:memory:"), "sqlite://:memory:");
        assert_eq!(
            redact_url("sqlite:///tmp/a b.db?mode=rwc"),
            "sqlite:///tmp/a b.db?mode=rwc"
        );
        assert_eq!(redact_url("s3cret@host:1"), "***@host:1");
        assert_eq!(
            redact_url("d://t?aws_secret=z&region=eu"),
            "d://t?aws_secret=***&region=eu"
        );
    }

    #[test]
    fn a_lone_user_name_is_a_token_where_the_scheme_reads_it_so() {
        assert_eq!(redact_url("nats://s3cr3t@h:4222/b"), "nats://***@h:4222/b");
        assert_eq!(redact_url("NATS://s3cr3t@h"), "NATS://***@h");
        assert_eq!(redact_url("tls://s3cr3t@h"), "tls://***@h");
        assert_eq!(redact_url("nats://u:pw@h"), "nats://u:***@h");
        assert_eq!(redact_url("nats://h:4222/b"), "nats://h:4222/b");
        assert!(url_secrets("nats://s3cr3t@h").contains(&"s3cr3t".to_owned()));
        assert_eq!(
            redact_urls_in("cannot reach nats://s3cr3t@h: refused"),
            "cannot reach nats://***@h: refused"
        );
        // Elsewhere a lone user name is a user name.
        assert_eq!(redact_url("redis://app@h"), "redis://app@h");
    }

    #[test]
    fn a_port_above_65535_is_a_password() {
        assert_eq!(
            redact_url("postgres://app:20240101/db"),
            "postgres://app:***"
        );
        assert_eq!(redact_url("redis://:123456"), "redis://:***");
        assert_eq!(redact_url("redis://h:6379/0"), "redis://h:6379/0");
        assert_eq!(redact_url("redis://h:/0"), "redis://h:/0");
        assert!(url_secrets("postgres://app:20240101/db").contains(&"20240101/db".to_owned()));
    }

    #[test]
    fn urls_nested_in_parameters_are_redacted() {
        for (url, secret) in [
            (
                "dynamodb://t?endpoint=http://id:s3cr3t@127.0.0.1:8000&region=eu",
                "s3cr3t",
            ),
            (
                "dynamodb://t?endpoint=http%3A%2F%2Fid%3As3cr3t%40127.0.0.1%3A8000",
                "s3cr3t",
            ),
            ("dynamodb://t?endpoint=http://id:s3c/r3t@h", "s3c"),
            ("dynamodb://t?endpoint=https://h/?token=s3cr3t", "s3cr3t"),
        ] {
            let shown = redact_url(url);
            assert!(!shown.contains(secret), "{url}: {shown}");
            assert!(shown.contains("***"), "{url}: {shown}");
            assert!(url_secrets(url).iter().any(|s| s.contains(secret)), "{url}");
        }
        let plain = "dynamodb://t?endpoint=http://127.0.0.1:8000&region=eu";
        assert_eq!(redact_url(plain), plain);
    }

    #[test]
    fn urls_in_free_text_are_redacted() {
        assert_eq!(
            redact_urls_in("invalid value 'postgres://u:pw@h/x' for x: \"mysql://r:s@h\" x"),
            "invalid value 'postgres://u:***@h/x' for x: \"mysql://r:***@h\" x"
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
        assert_eq!(
            redact_urls_in("store r://h?password=x: bad"),
            "store r://h?password=***: bad"
        );
    }

    #[test]
    fn quoted_pieces_of_a_secret_are_scrubbed() {
        let url = "sqlite://app:Hunt:x@y/z?Er2=1#w@h";
        let e = OpenError::invalid(url, "unknown parameter \"Er2\"; known are \"mode\"");
        let text = e.to_string();
        assert!(!text.contains("Er2") && text.contains("\"mode\""), "{text}");
        // A secret no parser could split leaves quoted words alone (JSON keys, say).
        let secrets = url_secrets("postgres://u:slot99@h/x");
        assert_eq!(
            scrub_secrets(r#"{"slot": 0, "pw": "slot99"}"#, &secrets),
            r#"{"slot": 0, "pw": "***"}"#
        );
    }
}
