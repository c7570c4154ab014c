//! Text forms of durations: `500ms`, `10s`, `5m`, `1h`, `2d`, `1m30s` and ISO-8601 `PT10S`.

use std::borrow::Cow;
use std::time::Duration;

use crate::limits::{Human, MAX_DURATION};

/// Why a duration text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {reason}{hint}",
    hint = if *too_long { "" } else { "; use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S" }
)]
pub struct DurationError {
    input: String,
    reason: Cow<'static, str>,
    too_long: bool,
}

impl DurationError {
    /// True when the text was well formed but longer than [`MAX_DURATION`].
    ///
    /// ```
    /// assert!(leasehold::parse_duration("36501d").unwrap_err().is_too_long());
    /// assert!(!leasehold::parse_duration("5x").unwrap_err().is_too_long());
    /// ```
    pub fn is_too_long(&self) -> bool {
        self.too_long
    }
}

/// Parses a duration written as `500ms`, `10s`, `5m`, `1h`, `2d`, combinations such as `1m30s`,
/// or ISO-8601 (`PT10S`, `PT1M30.5S`, `P1DT2H`). A bare `0` is zero.
///
/// The result is at most [`MAX_DURATION`] (36500 days): a longer one, or one whose parts add up
/// beyond it, is an error. No input makes it panic.
///
/// # Errors
///
/// [`DurationError`] naming the input and what was wrong with it (an empty or negative text, a
/// missing or unknown unit, a bad number, or a duration beyond [`MAX_DURATION`]).
///
/// ```
/// use std::time::Duration;
/// use leasehold::parse_duration;
///
/// assert_eq!(parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(parse_duration("1m30s")?, Duration::from_secs(90));
/// assert_eq!(parse_duration("PT10S")?, Duration::from_secs(10));
/// assert!(parse_duration("-5s").is_err());
/// assert!(parse_duration("36500d").is_ok());
/// assert!(parse_duration("10000000000000000000s").is_err()); // beyond MAX_DURATION
/// # Ok::<(), leasehold::DurationError>(())
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let input = text.trim();
    let err = |reason: &'static str| DurationError {
        input: text.to_owned(),
        reason: Cow::Borrowed(reason),
        too_long: false,
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
    let parsed = match upper.strip_prefix('P') {
        Some(rest) => parse_iso(rest),
        None => parse_simple(input),
    };
    match parsed {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        Ok(_) | Err(None) => Err(DurationError {
            input: text.to_owned(),
            reason: Cow::Owned(format!(
                "longer than the maximum of {} (100 years; leasehold::MAX_DURATION)",
                Human(MAX_DURATION)
            )),
            too_long: true,
        }),
        Err(Some(reason)) => Err(err(reason)),
    }
}

/// `total + value × seconds_per_unit`; `Err(None)` when that goes beyond [`MAX_DURATION`] (every
/// part and every sum is checked, so no input overflows).
fn add_part(
    total: Duration,
    value: f64,
    seconds_per_unit: f64,
) -> Result<Duration, Option<&'static str>> {
    let secs = value * seconds_per_unit;
    if !secs.is_finite() || secs < 0.0 {
        return Err(Some("bad number"));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(None);
    }
    let part = Duration::try_from_secs_f64(secs).map_err(|_| Some("bad number"))?;
    match total.checked_add(part) {
        Some(sum) if sum <= MAX_DURATION => Ok(sum),
        _ => Err(None),
    }
}

/// `Err(None)`: beyond [`MAX_DURATION`].
fn parse_simple(input: &str) -> Result<Duration, Option<&'static str>> {
    let mut total = Duration::ZERO;
    let mut rest = input;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or(Some("missing unit (ms, s, m, h or d)"))?;
        if digits == 0 {
            return Err(Some("expected a number"));
        }
        let value: f64 = rest[..digits].parse().map_err(|_| Some("bad number"))?;
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
            _ => return Err(Some("unknown unit (use ms, s, m, h or d)")),
        };
        rest = &rest[unit_len..];
        total = add_part(total, value, seconds_per_unit)?;
    }
    Ok(total)
}

