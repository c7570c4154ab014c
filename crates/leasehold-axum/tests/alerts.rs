//! The alerting rules of the manual (`docs/leasehold.md`, "Alerts"; this crate's page, "Job
//! metrics"), each parsed as PromQL and evaluated over real scrapes of a leader and a follower
//! (`support/prom.rs`): which rule fires, for which process, while healthy, with a slow store,
//! with renewals failing, after the loss. `for:` durations aside, a rule fires when its
//! expression has a result. `example_alerts.rs` does the same with two processes of the
//! example.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

#[path = "support/prom.rs"]
mod prom;

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, MemoryStore};
use leasehold_axum::PrometheusMetrics;
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use metrics::Recorder;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use prom::Tsdb;

/// The lock of the manual's rules about leaders (`LeaseholdNoLeader`, `LeaseholdTwoLeaders`), the
/// example's `LeaderOnly` lock.
const LOCK: &str = "api-writer";

fn manual(page: &str) -> String {
    let path = format!("{}/../../docs/{page}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every rule of the core's page and of this crate's, by name.
fn rules() -> Vec<(String, String)> {
    let mut rules = prom::alerts(&manual("leasehold.md"));
    let names: BTreeSet<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "LeaseholdLeaseLost",
        "LeaseholdRenewalFailing",
        "LeaseholdRenewalMarginLow",
        "LeaseholdNoLeader",
        "LeaseholdTwoLeaders",
        "LeaseholdStoreErrors",
        "LeaseholdActionFailures",
        "LeaseholdStoreClockOffset",
    ] {
        assert!(
            names.contains(expected),
            "docs/leasehold.md lacks {expected}"
        );
    }
    rules.extend(prom::alerts(&manual("leasehold-axum.md")));
    rules
}

/// A process's own recorder, rendering as leasehold-axum's `/metrics` does.
struct Process {
    recorder: PrometheusRecorder,
    name: &'static str,
}

impl Process {
    fn new(name: &'static str) -> Self {
        let builder = PrometheusMetrics::configure(PrometheusBuilder::new()).unwrap();
        Self {
            recorder: builder.build_recorder(),
            name,
        }
    }

    /// Scrapes it into `db` at `at`; returns the checked scrape.
    fn scrape(&self, db: &mut Tsdb, at: f64) -> prom::Exposition {
        let text = PrometheusMetrics::from_handle(self.recorder.handle()).render();
        let exp = prom::check(&text);
        db.ingest(at, &exp, &[("instance", self.name), ("job", "app")]);
        exp
    }
}

/// `fut`, polled with `recorder` as the metrics recorder: a second process in this one, as long as
/// all it records is recorded while it is polled (a follower that never holds a lease starts no
/// task of its own).
struct Recorded<'r, F> {
    recorder: &'r dyn Recorder,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for Recorded<'_, F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let recorder = self.recorder;
        metrics::with_local_recorder(recorder, || self.fut.as_mut().poll(cx))
    }
}

fn recorded<F: Future>(recorder: &dyn Recorder, fut: F) -> Recorded<'_, F> {
    Recorded {
        recorder,
        fut: Box::pin(fut),
    }
}

