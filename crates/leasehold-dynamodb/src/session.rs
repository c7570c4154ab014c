//! The sessions of one store instance, as this instance knows them: which session new grants of
//! each lease length join, which leases (tokens) each session keeps alive, and what the next
//! renewal of a session must tell DynamoDB (tokens to revoke, revoked tokens to forget).
//!
//! Only this instance writes a session's end, so the end it last wrote is what the session item
//! holds (or later, when a renewal whose answer was lost had been applied): the registry's end is
//! a lower bound, which is the safe side for every decision made from it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use leasehold::store::Token;

use crate::clock::ms;

/// The most tokens a session item's `revoked` set holds. A forced release adds its lease's token
/// there before freeing the lock item, and the holder's next renewal removes it again (after
/// freeing that lock item itself if the forcer had not), so the set holds the forced releases of
/// about one beat. A forced release that finds the set full fails with a transient error, to be
/// retried after the holder's next renewal. 1,000 tokens of 32 hex digits are about 33 KB of the
/// item's 400 KB.
///
/// ```
/// assert_eq!(leasehold_dynamodb::MAX_REVOKED, 1_000);
/// ```
pub const MAX_REVOKED: usize = 1_000;

/// The part of its lease length a session must have left for a new grant to join it: half. A
/// lease joins with its own first term (a whole lease), and its first renewal comes at the next
/// beat (at most a third of a lease later), while the session still lives; a session with less
/// left (its renewals stopped or failed) is left to end, and a new one is opened.
pub(crate) const JOIN_LEFT_DIVISOR: u32 = 2;

/// One session, as this instance knows it.
#[derive(Debug)]
struct Session {
    /// The lease length its grants were made with.
    ttl: Duration,
    /// The end this instance last wrote, epoch ms.
    expiry: u64,
    /// When this instance last renewed it (epoch ms; 0 before its first renewal).
    renewed_at: u64,
    /// Leases of it this instance still answers for.
    members: usize,
    /// Tokens the next renewal revokes (their release failed).
    revoke: BTreeSet<String>,
    /// Revoked tokens whose lock items no longer name the session: the next renewal forgets them.
    prune: BTreeSet<String>,
}

/// A lease granted under a session by this instance.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// The session's id.
    pub(crate) session: String,
    /// The lock item's key.
    pub(crate) key: String,
    /// Its release was asked for and failed: answered `NotHeld`, revoked at the next renewal.
    pub(crate) released: bool,
}

/// What one renewal of a session also tells DynamoDB: at most one change of `revoked` (DynamoDB
/// allows one action per attribute in an update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pending {
    /// Nothing.
    None,
    /// Add these tokens.
    Revoke(BTreeSet<String>),
    /// Remove these tokens.
    Prune(BTreeSet<String>),
}

/// How `extend_many` sends each entry.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// By session: the entries it renews.
    pub(crate) sessions: HashMap<String, Vec<usize>>,
    /// Entries this instance knows are not held (their release failed).
    pub(crate) not_held: Vec<usize>,
    /// Entries of leases not granted under a session of this instance: renewed one by one.
    pub(crate) alone: Vec<usize>,
}

#[derive(Debug, Default)]
struct Registry {
    /// Per lease length, the session new grants join.
    current: HashMap<Duration, String>,
    sessions: HashMap<String, Session>,
    members: HashMap<Token, Member>,
}

