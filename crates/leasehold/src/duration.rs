//! Text forms of durations: `500ms`, `10s`, `5m`, `1h`, `2d`, `1m30s` and ISO-8601 `PT10S`.

use std::time::Duration;

/// Why a duration text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {reason}; use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S"
)]
pub struct DurationError {
    input: String,
    reason: &'static str,
}

/// Parses a duration written as `500ms`, `10s`, `5m`, `1h`, `2d`, combinations such as `1m30s`,
/// or ISO-8601 (`PT10S`, `PT1M30.5S`, `P1DT2H`). A bare `0` is zero.
///
/// ```
/// use std::time::Duration;
/// use leasehold::parse_duration;
///
/// assert_eq!(parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(parse_duration("1m30s")?, Duration::from_secs(90));
/// assert_eq!(parse_duration("PT10S")?, Duration::from_secs(10));
/// assert!(parse_duration("-5s").is_err());
/// # Ok::<(), leasehold::DurationError>(())
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let input = text.trim();
    let err = |reason| DurationError {
        input: text.to_owned(),
        reason,
    };
    if input.is_empty() {
        return Err(err("empty"));
    }
    if input == "0" {
        return Ok(Duration::ZERO);
    }
    if input.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    let upper = input.to_ascii_uppercase();
    if let Some(rest) = upper.strip_prefix('P') {
        return parse_iso(rest).ok_or_else(|| err("not a valid ISO-8601 duration"));
    }
    parse_simple(input).map_err(err)
}

fn parse_simple(input: &str) -> Result<Duration, &'static str> {
    let mut total = Duration::ZERO;
    let mut rest = input;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or("missing unit (ms, s, m, h or d)")?;
        if digits == 0 {
            return Err("expected a number");
        }
        let value: f64 = rest[..digits].parse().map_err(|_| "bad number")?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err("unknown unit (use ms, s, m, h or d)"),
        };
        rest = &rest[unit_len..];
        total +=
            Duration::try_from_secs_f64(value * seconds_per_unit).map_err(|_| "out of range")?;
    }
    Ok(total)
}

fn parse_iso(rest: &str) -> Option<Duration> {
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    if date.is_empty() && time.is_none_or(str::is_empty) {
        return None;
    }
    let mut total = iso_part(date, &[('D', 86400.0), ('W', 604800.0)])?;
    if let Some(time) = time {
        if time.is_empty() {
            return None;
        }
        total += iso_part(time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    Some(total)
}

fn iso_part(mut text: &str, units: &[(char, f64)]) -> Option<Duration> {
    let mut total = Duration::ZERO;
    while !text.is_empty() {
        let end = text.find(|c: char| c.is_ascii_alphabetic())?;
        let value: f64 = text[..end].replace(',', ".").parse().ok()?;
        let unit = text[end..].chars().next()?;
        let (_, secs) = units.iter().find(|(u, _)| *u == unit)?;
        total += Duration::try_from_secs_f64(value * secs).ok()?;
        text = &text[end + 1..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_and_iso_forms() {
        let cases = [
            ("10s", 10_000),
            ("5m", 300_000),
            ("1h", 3_600_000),
            ("2d", 172_800_000),
            ("1.5s", 1_500),
            ("1m30s", 90_000),
            ("PT10S", 10_000),
            ("pt0.5s", 500),
            ("PT1M30S", 90_000),
            ("P1DT1H", 90_000_000),
            ("0", 0),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        for bad in ["", "10", "ms", "5x", "-1s", "P", "PT", "PT5X", "1s-"] {
            let e = parse_duration(bad);
            assert!(e.is_err(), "{bad:?} parsed as {e:?}");
        }
        let msg = parse_duration("5x").map(|_| ()).unwrap_err().to_string();
        assert!(
            msg.contains("\"5x\"") && msg.contains("unknown unit"),
            "{msg}"
        );
    }
}
