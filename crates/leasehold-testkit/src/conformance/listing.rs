//! Lock names with `.` and `/`, every holder of a lock, and listing the locks with holders:
//! `LeaseStore::holders` and `LeaseStore::list_locks`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, ListCursor, MAX_LIST_LOCKS, StoreResult};
use leasehold::{
    Holder, Lease, LeaseStore, LockName, Period, Tenant,
    store::{Release, Token},
};
use tokio::time::{Instant, sleep};

use super::support::{SLACK, ms, ok, valid};
use crate::factory::StoreFactory;
use crate::names::{random_hex, unique_name};

/// The most pages a listing test follows before it calls the listing endless.
const MAX_PAGES: usize = 100_000;

fn name(text: &str) -> LockName {
    valid(LockName::new(text), "lock name")
}

fn request(lock: &LockName, slots: u32, owner: &str, lease: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, owner, Token::random(), lease)
}

/// The lease of an answer that must be a grant.
#[track_caller]
fn granted(answer: StoreResult<Acquisition>, what: &str) -> Lease {
    match ok(answer, what) {
        Acquisition::Elected(lease) => lease,
        other => panic!("{what}: expected a grant, got {other:?}"),
    }
}

/// `(slot, owner, fence)` of holders, sorted.
fn seen(holders: &[Holder]) -> Vec<(u32, String, u64)> {
    let mut v: Vec<_> = holders
        .iter()
        .map(|h| (h.slot, h.owner.clone(), h.fence))
        .collect();
    v.sort_unstable();
    v
}

/// `(slot, owner, fence)` of leases, sorted.
fn of<'a>(leases: impl IntoIterator<Item = &'a Lease>) -> Vec<(u32, String, u64)> {
    let mut v: Vec<_> = leases
        .into_iter()
        .map(|l| (l.slot, l.owner.clone(), l.fence))
        .collect();
    v.sort_unstable();
    v
}

/// Every page of the store's listing, merged by name (a lock may come in several pages), with
/// each page checked against [`MAX_LIST_LOCKS`]; also the number of pages.
async fn list_all(store: &dyn LeaseStore) -> (BTreeMap<LockName, Vec<Holder>>, usize) {
    let mut all: BTreeMap<LockName, Vec<Holder>> = BTreeMap::new();
    let mut after: Option<ListCursor> = None;
    for pages in 1..=MAX_PAGES {
        let page = ok(store.list_locks(after.as_ref()).await, "list_locks");
        assert!(
            page.locks.len() <= MAX_LIST_LOCKS,
            "a page holds at most MAX_LIST_LOCKS ({MAX_LIST_LOCKS}) locks, got {}",
            page.locks.len()
        );
        for listed in page.locks {
            assert!(
                !listed.holders.is_empty(),
                "a listed lock has holders: {}",
                listed.lock
            );
            let holders = all.entry(listed.lock).or_default();
            for h in listed.holders {
                if !holders
                    .iter()
                    .any(|x| x.slot == h.slot && x.fence == h.fence)
                {
                    holders.push(h);
                }
            }
        }
        match page.next {
            None => return (all, pages),
            Some(next) => {
                assert_ne!(
                    after.as_ref(),
                    Some(&next),
                    "a page's cursor must move the listing on"
                );
                after = Some(next);
            }
        }
    }
    panic!("list_locks did not end within {MAX_PAGES} pages");
}