/// The registry of an instance's sessions (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    registry: Mutex<Registry>,
    /// Held while a session is opened, so that grants at once open one, not one each.
    pub(crate) opening: tokio::sync::Mutex<()>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session a grant of `ttl` at `now_ms` joins, if one has enough left.
    pub(crate) fn joinable(&self, ttl: Duration, now_ms: u64) -> Option<String> {
        let registry = self.lock();
        let id = registry.current.get(&ttl)?;
        let session = registry.sessions.get(id)?;
        let left = ms(ttl / JOIN_LEFT_DIVISOR);
        (session.expiry >= now_ms.saturating_add(left)).then(|| id.clone())
    }

    /// The session a grant of `ttl` at `now_ms` joins at once, if this instance is renewing one:
    /// it was renewed within the last half lease and has half a lease left. (A grant made while
    /// nothing renews a session stays on its own until its first extension attaches it.)
    pub(crate) fn beating(&self, ttl: Duration, now_ms: u64) -> Option<String> {
        let registry = self.lock();
        let id = registry.current.get(&ttl)?;
        let session = registry.sessions.get(id)?;
        let half = ms(ttl / JOIN_LEFT_DIVISOR);
        (session.expiry >= now_ms.saturating_add(half)
            && session.renewed_at.saturating_add(half) >= now_ms)
            .then(|| id.clone())
    }

    /// A session opened for `ttl`, ending at `expiry`: new grants of `ttl` join it. Sessions
    /// that ended, or were replaced, and have no members left are forgotten.
    pub(crate) fn opened(&self, id: &str, ttl: Duration, expiry: u64) {
        let mut registry = self.lock();
        registry.sessions.insert(
            id.to_owned(),
            Session {
                ttl,
                expiry,
                renewed_at: 0,
                members: 0,
                revoke: BTreeSet::new(),
                prune: BTreeSet::new(),
            },
        );
        registry.current.insert(ttl, id.to_owned());
        let Registry {
            current, sessions, ..
        } = &mut *registry;
        sessions.retain(|id, s| s.members > 0 || current.get(&s.ttl) == Some(id));
    }

    /// `token`'s lease, on the item `key`, was granted under `session`.
    pub(crate) fn join(&self, token: Token, session: &str, key: &str) {
        let mut registry = self.lock();
        let Some(s) = registry.sessions.get_mut(session) else {
            return;
        };
        s.members += 1;
        let member = Member {
            session: session.to_owned(),
            key: key.to_owned(),
            released: false,
        };
        if let Some(old) = registry.members.insert(token, member) {
            // A retried grant of the same token: counted once.
            if let Some(s) = registry.sessions.get_mut(&old.session) {
                s.members = s.members.saturating_sub(1);
            }
        }
    }

    /// The membership of `token`, if its lease was granted under a session of this instance.
    pub(crate) fn member(&self, token: Token) -> Option<Member> {
        self.lock().members.get(&token).cloned()
    }

    /// The end this instance last wrote for `session` (0 once it ended or is unknown).
    pub(crate) fn known_expiry(&self, session: &str) -> u64 {
        self.lock().sessions.get(session).map_or(0, |s| s.expiry)
    }

    /// `token`'s lock item no longer names its session (released, freed, detached, taken
    /// over): it is no member any more, and may be forgotten from the session's `revoked`.
    pub(crate) fn leave(&self, token: Token) {
        let mut registry = self.lock();
        let Some(member) = registry.members.remove(&token) else {
            return;
        };
        if let Some(s) = registry.sessions.get_mut(&member.session) {
            s.members = s.members.saturating_sub(1);
            s.prune.insert(token.to_hex());
        }
    }

    /// `token`'s release failed: it is answered `NotHeld` from now on, and the session's next
    /// renewal revokes it (its lock is then free for others even if this instance never frees
    /// it).
    pub(crate) fn release_failed(&self, token: Token) {
        let mut registry = self.lock();
        let Some(member) = registry.members.get_mut(&token) else {
            return;
        };
        member.released = true;
        let session = member.session.clone();
        if let Some(s) = registry.sessions.get_mut(&session) {
            s.revoke.insert(token.to_hex());
        }
    }

    /// How `extend_many` sends `tokens` (one per entry).
    pub(crate) fn plan(&self, tokens: impl Iterator<Item = Token>) -> Plan {
        let registry = self.lock();
        let mut plan = Plan::default();
        for (i, token) in tokens.enumerate() {
            match registry.members.get(&token) {
                None => plan.alone.push(i),
                Some(m) if m.released => plan.not_held.push(i),
                Some(m) => plan.sessions.entry(m.session.clone()).or_default().push(i),
            }
        }
        plan
    }

    /// What `session`'s next renewal also sends (taken out: give it back with
    /// [`unsent`](Self::unsent) if the renewal did not land).
    pub(crate) fn pending(&self, session: &str) -> Pending {
        let mut registry = self.lock();
        let Some(s) = registry.sessions.get_mut(session) else {
            return Pending::None;
        };
        if !s.revoke.is_empty() {
            return Pending::Revoke(std::mem::take(&mut s.revoke));
        }
        if !s.prune.is_empty() {
            return Pending::Prune(std::mem::take(&mut s.prune));
        }
        Pending::None
    }

    /// A renewal's `pending` did not land (or may not have): it goes with the next one.
    pub(crate) fn unsent(&self, session: &str, pending: Pending) {
        let mut registry = self.lock();
        let Some(s) = registry.sessions.get_mut(session) else {
            return;
        };
        match pending {
            Pending::None => {}
            Pending::Revoke(tokens) => s.revoke.extend(tokens),
            Pending::Prune(tokens) => s.prune.extend(tokens),
        }
    }

    /// `session` was renewed to end at `expiry` (or found to end then), and its item's
    /// `revoked` set is `revoked`: the members among them (to free: their tokens and keys), the
    /// others forgotten at the next renewal.
    pub(crate) fn renewed(
        &self,
        session: &str,
        now_ms: u64,
        expiry: u64,
        revoked: &HashSet<String>,
    ) -> Vec<(Token, String)> {
        let mut registry = self.lock();
        let mut to_free = Vec::new();
        let mut forget = Vec::new();
        for hex in revoked {
            match Token::from_hex(hex).and_then(|t| registry.members.get(&t).map(|m| (t, m))) {
                Some((token, m)) if m.session == session => to_free.push((token, m.key.clone())),
                _ => forget.push(hex.clone()),
            }
        }
        if let Some(s) = registry.sessions.get_mut(session) {
            s.expiry = s.expiry.max(expiry);
            s.renewed_at = s.renewed_at.max(now_ms);
            s.prune.extend(forget);
        }
        to_free
    }

    /// `session`'s renewal found it ended: it is never renewed again, and its leases are
    /// forgotten (each is from now on what its own item says: an extension attaches it to
    /// another session only if its own term still holds it, a release frees it only then).
    pub(crate) fn ended(&self, session: &str) {
        let mut registry = self.lock();
        let Some(s) = registry.sessions.remove(session) else {
            return;
        };
        if registry.current.get(&s.ttl).map(String::as_str) == Some(session) {
            registry.current.remove(&s.ttl);
        }
        registry.members.retain(|_, m| m.session != session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(3);

    #[test]
    fn grants_join_a_session_only_while_half_a_lease_is_left() {
        let sessions = Sessions::default();
        assert_eq!(sessions.joinable(TTL, 1_000), None);
        sessions.opened("s1", TTL, 4_000);
        assert_eq!(sessions.joinable(TTL, 2_500).as_deref(), Some("s1"));
        assert_eq!(sessions.joinable(TTL, 2_501), None);
        assert_eq!(sessions.joinable(Duration::from_secs(1), 1_000), None);
        sessions.ended("s1");
        assert_eq!(sessions.joinable(TTL, 1_000), None);
    }

    #[test]
    fn plans_entries_by_session_and_answers_known_losses_locally() {
        let sessions = Sessions::default();
        sessions.opened("s1", TTL, 4_000);
        let (a, b, c, d) = (
            Token::random(),
            Token::random(),
            Token::random(),
            Token::random(),
        );
        sessions.join(a, "s1", "ka");
        sessions.join(b, "s1", "kb");
        sessions.join(c, "s1", "kc");
        sessions.release_failed(c);
        let plan = sessions.plan([a, b, c, d, a].into_iter());
        assert_eq!(plan.sessions.get("s1"), Some(&vec![0, 1, 4]));
        assert_eq!((plan.not_held, plan.alone), (vec![2], vec![3]));
        assert_eq!(
            sessions.pending("s1"),
            Pending::Revoke([c.to_hex()].into_iter().collect())
        );
        sessions.leave(b);
        assert_eq!(
            sessions.pending("s1"),
            Pending::Prune([b.to_hex()].into_iter().collect())
        );
        assert_eq!(sessions.pending("s1"), Pending::None);
    }

    #[test]
    fn a_renewal_returns_the_revoked_members_and_forgets_the_rest() {
        let sessions = Sessions::default();
        sessions.opened("s1", TTL, 4_000);
        let (a, gone) = (Token::random(), Token::random());
        sessions.join(a, "s1", "ka");
        let revoked: HashSet<String> = [a.to_hex(), gone.to_hex()].into_iter().collect();
        assert_eq!(sessions.beating(TTL, 5_000), None, "not renewed yet");
        assert_eq!(
            sessions.renewed("s1", 5_000, 7_000, &revoked),
            vec![(a, "ka".to_owned())]
        );
        assert_eq!(sessions.beating(TTL, 5_000).as_deref(), Some("s1"));
        assert_eq!(
            sessions.beating(TTL, 6_501),
            None,
            "no renewal for half a lease"
        );
        assert_eq!(sessions.known_expiry("s1"), 7_000);
        assert_eq!(
            sessions.pending("s1"),
            Pending::Prune([gone.to_hex()].into_iter().collect())
        );
        sessions.ended("s1");
        assert_eq!(sessions.known_expiry("s1"), 0);
        assert!(
            sessions.member(a).is_none(),
            "the leases of an ended session are forgotten"
        );
        assert_eq!(sessions.plan([a].into_iter()).alone, vec![0]);
    }
}
