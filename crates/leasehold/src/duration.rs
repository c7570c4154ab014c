//! Text forms of durations: `500ms`, `10s`, `5m`, `1h`, `2d`, `1m30s` and ISO-8601 `PT10S`.
//!
//! The grammar is written once, as the `const fn` [`parse_duration_const`]: [`parse_duration`]
//! calls it at run time, and `#[leasehold::leader_only]` evaluates it at compile time (through
//! `leasehold::__private`), so a duration literal the macro accepts is exactly one that
//! `parse_duration` accepts.

use std::time::Duration;

use crate::limits::MAX_DURATION;

/// Why a duration text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {}", fault.detail())]
pub struct DurationError {
    input: String,
    fault: DurationFault,
}

impl DurationError {
    /// True when the text was well formed but longer than [`MAX_DURATION`].
    ///
    /// ```
    /// assert!(leasehold::parse_duration("36501d").unwrap_err().is_too_long());
    /// assert!(!leasehold::parse_duration("5x").unwrap_err().is_too_long());
    /// ```
    pub fn is_too_long(&self) -> bool {
        self.fault == DurationFault::TooLong
    }
}

/// What was wrong with a duration text, without the text: what a compile-time check can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationFault {
    /// Nothing but whitespace.
    Empty,
    /// A leading `-`.
    Negative,
    /// A number without a unit.
    MissingUnit,
    /// A unit (or other text) where a number belongs.
    ExpectedNumber,
    /// A number with more than one `.`.
    BadNumber,
    /// A unit other than `ms`, `s`, `m`, `h` and `d`.
    UnknownUnit,
    /// A text starting with `P` that is not an ISO-8601 duration.
    NotIso,
    /// Longer than [`MAX_DURATION`].
    TooLong,
}

/// The prefix of every [`DurationFault::message`].
const MESSAGE_PREFIX: &str = "invalid duration: ";

/// `"invalid duration: " + reason + the accepted forms`, as one literal (a compile-time message
/// is a `&'static str`).
macro_rules! with_forms {
    ($reason:literal) => {
        concat!(
            "invalid duration: ",
            $reason,
            "; use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S"
        )
    };
}

impl DurationFault {
    /// What was wrong and what is allowed, e.g. `invalid duration: unknown unit (use ms, s, m, h
    /// or d); use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S`. [`DurationError`]'s
    /// message is the same with the rejected text after `invalid duration`.
    pub const fn message(self) -> &'static str {
        match self {
            Self::Empty => with_forms!("empty"),
            Self::Negative => with_forms!("negative durations are not allowed"),
            Self::MissingUnit => with_forms!("missing unit (ms, s, m, h or d)"),
            Self::ExpectedNumber => with_forms!("expected a number"),
            Self::BadNumber => with_forms!("bad number"),
            Self::UnknownUnit => with_forms!("unknown unit (use ms, s, m, h or d)"),
            Self::NotIso => with_forms!("not a valid ISO-8601 duration"),
            // `36500d` is `limits::Human(MAX_DURATION)` (a test holds them together).
            Self::TooLong => {
                "invalid duration: longer than the maximum of 36500d (100 years; leasehold::limits::MAX_DURATION)"
            }
        }
    }

    /// The message without its `invalid duration: ` prefix.
    fn detail(self) -> &'static str {
        let message = self.message();
        message.strip_prefix(MESSAGE_PREFIX).unwrap_or(message)
    }
}

/// Parses a duration written as `500ms`, `10s`, `5m`, `1h`, `2d`, combinations such as `1m30s`,
/// or ISO-8601 (`PT10S`, `PT1M30.5S`, `P1DT2H`). A bare `0` is zero; surrounding whitespace is
/// ignored. Fractions are exact decimals, rounded to the nearest nanosecond.
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
/// # Ok::<(), leasehold::error::DurationError>(())
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    parse_duration_const(text).map_err(|fault| DurationError {
        input: text.to_owned(),
        fault,
    })
}