/// Locks whose names differ only by `/`, `.` or `:` — `x`, `x/b`, `x.b`, `x:1`, `x/ledger`, and
/// a tenant's `x` and `x/b` — are independent: all are held at once by different owners, each
/// `state` and [`holders`](LeaseStore::holders) shows only its own holders (`x` is a group of
/// two, found by `holders` without its slot count), each release frees only its own lock, and
/// the period ledger of a once-per-period lock `x.p` is not touched by `x.p/ledger`.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn names_with_dots_and_slashes_are_independent(factory: &dyn StoreFactory) {
    let store: Arc<dyn LeaseStore> = factory.make();
    let base = unique_name("names");
    let tenant = valid(Tenant::new(format!("t{}", random_hex())), "tenant");
    let others: Vec<LockName> = vec![
        name(&format!("{base}/b")),
        name(&format!("{base}.b")),
        name(&format!("{base}:1")),
        name(&format!("{base}/ledger")),
        name(&format!("{base}/b/c")),
        valid(tenant.scope(base.as_str()), "tenant name"),
        valid(tenant.scope(&format!("{base}/b")), "tenant name"),
    ];
    let lease = ms(30_000);
    // `base` is a group of two; every other name has one holder.
    let mut group = Vec::new();
    for owner in ["names-base-0", "names-base-1"] {
        group.push(granted(
            store.try_acquire(&request(&base, 2, owner, lease)).await,
            "acquire a slot of the base group",
        ));
    }
    let mut singles = Vec::new();
    for (i, lock) in others.iter().enumerate() {
        singles.push(granted(
            store
                .try_acquire(&request(lock, 1, &format!("names-{i}"), lease))
                .await,
            &format!("acquire {lock} while the others are held"),
        ));
    }
    let state = ok(store.state(&base, 2).await, "state of the base group");
    assert_eq!(
        seen(&state.holders),
        of(&group),
        "the state of {base} shows its own two holders and no other lock's"
    );
    assert_eq!(
        seen(&ok(store.holders(&base).await, "holders of the base group")),
        of(&group),
        "holders() of {base} finds both slots without the slot count, and no other lock's"
    );
    for (lock, lease) in others.iter().zip(&singles) {
        let state = ok(store.state(lock, 1).await, "state");
        assert_eq!(
            seen(&state.holders),
            of([lease]),
            "the state of {lock} shows only its own holder"
        );
        assert_eq!(
            seen(&ok(store.holders(lock).await, "holders")),
            of([lease]),
            "holders() of {lock} shows only its own holder"
        );
    }
    // Release one at a time: only that lock becomes free.
    for (i, lease) in singles.iter().enumerate() {
        assert_eq!(
            ok(store.release(lease, Duration::ZERO).await, "release"),
            Release::Released,
            "{} releases",
            lease.lock
        );
        assert!(
            ok(store.holders(&lease.lock).await, "holders after release").is_empty(),
            "{} is free after its release",
            lease.lock
        );
        for later in &singles[i + 1..] {
            assert_eq!(
                seen(&ok(store.holders(&later.lock).await, "holders")),
                of([later]),
                "releasing {} must leave {} held",
                lease.lock,
                later.lock
            );
        }
        assert_eq!(
            seen(&ok(store.holders(&base).await, "holders of the base group")),
            of(&group),
            "releasing {} must leave {base} held",
            lease.lock
        );
    }
    for lease in &group {
        assert_eq!(
            ok(store.release(lease, Duration::ZERO).await, "release"),
            Release::Released
        );
    }
    assert!(ok(store.holders(&base).await, "holders").is_empty());

    // The period ledger of `p` and a lock named `p/ledger` are different records.
    let p = name(&format!("{base}.p"));
    let p_ledger = name(&format!("{p}/ledger"));
    let period = valid(Period::every(Duration::from_secs(600)), "period");
    let claim = |owner: &str| request(&p, 1, owner, lease).with_period(period);
    let ran = granted(store.try_acquire(&claim("names-p")).await, "period claim");
    assert_eq!(
        ok(store.start_period(&ran).await, "start"),
        leasehold::store::PeriodStart::Started
    );
    ok(store.release(&ran, Duration::ZERO).await, "release");
    let other = granted(
        store
            .try_acquire(&request(&p_ledger, 1, "names-pl", lease))
            .await,
        &format!("{p_ledger} is free whatever the ledger of {p} records"),
    );
    assert!(
        ok(store.try_acquire(&claim("names-p2")).await, "second claim")
            .already_ran()
            .is_some(),
        "the ledger of {p} still refuses its period while {p_ledger} is held"
    );
    ok(store.release(&other, Duration::ZERO).await, "release");
}

