//! Renewing many leases together: [`extend_many`](leasehold::LeaseStore::extend_many), the one
//! request a store that renews in batches answers for every lease a process holds, and the
//! elector's leases kept alive together (one heartbeat where the store can).

use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Acquisition, Extension, Release, Token};
use leasehold::{Lease, LeaseStore, LockName, LostReason};
use tokio::time::{Instant, sleep, timeout};

use super::support::{EARLY, SLACK, elected, ms, node, node_with, ok, options, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

#[track_caller]
fn granted(r: leasehold::store::StoreResult<Acquisition>, what: &str) -> Lease {
    match r {
        Ok(Acquisition::Elected(lease)) => lease,
        Ok(other) => panic!("{what}: expected a grant, got {other:?}"),
        Err(e) => panic!("{what}: expected a grant, got error: {e}"),
    }
}

async fn grant(store: &dyn LeaseStore, lock: &LockName, slots: u32, ttl: Duration) -> Lease {
    let req = AcquireRequest::new(lock.clone(), slots, "spi-session", Token::random(), ttl);
    granted(store.try_acquire(&req).await, "acquire")
}

/// The expiry the store reports for `lease`'s slot, if it is held live.
async fn expiry(store: &dyn LeaseStore, lease: &Lease) -> Option<SystemTime> {
    let state = ok(store.state(&lease.lock, lease.slot + 1).await, "state");
    state
        .holders
        .iter()
        .find(|h| h.slot == lease.slot)
        .map(|h| h.expires_at)
}

/// `extend_many` judges each entry alone, as `extend` would: live leases (single and group
/// slots, and a lease named twice) are extended; a released lease, an expired one, one forced
/// out by an operator and a forged token are not held, and the forged entry leaves the real
/// holder's expiry where it was. An empty batch answers nothing.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_extend_many_answers_each_lease(factory: &dyn StoreFactory) {
    let (store, operator) = (factory.make(), factory.make());
    let short = ms(300);
    let expired = grant(&*store, &unique_name("spi-many-expired"), 1, short).await;
    // Past the expiry the store granted (a store may round a short lease up: etcd to 2 s).
    let left = expired
        .expires_at
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    sleep(left + ms(500)).await;

    let lease = ms(20_000);
    let live = grant(&*store, &unique_name("spi-many-live"), 1, lease).await;
    let group = unique_name("spi-many-group");
    let slot0 = grant(&*store, &group, 2, lease).await;
    let slot1 = grant(&*store, &group, 2, lease).await;
    assert_eq!(
        (slot0.slot, slot1.slot),
        (0, 1),
        "a group grants slots 0 and 1"
    );
    let released = grant(&*store, &unique_name("spi-many-released"), 1, lease).await;
    assert_eq!(
        ok(store.release(&released, Duration::ZERO).await, "release"),
        Release::Released
    );
    let forced = grant(&*store, &unique_name("spi-many-forced"), 1, lease).await;
    ok(
        operator.force_release(&forced.lock, 1).await,
        "force_release",
    );
    let real = grant(&*store, &unique_name("spi-many-forged"), 1, lease).await;
    let real_expiry = expiry(&*store, &real).await;
    let forged = Lease {
        token: Token::random(),
        ..real.clone()
    };

    let longer = ms(60_000);
    let entries: Vec<(Lease, Duration)> = [
        &live, &slot0, &slot1, &released, &expired, &forced, &forged, &live,
    ]
    .into_iter()
    .map(|l| (l.clone(), longer))
    .collect();
    let answers = store.extend_many(&entries).await;
    assert_eq!(answers.len(), entries.len(), "one answer per entry");
    let names = [
        "live",
        "group slot 0",
        "group slot 1",
        "released",
        "expired",
        "forced out",
        "forged",
        "live again",
    ];
    for (i, (answer, name)) in answers.iter().zip(names).enumerate() {
        let answer = match answer {
            Ok(a) => a,
            Err(e) => panic!("extend_many: entry {i} ({name}) failed: {e}"),
        };
        let should_extend = matches!(i, 0..=2 | 7);
        match (answer, should_extend) {
            (Extension::Extended { expires_at }, true) => assert!(
                *expires_at > entries[i].0.expires_at + ms(20_000),
                "entry {i} ({name}): the new expiry {expires_at:?} must be about a minute out"
            ),
            (Extension::NotHeld, false) => {}
            (other, _) => panic!(
                "entry {i} ({name}): expected {}, got {other:?}",
                if should_extend { "Extended" } else { "NotHeld" }
            ),
        }
    }
    for held in [&live, &slot0, &slot1] {
        let at = expiry(&*store, held).await;
        assert!(
            at.is_some_and(|at| at > held.expires_at + ms(20_000)),
            "{} slot {}: the store must show the extended expiry, shows {at:?}",
            held.lock,
            held.slot
        );
    }
    for gone in [&released, &forced] {
        assert_eq!(
            expiry(&*store, gone).await,
            None,
            "{}: a freed lease extend_many refused must stay free",
            gone.lock
        );
    }
    // An expired lease may still be shown until the store's own grace for clock skew ends,
    // but never with a later expiry than it was granted.
    let shown = expiry(&*store, &expired).await;
    assert!(
        shown.is_none_or(|at| at <= expired.expires_at + ms(1_000)),
        "an expired lease extend_many refused must not be extended: shown until {shown:?}, granted until {:?}",
        expired.expires_at
    );
    assert_eq!(
        expiry(&*store, &real).await,
        real_expiry,
        "a forged token in a batch must not move the real holder's expiry"
    );
    assert!(
        store.extend_many(&[]).await.is_empty(),
        "an empty batch answers nothing"
    );
    for held in [&live, &slot0, &slot1, &real] {
        assert_eq!(
            ok(store.release(held, Duration::ZERO).await, "release"),
            Release::Released
        );
    }
}