/// [`parse_duration`] as a `const fn`: the one implementation of the grammar, usable at compile
/// time. It answers the [`DurationFault`] alone (a `const fn` cannot build the message with the
/// input in it).
pub const fn parse_duration_const(text: &str) -> Result<Duration, DurationFault> {
    let b = text.as_bytes();
    let (start, end) = trim(b);
    if start == end {
        return Err(DurationFault::Empty);
    }
    if end - start == 1 && b[start] == b'0' {
        return Ok(Duration::ZERO);
    }
    if b[start] == b'-' {
        return Err(DurationFault::Negative);
    }
    let nanos = if b[start] == b'P' || b[start] == b'p' {
        parse_iso(b, start + 1, end)
    } else {
        parse_simple(b, start, end)
    };
    match nanos {
        // At most MAX_NANOS, which fits in a u64 (checked below).
        Ok(n) => Ok(Duration::from_nanos(n as u64)),
        Err(fault) => Err(fault),
    }
}

/// [`MAX_DURATION`] in nanoseconds.
const MAX_NANOS: u128 = MAX_DURATION.as_nanos();
const _: () = assert!(MAX_NANOS <= u64::MAX as u128);

const NANOS_PER_MS: u128 = 1_000_000;
const NANOS_PER_S: u128 = 1_000_000_000;
const NANOS_PER_M: u128 = 60 * NANOS_PER_S;
const NANOS_PER_H: u128 = 3600 * NANOS_PER_S;
const NANOS_PER_D: u128 = 86_400 * NANOS_PER_S;
const NANOS_PER_W: u128 = 7 * NANOS_PER_D;

/// Fraction digits kept (more cannot change the nanoseconds of any unit up to a week).
const MAX_FRACTION_DIGITS: u32 = 20;

/// A decimal number as written: `whole.fraction`, the fraction being `numerator / 10^digits`.
#[derive(Clone, Copy)]
struct Decimal {
    /// Saturates just above `MAX_NANOS`: any larger value is too long in every unit.
    whole: u128,
    numerator: u128,
    denominator: u128,
}

/// `[start, end)` of `b` without surrounding whitespace (as `str::trim`: Unicode `White_Space`).
/// `b` is UTF-8.
const fn trim(b: &[u8]) -> (usize, usize) {
    let mut start = 0;
    while start < b.len() {
        let (c, len) = decode(b, start);
        if !c.is_whitespace() {
            break;
        }
        start += len;
    }
    let mut end = b.len();
    while end > start {
        let mut at = end - 1;
        while at > start && b[at] & 0xC0 == 0x80 {
            at -= 1;
        }
        if !decode(b, at).0.is_whitespace() {
            break;
        }
        end = at;
    }
    (start, end)
}

/// The character starting at byte `i` of the UTF-8 text `b`, and its length in bytes.
const fn decode(b: &[u8], i: usize) -> (char, usize) {
    let first = b[i] as u32;
    let (len, mut code) = if first < 0x80 {
        (1, first)
    } else if first < 0xE0 {
        (2, first & 0x1F)
    } else if first < 0xF0 {
        (3, first & 0x0F)
    } else {
        (4, first & 0x07)
    };
    let mut k = 1;
    while k < len && i + k < b.len() {
        code = (code << 6) | (b[i + k] as u32 & 0x3F);
        k += 1;
    }
    match char::from_u32(code) {
        Some(c) => (c, len),
        None => ('\u{FFFD}', len),
    }
}

/// Reads `b[start..end]` as a decimal: digits with at most one separator (`.`, or `,` too when
/// `comma`), and at least one digit. `None` otherwise.
const fn decimal(b: &[u8], start: usize, end: usize, comma: bool) -> Option<Decimal> {
    let mut d = Decimal {
        whole: 0,
        numerator: 0,
        denominator: 1,
    };
    let (mut digits, mut fraction_digits, mut in_fraction) = (0u32, 0u32, false);
    let mut i = start;
    while i < end {
        let c = b[i];
        if c.is_ascii_digit() {
            let digit = (c - b'0') as u128;
            digits += 1;
            if !in_fraction {
                d.whole = d.whole * 10 + digit;
                if d.whole > MAX_NANOS {
                    d.whole = MAX_NANOS + 1;
                }
            } else if fraction_digits < MAX_FRACTION_DIGITS {
                d.numerator = d.numerator * 10 + digit;
                d.denominator *= 10;
                fraction_digits += 1;
            }
        } else if (c == b'.' || (comma && c == b',')) && !in_fraction {
            in_fraction = true;
        } else {
            return None;
        }
        i += 1;
    }
    if digits == 0 { None } else { Some(d) }
}

