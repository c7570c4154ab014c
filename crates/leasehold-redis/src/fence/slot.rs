//! Redis Cluster slots, and the fence key that shares its key's slot.
//!
//! A Lua script may only touch keys of one cluster slot, so a key and the key that keeps its
//! fence must hash alike. Redis hashes a key's **hash tag** — the text between its first `{` and
//! the first `}` after it, when that text is not empty — or else the whole key, with CRC16
//! (XMODEM) modulo 16384. The fence key is derived so that it hashes to the same text:
//!
//! * a key with a hash tag (`orders:{42}:total`) gets a suffix, which keeps its tag:
//!   `orders:{42}:total:<prefix>:fence`;
//! * a key without one (`orders:42`) becomes the fence key's hash tag:
//!   `<prefix>:fence:{orders:42}`.
//!
//! A key without a hash tag that contains `}` (`a}b`, `{}x`) cannot be wrapped (the tag would end
//! at its `}`) and has no tag to keep: no fence key can share its slot, so it is refused.

/// Redis Cluster's number of hash slots.
const SLOTS: u16 = 16384;

/// The part of `key` Redis hashes: its hash tag, when it has one.
pub(crate) fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// The Redis Cluster hash slot of `key` (what `CLUSTER KEYSLOT` answers): CRC16 (XMODEM) of its
/// hash tag, or of the whole key without one, modulo 16384.
///
/// ```
/// use leasehold_redis::fence::key_slot;
///
/// assert_eq!(key_slot(b"foo"), 12182);
/// assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
/// ```
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as Redis Cluster uses it.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &byte| {
        (0..8).fold(crc ^ (u16::from(byte) << 8), |crc, _| {
            if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            }
        })
    })
}

/// The key that keeps `key`'s highest fence, in the same cluster slot (see the module docs);
/// `None` when no key can share its slot (no hash tag, and a `}` in it).
pub(crate) fn fence_key(prefix: &str, key: &str) -> Option<String> {
    if hash_tag(key.as_bytes()).is_some() {
        Some(format!("{key}:{prefix}:fence"))
    } else if key.contains('}') {
        None
    } else {
        Some(format!("{prefix}:fence:{{{key}}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots `CLUSTER KEYSLOT` answered on a Redis 7.0 node started with `--cluster-enabled yes`.
    const SEEN: [(&str, u16); 15] = [
        ("foo", 12182),
        ("bar", 5061),
        ("123456789", 12739),
        ("{user1000}.following", 3443),
        ("a{b}c", 3300),
        ("{}x", 10595),
        ("a{}{b}", 15033),
        ("a{b", 13340),
        ("a}b", 7866),
        ("leasehold:fence:{foo}", 12182),
        ("foo{", 7673),
        ("주문:7", 1359),
        ("{a}:leasehold:fence", 15495),
        ("{{a}}", 10276),
        ("x{}", 2608),
    ];

    #[test]
    fn slots_are_those_redis_computes() {
        assert_eq!(crc16(b"123456789"), 0x31C3, "the XMODEM check value");
        for (key, slot) in SEEN {
            assert_eq!(key_slot(key.as_bytes()), slot, "{key}");
        }
    }

    #[test]
    fn hash_tags_follow_the_first_brace_pair_with_text_in_it() {
        let tag = |k: &str| hash_tag(k.as_bytes()).map(|t| String::from_utf8_lossy(t).into_owned());
        assert_eq!(tag("a{b}c"), Some("b".into()));
        assert_eq!(tag("{{a}}"), Some("{a".into()));
        assert_eq!(tag("a{b}{c}"), Some("b".into()));
        for none in ["abc", "{}x", "a{}{b}", "a{b", "a}b{c"] {
            assert_eq!(tag(none), None, "{none}");
        }
    }

    #[test]
    fn a_fence_key_shares_its_keys_slot_with_or_without_a_hash_tag() {
        let keys = [
            "orders:42",
            "foo",
            "a{b",
            "foo{",
            "주문:7",
            "orders:{42}:total",
            "{user1000}.following",
            "{{a}}",
            "a}b{c}",
            "x{y}z}",
            "GET /reports",
        ];
        for key in keys {
            let fence = fence_key("leasehold", key).unwrap_or_else(|| panic!("{key}"));
            assert_ne!(fence, key);
            assert_eq!(
                key_slot(fence.as_bytes()),
                key_slot(key.as_bytes()),
                "{key} and {fence}"
            );
        }
        assert_eq!(
            fence_key("app", "orders:42").as_deref(),
            Some("app:fence:{orders:42}")
        );
        assert_eq!(
            fence_key("app", "orders:{42}:total").as_deref(),
            Some("orders:{42}:total:app:fence")
        );
    }

    #[test]
    fn keys_whose_slot_no_fence_key_can_share_are_refused() {
        for key in ["a}b", "{}x", "x{}", "}", "a{}}", "a{}{b}x"] {
            assert_eq!(fence_key("leasehold", key), None, "{key}");
        }
    }

    #[test]
    fn fence_keys_of_different_keys_differ() {
        let keys = [
            "a",
            "{a}",
            "b{a}",
            "a:leasehold:fence",
            "leasehold:fence:{a}",
        ];
        let fences: std::collections::HashSet<_> = keys
            .iter()
            .filter_map(|k| fence_key("leasehold", k))
            .collect();
        assert_eq!(fences.len(), keys.len());
    }
}
