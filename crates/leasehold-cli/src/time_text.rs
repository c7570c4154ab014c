//! Times and durations as text: RFC 3339 UTC timestamps and short human durations.

use std::time::{Duration, SystemTime};

/// `2025-01-31T23:59:59.123Z` (UTC, millisecond precision): the core's [`leasehold::store::format_utc`].
pub(crate) fn rfc3339(t: SystemTime) -> String {
    leasehold::store::format_utc(t)
}

/// A short duration: `850ms`, `42.1s`, `3m05s`, `2h07m`, `3d04h`.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    if ms < 1000 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600)
    }
}

/// Time left until `t` by this machine's clock (zero if past).
pub(crate) fn until(t: SystemTime) -> Duration {
    t.duration_since(SystemTime::now()).unwrap_or_default()
}

/// `text` with control characters escaped, for values read from a store (owners written by
/// other programs must not drive the terminal).
pub(crate) fn printable(text: &str) -> String {
    if text.chars().any(char::is_control) {
        text.escape_debug().to_string()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123); // leap day 2000
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_735_689_599); // last second of 2024
        assert_eq!(rfc3339(t), "2024-12-31T23:59:59.000Z");
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(850)), "850ms");
        assert_eq!(human(Duration::from_millis(42_100)), "42.1s");
        assert_eq!(human(Duration::from_secs(185)), "3m05s");
        assert_eq!(human(Duration::from_secs(7620)), "2h07m");
        assert_eq!(human(Duration::from_secs(273_600)), "3d04h");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("host:1"), "host:1");
        assert_eq!(printable("a\u{1b}[2J"), "a\\u{1b}[2J");
    }
}