/// `Err(Some(_))`: malformed; `Err(None)`: beyond [`MAX_DURATION`].
fn parse_iso(rest: &str) -> Result<Duration, Option<&'static str>> {
    const MALFORMED: Option<&str> = Some("not a valid ISO-8601 duration");
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    if date.is_empty() && time.is_none_or(str::is_empty) {
        return Err(MALFORMED);
    }
    let total = iso_part(Duration::ZERO, date, &[('D', 86400.0), ('W', 604800.0)])?;
    match time {
        Some("") => Err(MALFORMED),
        Some(time) => iso_part(total, time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)]),
        None => Ok(total),
    }
}

fn iso_part(
    mut total: Duration,
    mut text: &str,
    units: &[(char, f64)],
) -> Result<Duration, Option<&'static str>> {
    const MALFORMED: Option<&str> = Some("not a valid ISO-8601 duration");
    while !text.is_empty() {
        let end = text
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or(MALFORMED)?;
        let number = &text[..end];
        if !number
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
        {
            return Err(MALFORMED);
        }
        let value: f64 = number.replace(',', ".").parse().map_err(|_| MALFORMED)?;
        let unit = text[end..].chars().next().ok_or(MALFORMED)?;
        let (_, secs) = units.iter().find(|(u, _)| *u == unit).ok_or(MALFORMED)?;
        total = add_part(total, value, *secs).map_err(|e| e.and(MALFORMED))?;
        text = &text[end + 1..];
    }
    Ok(total)
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

    #[test]
    fn the_maximum_is_accepted_and_anything_longer_rejected() {
        assert_eq!(parse_duration("36500d"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("P36500D"), Ok(MAX_DURATION));
        for long in [
            "36501d",
            "36500d1ms",
            "10000000000000000000s",
            "18446744073709551615s",
            "99999999999999999999999999999999999999999d",
            "P99999999999999999999W",
            "PT99999999999999999999H",
        ] {
            match parse_duration(long) {
                Err(e) if e.is_too_long() => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("36500d") && msg.contains("MAX_DURATION"),
                        "{msg}"
                    );
                }
                other => panic!("{long:?} must be rejected as too long, got {other:?}"),
            }
        }
    }

    /// Two parts each in range whose sum overflows `Duration` used to panic inside the parser.
    #[test]
    fn parts_that_add_up_beyond_the_maximum_are_an_error_not_a_panic() {
        let max_secs = u64::MAX.to_string();
        for text in [
            format!("{max_secs}s{max_secs}s"),
            "10000000000000000000s10000000000000000000s".to_owned(),
            "PT10000000000000000000S10000000000000000000S".to_owned(),
            "36500d36500d".to_owned(),
            "20000d20000d".to_owned(),
            "P20000DT480000000H".to_owned(),
            "P5214W2DT24H1S".to_owned(),
            "PT18446744073709551615S18446744073709551615S".to_owned(),
        ] {
            let got = std::panic::catch_unwind(|| parse_duration(&text));
            match got {
                Ok(Err(_)) => {}
                Ok(Ok(d)) => panic!("{text:?} parsed as {d:?}, beyond the maximum"),
                Err(_) => panic!("{text:?} panicked"),
            }
        }
    }

    /// Property-style: thousands of random texts over an alphabet of digits, units, separators
    /// and odd characters never panic, and whatever parses is within the maximum.
    #[test]
    fn no_input_panics_and_every_result_is_within_the_maximum() {
        use rand::{Rng, SeedableRng};
        const ALPHABET: &[&str] = &[
            "0",
            "1",
            "9",
            "5",
            "99999999999",
            "18446744073709551615",
            ".",
            ",",
            "ms",
            "s",
            "m",
            "h",
            "d",
            "w",
            "P",
            "T",
            "D",
            "H",
            "M",
            "S",
            "W",
            "-",
            "+",
            " ",
            "e",
            "E",
            "inf",
            "NaN",
            "é",
            "💥",
            "\u{0}",
            "μs",
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1ea5e);
        let mut parsed = 0;
        for _ in 0..20_000 {
            let len = rng.random_range(0..10);
            let text: String = (0..len)
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
                .collect();
            let result = std::panic::catch_unwind(|| parse_duration(&text));
            match result {
                Err(_) => panic!("parse_duration({text:?}) panicked"),
                Ok(Ok(d)) => {
                    parsed += 1;
                    assert!(d <= MAX_DURATION, "{text:?} parsed as {d:?}");
                }
                Ok(Err(e)) => assert!(e.to_string().contains(&format!("{text:?}")), "{e}"),
            }
        }
        assert!(
            parsed > 100,
            "the generator should also produce valid texts ({parsed})"
        );
    }
}
