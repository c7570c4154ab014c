//! The key layout: which KV key (and JetStream subject) holds each slot and ledger of a lock.
//!
//! KV keys allow only `[-/_=.A-Za-z0-9]`, and `.` separates subject tokens. Lock names hold
//! `[A-Za-z0-9_.:/-]`, so a name is written as **one token**: `.` as `=2E`, `:` as `=3A` (and
//! `=`, which no name holds, as `=3D`, so decoding is unambiguous). Then
//!
//! * slot `n` of lock `L` is the key `<L>.s<n>` and its ledger `<L>.ledger`;
//! * `a`, `a/b`, `a.b` and `a:1` are the tokens `a`, `a/b`, `a=2Eb` and `a=3A1`: different
//!   tokens, so the subject filter `$KV.<bucket>.<L>.>` of one lock never matches another's keys;
//! * the session `<id>` of a client (see the `session` module) is the key `=session.<id>`: its
//!   first token starts with `=` followed by no escape code, which no lock name encodes to, so
//!   no lock's filter matches a session key.

use leasehold::LockName;

/// The first letter of a slot key's last token.
const SLOT: char = 's';
/// The last token of a lock's ledger key.
const LEDGER: &str = "ledger";
/// The first token of every session key.
const SESSION: &str = "=session";

/// Where one bucket's keys live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    bucket: String,
    /// `$KV.<bucket>.`: the subject prefix of every key.
    prefix: String,
}

/// What a key of this store names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyOf {
    /// A slot of a lock.
    Slot(LockName, u32),
    /// A lock's period ledger.
    Ledger(LockName),
    /// A client's session record, by id.
    Session(String),
}

impl KeyOf {
    /// The lock the key belongs to (`None` for a session key, which belongs to no lock).
    pub(crate) fn lock(&self) -> Option<&LockName> {
        match self {
            Self::Slot(lock, _) | Self::Ledger(lock) => Some(lock),
            Self::Session(_) => None,
        }
    }
}

/// `name` as one KV key token.
pub(crate) fn token(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '.' => out.push_str("=2E"),
            ':' => out.push_str("=3A"),
            '=' => out.push_str("=3D"),
            c => out.push(c),
        }
    }
    out
}

/// The lock name a token encodes, if it is one.
fn untoken(token: &str) -> Option<LockName> {
    let mut out = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(at) = rest.find('=') {
        out.push_str(rest.get(..at)?);
        let code = rest.get(at + 1..at + 3)?;
        out.push(match code {
            "2E" => '.',
            "3A" => ':',
            "3D" => '=',
            _ => return None,
        });
        rest = rest.get(at + 3..)?;
    }
    out.push_str(rest);
    LockName::new(out).ok()
}

impl Keys {
    pub(crate) fn new(bucket: &str) -> Self {
        Self {
            bucket: bucket.to_owned(),
            prefix: format!("$KV.{bucket}."),
        }
    }

    /// The bucket's name.
    pub(crate) fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The JetStream stream behind the bucket: `KV_<bucket>`.
    pub(crate) fn stream(&self) -> String {
        format!("KV_{}", self.bucket)
    }

    /// The KV key of slot `slot` of `lock`: `<lock>.s<slot>`.
    pub(crate) fn slot_key(&self, lock: &LockName, slot: u32) -> String {
        format!("{}.{SLOT}{slot}", token(lock.as_str()))
    }

    /// The subject of slot `slot` of `lock`.
    pub(crate) fn slot(&self, lock: &LockName, slot: u32) -> String {
        format!("{}{}", self.prefix, self.slot_key(lock, slot))
    }

    /// The subject of `lock`'s ledger: `<lock>.ledger`.
    pub(crate) fn ledger(&self, lock: &LockName) -> String {
        format!("{}{}.{LEDGER}", self.prefix, token(lock.as_str()))
    }

    /// The subject of the session record `id`: `=session.<id>`.
    pub(crate) fn session(&self, id: &str) -> String {
        format!("{}{SESSION}.{id}", self.prefix)
    }

    /// The subject filter of every key of `lock` (its slots and its ledger).
    pub(crate) fn lock(&self, lock: &LockName) -> String {
        format!("{}{}.>", self.prefix, token(lock.as_str()))
    }

    /// The subject filter of every key of the bucket.
    pub(crate) fn all(&self) -> String {
        format!("{}>", self.prefix)
    }

    /// What the subject `subject` of this bucket names; `None` for a key this store did not lay
    /// out.
    pub(crate) fn parse_subject(&self, subject: &str) -> Option<KeyOf> {
        self.parse_key(subject.strip_prefix(&self.prefix)?)
    }

    /// What the KV key `key` names; `None` for a key this store did not lay out.
    pub(crate) fn parse_key(&self, key: &str) -> Option<KeyOf> {
        let (name, tail) = key.split_once('.')?;
        if name == SESSION {
            let valid = !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_hexdigit());
            return valid.then(|| KeyOf::Session(tail.to_owned()));
        }
        let lock = untoken(name)?;
        if tail == LEDGER {
            return Some(KeyOf::Ledger(lock));
        }
        let digits = tail.strip_prefix(SLOT)?;
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || (digits.len() > 1 && digits.starts_with('0'))
        {
            return None;
        }
        Some(KeyOf::Slot(lock, digits.parse().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> LockName {
        LockName::new(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn names_with_dots_colons_and_slashes_are_single_tokens() {
        let keys = Keys::new("lh");
        let subjects: Vec<String> = ["a", "a/b", "a.b", "a:1", "a.b.c"]
            .into_iter()
            .map(|n| keys.slot(&name(n), 0))
            .collect();
        assert_eq!(
            subjects,
            [
                "$KV.lh.a.s0",
                "$KV.lh.a/b.s0",
                "$KV.lh.a=2Eb.s0",
                "$KV.lh.a=3A1.s0",
                "$KV.lh.a=2Eb=2Ec.s0"
            ]
        );
        assert_eq!(keys.lock(&name("a.b")), "$KV.lh.a=2Eb.>");
        assert_eq!(keys.ledger(&name("x:y")), "$KV.lh.x=3Ay.ledger");
        assert_eq!(keys.session("ab12"), "$KV.lh.=session.ab12");
        assert_eq!(
            keys.parse_subject(&keys.session("ab12")),
            Some(KeyOf::Session("ab12".to_owned()))
        );
        for n in ["a", "a/b", "a.b", "a:1", "t:a:report.v2/x-y_z"] {
            let lock = name(n);
            assert_eq!(
                keys.parse_subject(&keys.slot(&lock, 17)),
                Some(KeyOf::Slot(lock.clone(), 17))
            );
            assert_eq!(
                keys.parse_subject(&keys.ledger(&lock)),
                Some(KeyOf::Ledger(lock))
            );
        }
    }

    #[test]
    fn foreign_keys_are_not_parsed() {
        let keys = Keys::new("lh");
        for bad in [
            "$KV.lh.a",
            "$KV.lh.a.s",
            "$KV.lh.a.s01",
            "$KV.lh.a.sx",
            "$KV.lh.a.b.s0",
            "$KV.lh.a=2.s0",
            "$KV.lh.a=41.s0",
            "$KV.other.a.s0",
            "$KV.lh.-a.s0",
            "$KV.lh.=session.",
            "$KV.lh.=session.x.y",
            "$KV.lh.=sessions.ab",
        ] {
            assert_eq!(keys.parse_subject(bad), None, "{bad}");
        }
    }
}