/// `total + value × unit`, rounded to the nearest nanosecond; `TooLong` beyond [`MAX_DURATION`].
const fn add_part(total: u128, value: Decimal, unit: u128) -> Result<u128, DurationFault> {
    // whole ≤ MAX_NANOS + 1 < 2^62 and unit < 2^50; numerator < 10^20 < 2^67: no overflow.
    let fraction = (value.numerator * unit * 2 + value.denominator) / (value.denominator * 2);
    let sum = total + value.whole * unit + fraction;
    if sum > MAX_NANOS {
        Err(DurationFault::TooLong)
    } else {
        Ok(sum)
    }
}

/// True when `b[start..end]` is `word`.
const fn is(b: &[u8], start: usize, end: usize, word: &[u8]) -> bool {
    if end - start != word.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if b[start + i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `500ms`, `1m30s`, …: numbers (`[0-9.]+`), each followed by its unit.
const fn parse_simple(b: &[u8], start: usize, end: usize) -> Result<u128, DurationFault> {
    let mut total = 0;
    let mut i = start;
    while i < end {
        let mut number_end = i;
        while number_end < end && (b[number_end].is_ascii_digit() || b[number_end] == b'.') {
            number_end += 1;
        }
        if number_end == end {
            return Err(DurationFault::MissingUnit);
        }
        if number_end == i {
            return Err(DurationFault::ExpectedNumber);
        }
        let Some(value) = decimal(b, i, number_end, false) else {
            return Err(DurationFault::BadNumber);
        };
        let mut unit_end = number_end;
        while unit_end < end && !b[unit_end].is_ascii_digit() {
            unit_end += 1;
        }
        let unit = if is(b, number_end, unit_end, b"ms") {
            NANOS_PER_MS
        } else if is(b, number_end, unit_end, b"s") {
            NANOS_PER_S
        } else if is(b, number_end, unit_end, b"m") {
            NANOS_PER_M
        } else if is(b, number_end, unit_end, b"h") {
            NANOS_PER_H
        } else if is(b, number_end, unit_end, b"d") {
            NANOS_PER_D
        } else {
            return Err(DurationFault::UnknownUnit);
        };
        total = match add_part(total, value, unit) {
            Ok(t) => t,
            Err(fault) => return Err(fault),
        };
        i = unit_end;
    }
    Ok(total)
}

/// ISO-8601 after the `P` (case-insensitive): `[nD][nW][T[nH][nM][nS]]`, numbers may have a `.`
/// or `,` fraction.
const fn parse_iso(b: &[u8], start: usize, end: usize) -> Result<u128, DurationFault> {
    let mut t = start;
    while t < end && !b[t].eq_ignore_ascii_case(&b'T') {
        t += 1;
    }
    let has_time = t < end;
    if t == start && (!has_time || t + 1 == end) {
        return Err(DurationFault::NotIso);
    }
    let total = match iso_part(0, b, start, t, b"DW") {
        Ok(total) => total,
        Err(fault) => return Err(fault),
    };
    if !has_time {
        return Ok(total);
    }
    if t + 1 == end {
        return Err(DurationFault::NotIso);
    }
    iso_part(total, b, t + 1, end, b"HMS")
}

/// Numbers each followed by one of `units` (`D`, `W`, `H`, `M`, `S`; either case).
const fn iso_part(
    mut total: u128,
    b: &[u8],
    start: usize,
    end: usize,
    units: &[u8],
) -> Result<u128, DurationFault> {
    let mut i = start;
    while i < end {
        let mut unit_at = i;
        while unit_at < end && !b[unit_at].is_ascii_alphabetic() {
            unit_at += 1;
        }
        if unit_at == end {
            return Err(DurationFault::NotIso);
        }
        let Some(value) = decimal(b, i, unit_at, true) else {
            return Err(DurationFault::NotIso);
        };
        let letter = b[unit_at].to_ascii_uppercase();
        let mut u = 0;
        while u < units.len() && units[u] != letter {
            u += 1;
        }
        if u == units.len() {
            return Err(DurationFault::NotIso);
        }
        let unit = match letter {
            b'D' => NANOS_PER_D,
            b'W' => NANOS_PER_W,
            b'H' => NANOS_PER_H,
            b'M' => NANOS_PER_M,
            _ => NANOS_PER_S,
        };
        total = match add_part(total, value, unit) {
            Ok(t) => t,
            Err(fault) => return Err(fault),
        };
        i = unit_at + 1;
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

    /// The `const fn` is usable where `#[leader_only]` puts it: in a `const` item.
    #[test]
    fn the_grammar_runs_at_compile_time() {
        const LEASE: Duration = match parse_duration_const("1m30.5s") {
            Ok(d) => d,
            Err(fault) => panic!("{}", fault.message()),
        };
        const BAD: Result<Duration, DurationFault> = parse_duration_const("30x");
        assert_eq!(LEASE, Duration::from_millis(90_500));
        assert_eq!(BAD, Err(DurationFault::UnknownUnit));
    }

    /// Fractions are exact decimals rounded to the nanosecond (the parser once went through
    /// `f64`, which gave 123456789.123456791s here).
    #[test]
    fn fractions_are_exact_to_the_nanosecond() {
        let cases = [
            (
                "123456789.123456789s",
                Duration::new(123_456_789, 123_456_789),
            ),
            ("0.3s", Duration::from_millis(300)),
            ("0.1d", Duration::from_secs(8640)),
            ("99999999999ms", Duration::new(99_999_999, 999_000_000)),
            ("0.0000000005s", Duration::from_nanos(1)),
            ("0.0000000004s", Duration::ZERO),
            ("1.0000000004999999999999999s", Duration::from_secs(1)),
            ("PT0,25S", Duration::from_millis(250)),
            (".5s", Duration::from_millis(500)),
            ("1.s", Duration::from_secs(1)),
            ("P1.5W", Duration::from_secs(907_200)),
            ("\u{3000}5s\u{a0}", Duration::from_secs(5)),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), Ok(want), "{text:?}");
        }
        for bad in [".s", "1.2.3s", "P1.2.3D", "PT,S"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    /// The compile-time message is the run-time one without the input, and the maximum in it
    /// is `MAX_DURATION` as the limits print it.
    #[test]
    fn the_fault_message_is_the_error_message_without_the_input() {
        use crate::limits::Human;

        let cases = [
            ("", DurationFault::Empty),
            ("-1s", DurationFault::Negative),
            ("10", DurationFault::MissingUnit),
            ("s", DurationFault::ExpectedNumber),
            ("1.2.3s", DurationFault::BadNumber),
            ("5x", DurationFault::UnknownUnit),
            ("PT5X", DurationFault::NotIso),
            ("36501d", DurationFault::TooLong),
        ];
        for (text, fault) in cases {
            assert_eq!(parse_duration_const(text), Err(fault), "{text:?}");
            let message = fault.message();
            let detail = message.strip_prefix(MESSAGE_PREFIX).unwrap_or_default();
            assert!(!detail.is_empty(), "{message}");
            let error = parse_duration(text).map(|_| ()).unwrap_err().to_string();
            assert_eq!(error, format!("invalid duration {text:?}: {detail}"));
        }
        let too_long = DurationFault::TooLong.message();
        assert!(
            too_long.contains(&format!("maximum of {} ", Human(MAX_DURATION))),
            "{too_long}"
        );
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