/// One elector holding many leases with auto-extension (renewed together where the store
/// renews in batches) keeps every one of them through three lease lengths, while an operator
/// forces one out and the holder releases another: only the forced one is lost (told
/// `NotHeld` within a lease), the released one is free at once, and the rest stay held.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn many_leases_renew_together_and_lose_only_the_one_taken(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_millis(900);
    const LEASES: usize = 24;
    let holder = node_with(
        factory,
        options("conformance-session", Duration::ZERO, LEASE).auto_extend(true),
    );
    let names: Vec<LockName> = (0..LEASES)
        .map(|i| unique_name(&format!("session-{i}")))
        .collect();
    let mut guards = Vec::new();
    for name in &names {
        guards.push(elected(
            holder.try_acquire(name).await,
            "acquire one of many",
        ));
    }
    sleep(LEASE).await;
    let operator = factory.make();
    ok(
        operator.force_release(&names[0], 1).await,
        "force_release of one lease",
    );
    let released = guards.remove(1);
    assert_eq!(
        ok(released.release().await, "release of one lease"),
        Release::Released
    );
    let other = node(factory, "conformance-other", Duration::ZERO, ms(10_000));
    let taken = elected(
        other.try_acquire(&names[1]).await,
        "a lock its holder released, at once",
    );
    let forced = guards.remove(0);
    match timeout(LEASE * 2, forced.lost()).await {
        Ok(reason) => assert_eq!(reason, LostReason::NotHeld, "the forced-out lease"),
        Err(_) => panic!("a lease forced out must be lost by its next renewal"),
    }
    sleep(LEASE * 2).await;
    for (guard, name) in guards.iter().zip(&names[2..]) {
        assert!(
            !guard.is_lost(),
            "{name}: a lease renewed with the others must not be lost"
        );
        skipped(
            other.try_acquire(name).await,
            "another node while the many leases are renewed",
        );
    }
    ok(taken.release().await, "release");
    for guard in guards {
        assert_eq!(ok(guard.release().await, "release"), Release::Released);
    }
}

/// A node that restarts with the same node id does not inherit its old leases: the new
/// process is refused while the old leases live (nothing renews them), and is granted each of
/// them, with a higher fence, once they expire.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn restart_with_the_same_node_id_waits_out_old_leases(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_millis(900);
    let names: Vec<LockName> = (0..4)
        .map(|i| unique_name(&format!("restart-{i}")))
        .collect();
    let before = node(factory, "conformance-restart", Duration::ZERO, LEASE);
    let mut fences = Vec::new();
    for name in &names {
        let guard = elected(before.try_acquire(name).await, "acquire before the crash");
        fences.push(guard.fence());
        // A crash: the process is gone without releasing (no renewal either: auto-extend is
        // off in the suite's options).
        std::mem::forget(guard);
    }
    let after = node(factory, "conformance-restart", Duration::ZERO, LEASE);
    for name in &names {
        skipped(
            after.try_acquire(name).await,
            "the restarted node while its old leases live",
        );
    }
    sleep(LEASE + SLACK).await;
    for (name, fence) in names.iter().zip(fences) {
        let guard = elected(
            after.try_acquire(name).await,
            "the restarted node after the old leases expired",
        );
        assert!(guard.fence() > fence, "{name}: the fence must rise");
        assert_eq!(ok(guard.release().await, "release"), Release::Released);
    }
}

