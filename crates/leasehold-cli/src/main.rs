//! `leasehold`: run a command on exactly one node (or at most N) and skip it everywhere else;
//! inspect and break leases. See `leasehold --help` and docs/leasehold-cli.md.
//!
//! Printing is this program's job: it goes through [`say`], which writes with `writeln!` (a closed
//! pipe is an error to handle, not a panic as with `println!`) and scrubs store secrets.

mod args;
mod child;
mod clear_ledger;
mod color;
mod completions;
mod exit;
mod fence;
mod logging;
mod manpage;
mod metrics_file;
mod release;
mod run;
mod say;
mod serve;
mod signals;
mod simulate;
mod status;
mod store;
mod time_text;
mod verify;
mod waiting;
mod workbench;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::color::ColorWhen;
use crate::exit::Failure;
use crate::signals::Signals;
use crate::store::{Scrubber, StoreUrl};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap's help and errors follow --color too, read before clap has parsed it.
        Err(e) => {
            // The command line was not understood, but its URLs' secrets are still known.
            let words: Vec<String> = std::env::args_os()
                .map(|w| w.to_string_lossy().into_owned())
                .chain(std::env::var("LEASEHOLD_STORE").ok())
                .filter(|w| w.contains("://"))
                .collect();
            say::set_scrubber(Scrubber::for_urls(words.iter().map(String::as_str)));
            return args::parse_failed(&e, ColorWhen::scan(std::env::args_os()));
        }
    };
    let scrubber = Scrubber::for_url(cli.store_url());
    say::set_scrubber(scrubber.clone());
    let reports = match cli.command {
        Command::Run(_) => logging::Reports::OwnLease,
        Command::Verify(_) => logging::Reports::ExpectedLosses,
        _ => logging::Reports::Nothing,
    };
    logging::init(cli.verbose, reports, cli.color, scrubber);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(&Failure::usage(format!("cannot start the runtime: {e}"))),
    };
    let outcome = runtime.block_on(dispatch(cli));
    // Do not wait for idle store connections or background tasks to wind down.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(failure) => report(&failure),
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Run(args) => {
            // First of all, so no signal can end leasehold while it holds a lease.
            let signals = Signals::install()
                .map_err(|e| Failure::usage(format!("cannot install signal handlers: {e}")))?;
            let url = StoreUrl::resolve(args.store.url())?;
            run::run(args, url, signals).await
        }
        Command::Status(args) => {
            let url = StoreUrl::resolve(args.store.url())?;
            status::status(args, url).await
        }
        Command::Release(args) => {
            let url = StoreUrl::resolve(args.store.url())?;
            release::release(args, url).await
        }
        Command::ClearLedger(args) => {
            let url = StoreUrl::resolve(args.store.url())?;
            clear_ledger::clear_ledger(args, url).await
        }
        Command::Workbench(args) => workbench::workbench(args).await,
        Command::Serve(args) => {
            let url = StoreUrl::resolve(args.store.url())?;
            serve::serve(args, url).await
        }
        Command::Simulate(args) => simulate::simulate(args).await,
        Command::Fence(args) => {
            let url = StoreUrl::resolve(args.store().url())?;
            fence::fence(args, url).await
        }
        Command::Verify(args) => {
            let url = StoreUrl::resolve(args.store.url())?;
            verify::verify(args, url).await
        }
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => manpage::man(&args),
    }
}

fn report(failure: &Failure) -> ExitCode {
    say::err(failure.message());
    exit::code(failure.code())
}
