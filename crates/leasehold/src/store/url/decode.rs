//! The one percent decoder of store URLs: strict for values a store reads, lossy for what
//! redaction and diagnostics only compare or show.

/// Decodes `%XX` escapes into bytes (`+` stays a plus). The second value is false when some `%`
/// was not followed by two hex digits; such a `%` is kept as it is.
fn decode_bytes(text: &str) -> (Vec<u8>, bool) {
    let bytes = text.as_bytes();
    let hex = |i: usize| {
        bytes
            .get(i)
            .and_then(|b| char::from(*b).to_digit(16))
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut well_formed = true;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push(high * 16 + low);
                i += 3;
            }
            _ => {
                well_formed &= b != b'%';
                out.push(b);
                i += 1;
            }
        }
    }
    (out, well_formed)
}

/// Percent-decodes `text` into UTF-8 (`+` stays a plus): `None` for a `%` not followed by two
/// hex digits or bytes that are not UTF-8. For parts of a store URL other than its query, such
/// as a table name in the host position.
///
/// ```
/// use leasehold::store::percent_decode;
/// assert_eq!(percent_decode("a%2Fb+c").as_deref(), Some("a/b+c"));
/// assert_eq!(percent_decode("100%"), None);
/// ```
pub fn percent_decode(text: &str) -> Option<String> {
    let (bytes, well_formed) = decode_bytes(text);
    if !well_formed {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Percent-decodes `text`, leaving bad escapes as they are and replacing bad UTF-8.
pub(crate) fn percent_decode_lossy(text: &str) -> String {
    let (bytes, _) = decode_bytes(text);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_and_lossy_decode_alike_where_the_text_is_well_formed() {
        for text in ["a%2Fb+c", "%E5%AF%86%E7%A0%81", "plain", "%41%42", ""] {
            assert_eq!(
                percent_decode(text),
                Some(percent_decode_lossy(text)),
                "{text}"
            );
        }
        assert_eq!(percent_decode("a%2Fb+c").as_deref(), Some("a/b+c"));
    }

    #[test]
    fn bad_escapes_are_refused_strictly_and_kept_lossily() {
        for (text, lossy) in [
            ("100%", "100%"),
            ("%2", "%2"),
            ("%zz1", "%zz1"),
            ("%%41", "%A"),
        ] {
            assert_eq!(percent_decode(text), None, "{text}");
            assert_eq!(percent_decode_lossy(text), lossy, "{text}");
        }
        assert_eq!(percent_decode("%FF"), None);
        assert_eq!(percent_decode_lossy("%FF"), "\u{FFFD}");
    }
}
