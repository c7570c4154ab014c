//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use crate::backend::Backend;
use crate::scenario::{Config, Scenario};

pub(crate) const USAGE: &str = "usage: leasehold-bench [--backend LIST|all] [--scenario LIST|all] [--quick]
                       [--seconds N] [--handoffs N] [--failovers N] [--rounds N] [--fence-rounds N] [--url URL]
                       [--json FILE] [--markdown FILE] [--svg FILE] [--out DIR] [--readme FILE]

  --backend    memory, sqlite, postgres, mysql, redis, dynamodb, etcd, nats, a comma-separated list, or all (default)
  --scenario   uncontended, contended, fairness, many-locks, server-cpu (Redis), group, handoff, failover,
               auto-extend, hold-many, idle-followers, partition, safety, a comma-separated list, or all
               (default)
  --quick      a smoke run: --seconds 1 --handoffs 10 --failovers 2 --rounds 200 --fence-rounds 300 unless given;
               hold-many and idle-followers with fewer leases and followers and a 3 s window; partition
               with 256 shards over 2 and 4 members
  --seconds    measuring time of each throughput scenario, shared by its sides (default 4)
  --handoffs   hand-offs measured per side (default 40)
  --failovers  holders killed in the failover scenario (default 4)
  --rounds     safety rounds per contender (8 contenders; default 2000)
  --fence-rounds  paused-stale-holder rounds per fenced sink and backend (default 10000)
  --url        store URL, with one backend only (default: a temp SQLite file,
               $LEASEHOLD_TEST_POSTGRES_URL, $LEASEHOLD_TEST_MYSQL_URL, $LEASEHOLD_TEST_REDIS_URL or
               redis://127.0.0.1:6379, dynamodb://leasehold_bench_leases?endpoint=$LEASEHOLD_TEST_DYNAMODB_ENDPOINT&create_table=true,
               etcd://$LEASEHOLD_TEST_ETCD_ENDPOINTS, $LEASEHOLD_TEST_NATS_URL)
  --json, --markdown, --svg   write the report in that form to FILE
  --out        write DIR/benchmarks.json, DIR/benchmarks.md and DIR/benchmarks.svg
  --readme     rewrite the paragraph of figures between the bench-summary markers of FILE
  With no output option the markdown goes to stdout. The exit status is 1 when a safety run
  fails or a backend could not be measured, 2 on bad arguments.";

/// What to run.
pub(crate) struct Args {
    pub(crate) backends: Vec<Backend>,
    pub(crate) url: Option<String>,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) safety: bool,
    pub(crate) config: Config,
    pub(crate) rounds: usize,
    /// Paused-stale-holder rounds per fenced sink.
    pub(crate) fence_rounds: usize,
    pub(crate) json: Option<PathBuf>,
    pub(crate) markdown: Option<PathBuf>,
    pub(crate) svg: Option<PathBuf>,
    /// A document whose bench-summary block gets this run's figures (the README).
    pub(crate) readme: Option<PathBuf>,
    /// The child side of the failover scenario: hold this lock until killed.
    pub(crate) hold: Option<Hold>,
    /// The child side of the fairness scenario: contend for this lock.
    pub(crate) contend: Option<Contend>,
}

/// `--contend LOCK --tasks N --seconds S` (internal: one process of the fairness scenario).
pub(crate) struct Contend {
    pub(crate) lock: String,
    pub(crate) tasks: usize,
}

/// `--hold LOCK --lease-ms N` (internal: the failover scenario's child holder).
pub(crate) struct Hold {
    pub(crate) lock: String,
    pub(crate) lease: Duration,
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
}