/// [`list_locks`](LeaseStore::list_locks) lists every lock with live holders (names with `/`,
/// `.` and `:` too, a group with every holder, each with its owner, fence and expiry) and no
/// released or expired lease; pages hold at most [`MAX_LIST_LOCKS`] locks and their cursors
/// lead to the end. More than a page of locks is held meanwhile, so a listing of the store has
/// more than one page.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_lists_locks_with_holders(factory: &dyn StoreFactory) {
    let store: Arc<dyn LeaseStore> = factory.make();
    let base = unique_name("list");
    let lease = ms(60_000);
    let single = name(&format!("{base}/single"));
    let dotted = name(&format!("{base}.dotted:1"));
    let group = name(&format!("{base}/group"));
    let released = name(&format!("{base}/released"));
    let expired = name(&format!("{base}/expired"));

    let single_lease = granted(
        store
            .try_acquire(&request(&single, 1, "list-a", lease))
            .await,
        "acquire",
    );
    let dotted_lease = granted(
        store
            .try_acquire(&request(&dotted, 1, "list-b", lease))
            .await,
        "acquire",
    );
    let mut group_leases = Vec::new();
    for owner in ["list-g0", "list-g1"] {
        group_leases.push(granted(
            store.try_acquire(&request(&group, 3, owner, lease)).await,
            "acquire a group slot",
        ));
    }
    let gone = granted(
        store
            .try_acquire(&request(&released, 1, "list-r", lease))
            .await,
        "acquire",
    );
    ok(store.release(&gone, Duration::ZERO).await, "release");
    granted(
        store
            .try_acquire(&request(&expired, 1, "list-e", ms(300)))
            .await,
        "acquire a short lease",
    );
    // More than a page of held locks, so the listing runs over several pages.
    let mut filler = Vec::new();
    for i in 0..=MAX_LIST_LOCKS {
        let lock = name(&format!("{base}/n{i}"));
        filler.push(granted(
            store.try_acquire(&request(&lock, 1, "list-n", lease)).await,
            "acquire a filler lock",
        ));
    }
    // Wait until the short lease is over for the store (as `state` sees it).
    let deadline = Instant::now() + ms(300) + SLACK * 4;
    while !ok(store.state(&expired, 1).await, "state").is_free() {
        assert!(
            Instant::now() < deadline,
            "a 300 ms lease must end within {:?}",
            SLACK * 4
        );
        sleep(ms(50)).await;
    }

    let (all, pages) = list_all(store.as_ref()).await;
    assert!(
        pages > 1,
        "more than MAX_LIST_LOCKS held locks must take more than one page"
    );
    let expect = |lock: &LockName, leases: &[&Lease]| {
        let listed = all
            .get(lock)
            .unwrap_or_else(|| panic!("{lock} is held and must be listed"));
        assert_eq!(
            seen(listed),
            of(leases.iter().copied()),
            "{lock} must be listed with its holders"
        );
        for l in leases {
            let h = listed.iter().find(|h| h.slot == l.slot);
            assert_eq!(
                h.map(|h| h.expires_at),
                Some(l.expires_at),
                "{lock}: the listed expiry of slot {} is the lease's",
                l.slot
            );
        }
    };
    expect(&single, &[&single_lease]);
    expect(&dotted, &[&dotted_lease]);
    let group_refs: Vec<&Lease> = group_leases.iter().collect();
    expect(&group, &group_refs);
    for lease in &filler {
        expect(&lease.lock, &[lease]);
    }
    assert!(
        !all.contains_key(&released),
        "a released lock must not be listed"
    );
    assert!(
        !all.contains_key(&expired),
        "an expired lease must not be listed"
    );

    for lease in filler
        .iter()
        .chain([&single_lease, &dotted_lease])
        .chain(&group_leases)
    {
        ok(store.release(lease, Duration::ZERO).await, "release");
    }
    let (after, _) = list_all(store.as_ref()).await;
    assert!(
        !after.keys().any(|l| l.as_str().starts_with(base.as_str())),
        "released locks must not be listed"
    );
}