fn elector(store: Arc<dyn LeaseStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .auto_extend(true) // and the default 15 s lease: a healthy margin of about 8.5 s
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

/// On a store that renews each lease alone: a lease renews a period after its last answer, so a
/// slow answer delays the next renewal too, and the margin shrinks by twice the delay.
#[test]
fn the_documented_alerts_fire_for_a_slow_failing_or_lost_leader_and_never_for_a_follower() {
    documented_alerts(Renewals::EachAlone);
}

/// On a store that renews in batches (every store leasehold ships): renewals fall on the beat
/// whatever the answers' delay, so the margin shrinks by the delay alone and never comes below
/// about a quarter of the lease before the lease is lost; the documented threshold (a third of
/// the lease) still fires first.
#[test]
fn the_margin_alert_fires_on_the_beat_of_a_store_that_renews_in_batches() {
    documented_alerts(Renewals::OnTheBeat);
}

#[derive(Clone, Copy, PartialEq)]
enum Renewals {
    EachAlone,
    OnTheBeat,
}

fn documented_alerts(renewals: Renewals) {
    let rules = rules();
    let leader_process = Process::new("leader");
    let follower_process = Process::new("follower");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&leader_process.recorder, || {
        rt.block_on(async {
            let t0 = tokio::time::Instant::now();
            let now = || t0.elapsed().as_secs_f64();
            let mut db = Tsdb::new();
            let memory = Arc::new(MemoryStore::new());
            let (store, faults) = match renewals {
                Renewals::EachAlone => FaultyStore::new(memory),
                Renewals::OnTheBeat => FaultyStore::passing_batches(memory),
            };
            assert_eq!(store.renews_in_batches(), renewals == Renewals::OnTheBeat);
            let leader = elector(store.clone(), "leader");
            let follower = elector(store, "follower");
            // The follower tries once per scrape interval and never gets the lock.
            let follower_tries = || recorded(&follower_process.recorder, follower.try_acquire(LOCK));
            let scrape_both = |db: &mut Tsdb, at: f64| {
                (
                    leader_process.scrape(db, at),
                    follower_process.scrape(db, at),
                )
            };
            // Runs `n` scrape intervals of 15 s: the follower tries, both are scraped.
            macro_rules! intervals {
                ($db:expr, $n:expr) => {
                    for _ in 0..$n {
                        tokio::time::sleep(Duration::from_secs(15)).await;
                        assert!(follower_tries().await.unwrap().is_taken());
                        scrape_both(&mut $db, now());
                    }
                };
            }

            let guard = leader.try_acquire(LOCK).await.unwrap().elected().expect("free");
            assert!(follower_tries().await.unwrap().is_taken());
            scrape_both(&mut db, now());
            intervals!(db, 2);

            // Healthy: nothing fires. The follower exports no margin at all; the leader a
            // histogram of healthy margins, which the manual's dashboard query reads.
            assert_eq!(db.rules_firing(&rules, now()), prom::pairs(&[]), "healthy");
            let (leader_scrape, follower_scrape) = scrape_both(&mut db, now() + 0.001);
            assert!(
                !follower_scrape
                    .families
                    .contains_key("leasehold_renewal_margin_seconds"),
                "{:?}",
                follower_scrape.families.keys()
            );
            assert_eq!(
                follower_scrape.value("leader_election_master_status", &[("name", LOCK)]),
                Some(0.0)
            );
            let count = leader_scrape
                .value("leasehold_renewal_margin_seconds_count", &[("lock", LOCK)])
                .expect("the leader renewed");
            assert!(count >= 5.0, "renewals every 5 s: {count}");
            let quantile = "histogram_quantile(0.05, sum by (lock, le) (rate(leasehold_renewal_margin_seconds_bucket[15m])))";
            assert!(
                manual("leasehold.md").contains(quantile),
                "the manual's dashboard query"
            );
            let q = db.eval(quantile, now());
            assert_eq!(q.len(), 1, "one lock, over both processes: {q:?}");
            assert!((7.5..=10.0).contains(&q[0].1), "about 8.5 s left: {q:?}");

            // A slow store: renewals answered late still succeed (no RenewalFailing: the answer
            // comes within the 5 s period), but with under a third of the lease left. Each alone,
            // 3.5 s late leaves 1.5 s (13.5 s of deadline − 5 s to the next renewal − twice the
            // delay); on the beat, 4 s late leaves 4.5 s (13.5 − 5 − 4).
            let late = match renewals {
                Renewals::EachAlone => Duration::from_millis(3500),
                Renewals::OnTheBeat => Duration::from_millis(4000),
            };
            faults.delay_answer(Op::Extend, late);
            intervals!(db, 2);
            assert_eq!(
                db.rules_firing(&rules, now()),
                prom::pairs(&[("LeaseholdRenewalMarginLow", "leader")]),
                "slow store"
            );
            assert!(!guard.is_lost());

            // Renewals failing: at risk while the lease still holds, then lost at its deadline.
            faults.heal(Op::Extend);
            faults.fail(Op::Extend, Fault::transient());
            tokio::time::sleep(Duration::from_secs(7)).await;
            assert!(!guard.is_lost(), "the lease still holds");
            assert!(follower_tries().await.unwrap().is_taken());
            scrape_both(&mut db, now());
            assert_eq!(
                db.rules_firing(&rules, now()),
                prom::pairs(&[
                    ("LeaseholdRenewalMarginLow", "leader"),
                    ("LeaseholdRenewalFailing", "leader")
                ]),
                "renewals failing"
            );
            guard.lost().await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            scrape_both(&mut db, now());
            // Lost: nobody leads now (the store has yet to expire the lease for the follower).
            assert_eq!(
                db.rules_firing(&rules, now()),
                prom::pairs(&[
                    ("LeaseholdRenewalMarginLow", "leader"),
                    ("LeaseholdLeaseLost", "leader"),
                    ("LeaseholdNoLeader", ""),
                ]),
                "lost"
            );
            guard.release().await.unwrap();

            // The store failing the follower's election; the leader's next action failing.
            faults.heal_all();
            faults.fail(Op::TryAcquire, Fault::transient());
            assert!(follower_tries().await.is_err());
            faults.heal_all();
            let failed = leader
                .run(LOCK, |_| async { Err::<(), _>("no") })
                .await
                .unwrap();
            assert!(!failed.is_taken());
            scrape_both(&mut db, now() + 0.001);
            let fired = db.rules_firing(&rules, now() + 0.001);
            for expected in [
                ("LeaseholdStoreErrors", "follower"),
                ("LeaseholdActionFailures", "leader"),
            ] {
                assert!(
                    fired.contains(&(expected.0.to_owned(), expected.1.to_owned())),
                    "{expected:?} in {fired:?}"
                );
            }
            // Never: two leaders, a clock offset (the memory store has no clock of its own), or
            // anything at all for the follower but the store's failure.
            for (alert, instance) in &fired {
                assert!(alert != "LeaseholdTwoLeaders" && alert != "LeaseholdStoreClockOffset");
                assert!(
                    instance != "follower" || alert == "LeaseholdStoreErrors",
                    "{alert} for the follower"
                );
            }
            leader.settled().await;
        });
    });
}