fn list<T>(
    text: &str,
    all: &[T],
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String>
where
    T: Copy,
{
    if text == "all" {
        return Ok(all.to_vec());
    }
    text.split(',').map(|s| parse(s.trim())).collect()
}

impl Args {
    pub(crate) fn parse(mut argv: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut backends = Backend::ALL.to_vec();
        let (mut scenarios, mut safety) = (Scenario::ALL.to_vec(), true);
        let (mut url, mut quick, mut seconds) = (None, false, None::<f64>);
        let (mut handoffs, mut failovers, mut rounds) = (None, None, None);
        let mut fence_rounds = None;
        let (mut json, mut markdown, mut svg, mut out) = (None, None, None, None::<PathBuf>);
        let mut readme = None;
        let (mut hold, mut lease_ms) = (None, 1000u64);
        let (mut contend, mut tasks) = (None, 1usize);
        while let Some(flag) = argv.next() {
            let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--backend" => backends = list(&value()?, &Backend::ALL, Backend::parse)?,
                "--scenario" => {
                    let text = value()?;
                    let names: Vec<&str> = text.split(',').map(str::trim).collect();
                    safety = text == "all" || names.contains(&"safety");
                    scenarios = if text == "all" {
                        Scenario::ALL.to_vec()
                    } else {
                        names
                            .iter()
                            .filter(|n| **n != "safety")
                            .map(|n| {
                                Scenario::parse(n).ok_or_else(|| {
                                    format!("unknown scenario {n:?}: expected uncontended, contended, fairness, many-locks, server-cpu, group, handoff, failover, auto-extend, hold-many, idle-followers, partition, safety or all")
                                })
                            })
                            .collect::<Result<_, _>>()?
                    };
                }
                "--quick" => quick = true,
                "--seconds" => {
                    let s: f64 = value()?
                        .parse()
                        .map_err(|_| "--seconds takes a number".to_owned())?;
                    if !s.is_finite() || s <= 0.0 {
                        return Err("--seconds must be positive".into());
                    }
                    seconds = Some(s);
                }
                "--handoffs" => handoffs = Some(number(&flag, &value()?)?),
                "--failovers" => failovers = Some(number(&flag, &value()?)?),
                "--rounds" => rounds = Some(number(&flag, &value()?)?),
                "--fence-rounds" => fence_rounds = Some(number(&flag, &value()?)?),
                "--url" => url = Some(value()?),
                "--json" => json = Some(PathBuf::from(value()?)),
                "--markdown" => markdown = Some(PathBuf::from(value()?)),
                "--svg" => svg = Some(PathBuf::from(value()?)),
                "--readme" => readme = Some(PathBuf::from(value()?)),
                "--out" => out = Some(PathBuf::from(value()?)),
                "--hold" => hold = Some(value()?),
                "--lease-ms" => lease_ms = number(&flag, &value()?)?,
                "--contend" => contend = Some(value()?),
                "--tasks" => tasks = number(&flag, &value()?)?,
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if url.is_some() && backends.len() != 1 {
            return Err("--url needs exactly one --backend".into());
        }
        if let Some(dir) = out {
            json.get_or_insert(dir.join("benchmarks.json"));
            markdown.get_or_insert(dir.join("benchmarks.md"));
            svg.get_or_insert(dir.join("benchmarks.svg"));
        }
        let rounds = rounds.unwrap_or(if quick { 200 } else { 2000 });
        if rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        let fence_rounds = fence_rounds.unwrap_or(if quick { 300 } else { 10_000 });
        if fence_rounds == 0 {
            return Err("--fence-rounds must be at least 1".into());
        }
        Ok(Self {
            hold: hold.map(|lock| Hold {
                lock,
                lease: Duration::from_millis(lease_ms),
            }),
            contend: contend.map(|lock| Contend { lock, tasks }),
            backends,
            url,
            scenarios,
            safety,
            config: Config {
                seconds: seconds.unwrap_or(if quick { 1.0 } else { 4.0 }),
                handoffs: handoffs.unwrap_or(if quick { 10 } else { 40 }).max(1),
                failovers: failovers.unwrap_or(if quick { 2 } else { 4 }).max(1),
                quick,
            },
            rounds,
            fence_rounds,
            json,
            markdown,
            svg,
            readme,
        })
    }

    /// The flags that size this run, for the commands printed with each table.
    pub(crate) fn size_flags(&self) -> String {
        format!(
            "--seconds {} --handoffs {} --failovers {} --rounds {} --fence-rounds {}{}",
            self.config.seconds,
            self.config.handoffs,
            self.config.failovers,
            self.rounds,
            self.fence_rounds,
            // The session scenarios' sizes and window follow --quick alone.
            if self.config.quick { " --quick" } else { "" }
        )
    }

    /// The URL of `backend`: the one given, or its default.
    pub(crate) fn url_of(&self, backend: Backend) -> Result<String, String> {
        match &self.url {
            Some(u) => Ok(u.clone()),
            None => backend.default_url(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        Args::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn defaults_run_everything() -> Result<(), String> {
        let a = parse(&[])?;
        assert_eq!(a.backends.len(), Backend::ALL.len());
        // scripts/bench-report runs `--backend all`: etcd and NATS are part of it.
        assert!(a.backends.contains(&Backend::Etcd));
        assert!(a.backends.contains(&Backend::Nats));
        assert_eq!(parse(&["--backend", "etcd"])?.backends, [Backend::Etcd]);
        assert_eq!(a.scenarios.len(), Scenario::ALL.len());
        assert!(a.safety);
        assert_eq!(a.rounds, 2000);
        Ok(())
    }

    #[test]
    fn lists_quick_and_out() -> Result<(), String> {
        let a = parse(&[
            "--backend",
            "redis,sqlite",
            "--scenario",
            "handoff,safety",
            "--quick",
            "--out",
            "x",
        ])?;
        assert_eq!(a.backends, vec![Backend::Redis, Backend::Sqlite]);
        assert_eq!(a.scenarios, vec![Scenario::Handoff]);
        assert!(a.safety);
        assert_eq!((a.rounds, a.config.handoffs), (200, 10));
        assert_eq!(a.svg, Some(PathBuf::from("x/benchmarks.svg")));
        Ok(())
    }

    #[test]
    fn bad_input_says_what_is_allowed() {
        let e = parse(&["--backend", "oracle"]).err().unwrap_or_default();
        assert!(e.contains("expected memory"), "{e}");
        let e = parse(&["--scenario", "fast"]).err().unwrap_or_default();
        assert!(e.contains("expected uncontended"), "{e}");
        let e = parse(&["--url", "redis://x"]).err().unwrap_or_default();
        assert!(e.contains("exactly one"), "{e}");
        assert!(parse(&["--rounds", "0"]).is_err());
    }
}
