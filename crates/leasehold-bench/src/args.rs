//! Command-line arguments.

pub(crate) const USAGE: &str = "usage: leasehold-bench --backend memory|sqlite|postgres|mysql|redis|dynamodb [--url URL] [--seconds N] [--handoffs N]

  --backend   which store to measure
  --url       store URL (default: a temp SQLite file, $LEASEHOLD_TEST_POSTGRES_URL, $LEASEHOLD_TEST_MYSQL_URL,
              $LEASEHOLD_TEST_REDIS_URL or redis://127.0.0.1:6379,
              dynamodb://leasehold_bench_leases?endpoint=$LEASEHOLD_TEST_DYNAMODB_ENDPOINT&create_table=true)
  --seconds   measuring time per scenario, split between the sides (default 10)
  --handoffs  redis only: hand-offs measured per kind (default 100)";

pub(crate) struct Args {
    pub(crate) backend: String,
    pub(crate) url: String,
    pub(crate) seconds: f64,
    pub(crate) handoffs: usize,
}

impl Args {
    pub(crate) fn parse(mut argv: impl Iterator<Item = String>) -> Result<Self, String> {
        let (mut backend, mut url, mut seconds, mut handoffs) = (None, None, 10.0_f64, 100usize);
        while let Some(flag) = argv.next() {
            let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--backend" => backend = Some(value()?),
                "--url" => url = Some(value()?),
                "--seconds" => {
                    seconds = value()?
                        .parse()
                        .map_err(|_| "--seconds takes a number".to_owned())?;
                    if !seconds.is_finite() || seconds <= 0.0 {
                        return Err("--seconds must be positive".into());
                    }
                }
                "--handoffs" => {
                    handoffs = value()?
                        .parse()
                        .map_err(|_| "--handoffs takes a whole number".to_owned())?;
                }
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        let backend = backend.ok_or("--backend is required")?;
        let env = |var: &str| {
            std::env::var(var).map_err(|_| format!("--url or ${var} is required for {backend}"))
        };
        let url = match (url, backend.as_str()) {
            (Some(u), _) => u,
            (None, "memory") => "memory:".to_owned(),
            (None, "sqlite") => {
                let file =
                    std::env::temp_dir().join(format!("leasehold-bench-{}.db", std::process::id()));
                format!("sqlite://{}", file.display())
            }
            (None, "postgres") => env("LEASEHOLD_TEST_POSTGRES_URL")?,
            (None, "mysql") => env("LEASEHOLD_TEST_MYSQL_URL")?,
            (None, "redis") => std::env::var("LEASEHOLD_TEST_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned()),
            (None, "dynamodb") => {
                crate::dynamodb::default_url(&env("LEASEHOLD_TEST_DYNAMODB_ENDPOINT")?)
            }
            (None, other) => return Err(format!("unknown backend {other:?}")),
        };
        Ok(Self {
            backend,
            url,
            seconds,
            handoffs,
        })
    }
}