/// A process that stops renewing while it holds many leases — 16 locks and the 8 slots of a
/// group, all granted to one store client — loses them no earlier than each lease says: just
/// before the leases could end, another client is refused every one of them; after their
/// expiry it is granted every one (with a higher fence); and the old holder's `extend_many`,
/// sent when half of them are taken and half only expired, answers `NotHeld` for each without
/// reviving any.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn a_session_lost_frees_every_lease_no_earlier_than_its_lease(
    factory: &dyn StoreFactory,
) {
    /// Long enough that 24 grants on a slow server fit well before the check.
    const LEASE: Duration = Duration::from_secs(6);
    /// How long before the earliest possible expiry the other client checks.
    const CHECK_BEFORE: Duration = Duration::from_secs(2);
    const LOCKS: usize = 16;
    const GROUP: u32 = 8;
    let (holder, other) = (factory.make(), factory.make());
    let request = |lock: &LockName, slots: u32, owner: &str| {
        AcquireRequest::new(lock.clone(), slots, owner, Token::random(), LEASE)
    };
    let started = Instant::now();
    // Each lease with the local instant its request was sent: the store counts the lease from
    // later than that, so it cannot end before that instant plus the lease.
    let mut held: Vec<(Lease, Instant, u32)> = Vec::new();
    for i in 0..LOCKS {
        let lock = unique_name(&format!("lost-session-{i}"));
        let sent = Instant::now();
        let lease = granted(
            holder
                .try_acquire(&request(&lock, 1, "conformance-lost"))
                .await,
            "one of many leases of one client",
        );
        held.push((lease, sent, 1));
    }
    let group = unique_name("lost-session-group");
    for _ in 0..GROUP {
        let sent = Instant::now();
        let lease = granted(
            holder
                .try_acquire(&request(&group, GROUP, "conformance-lost"))
                .await,
            "a slot of the group",
        );
        held.push((lease, sent, GROUP));
    }
    let mut slots: Vec<u32> = held[LOCKS..].iter().map(|(l, ..)| l.slot).collect();
    slots.sort_unstable();
    assert_eq!(
        slots,
        (0..GROUP).collect::<Vec<_>>(),
        "the group's slots are granted once each"
    );

    // Nothing renews them now. Just before the first could end, every one is still held.
    tokio::time::sleep_until(started + LEASE - CHECK_BEFORE).await;
    for (lease, sent, slots) in held.iter().filter(|(l, ..)| l.slot == 0) {
        let asked = Instant::now();
        assert!(
            asked + EARLY < *sent + LEASE,
            "{}: the machine was too slow to ask before the lease could end (asked {:?} after \
             the grant was sent, the lease is {LEASE:?})",
            lease.lock,
            asked - *sent
        );
        match ok(
            other
                .try_acquire(&request(&lease.lock, *slots, "conformance-other"))
                .await,
            "another client before the expiry",
        ) {
            Acquisition::Taken(_) => {}
            unexpected => panic!(
                "{}: another client got {unexpected:?} {:?} after the grant was sent; \
                 the lease is {LEASE:?}",
                lease.lock,
                asked - *sent
            ),
        }
    }

    // Past the latest expiry the store granted (a store may round a lease up: etcd to whole
    // seconds), and some slack for a store that frees an expired lease a little late.
    let latest = held
        .iter()
        .map(|(l, ..)| l.expires_at)
        .max()
        .unwrap_or_else(SystemTime::now);
    sleep(latest.duration_since(SystemTime::now()).unwrap_or_default() + SLACK).await;
    let (first, second): (Vec<_>, Vec<_>) = held.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let mut taken = Vec::new();
    take_over(&*other, &first, &held, &mut taken).await;
    let entries: Vec<(Lease, Duration)> = held.iter().map(|(l, ..)| (l.clone(), LEASE)).collect();
    let answers = holder.extend_many(&entries).await;
    assert_eq!(answers.len(), entries.len(), "one answer per lease");
    for ((lease, ..), answer) in held.iter().zip(&answers) {
        match answer {
            Ok(Extension::NotHeld) => {}
            other => panic!(
                "{} slot {}: the old holder's extend_many after the expiry must answer NotHeld, \
                 got {other:?}",
                lease.lock, lease.slot
            ),
        }
    }
    // Not revived: the rest are free to another client too.
    take_over(&*other, &second, &held, &mut taken).await;
    assert_eq!(taken.len(), held.len(), "every lease was taken over");
    for lease in &taken {
        assert_eq!(
            ok(other.release(lease, Duration::ZERO).await, "release"),
            Release::Released
        );
    }
}

/// Another client's grants of the leases in `part` (each with its lock's slot count), each with
/// a fence above the lost lease's of the same slot in `held`.
async fn take_over(
    other: &dyn LeaseStore,
    part: &[(usize, &(Lease, Instant, u32))],
    held: &[(Lease, Instant, u32)],
    taken: &mut Vec<Lease>,
) {
    for (_, (old, _, slots)) in part {
        let req = AcquireRequest::new(
            old.lock.clone(),
            *slots,
            "conformance-other",
            Token::random(),
            Duration::from_secs(10),
        );
        let lease = granted(
            other.try_acquire(&req).await,
            "another client after the lease expired",
        );
        // A group grants the lowest free slot, not necessarily the old lease's: compare with
        // the lost lease of the slot granted.
        let before = held
            .iter()
            .find(|(l, ..)| l.lock == lease.lock && l.slot == lease.slot)
            .map(|(l, ..)| l.fence);
        assert!(
            before.is_some_and(|f| lease.fence > f),
            "{} slot {}: the fence must rise past the lost lease's ({before:?}), is {}",
            lease.lock,
            lease.slot,
            lease.fence
        );
        taken.push(lease);
    }
}
