//! `leasehold man`: the manual pages (roff), generated from the argument definitions by
//! `clap_mangen`: `leasehold.1` on stdout, or one page per command written to a directory.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::args::{Cli, ManArgs};
use crate::exit::Failure;
use crate::say;

/// Prints `leasehold.1`, or writes every page to `--dir` and lists the files written.
pub(crate) fn man(args: &ManArgs) -> Result<ExitCode, Failure> {
    let text = match &args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command())
                .render(&mut page)
                .map_err(|e| Failure::usage(format!("cannot render the manual page: {e}")))?;
            String::from_utf8_lossy(&page).into_owned()
        }
        Some(dir) => write_pages(dir)?
            .iter()
            .map(|path| format!("{}\n", path.display()))
            .collect(),
    };
    if !say::document(&text) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}

/// The command tree the pages describe: without clap's `help` subcommand (`--help` stays).
fn command() -> clap::Command {
    Cli::command().disable_help_subcommand(true)
}

/// Writes `leasehold.1` and a page per command (`leasehold-run.1`, `leasehold-fence-init.1`,
/// ...) to `dir`, creating it if missing. Returns the paths written.
fn write_pages(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let shown = dir.display();
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::usage(format!("--dir {shown}: cannot create the directory: {e}")))?;
    let mut cmd = command();
    // Building names the subcommands after their parents (`leasehold-run`), as the pages are.
    cmd.build();
    let mut written = Vec::new();
    write_tree(cmd, dir, &mut written)
        .map_err(|e| Failure::usage(format!("--dir {shown}: cannot write the pages: {e}")))?;
    Ok(written)
}

/// Writes the page of `cmd`, then those of its visible subcommands, depth first.
fn write_tree(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> io::Result<()> {
    let subcommands: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    written.push(clap_mangen::Man::new(cmd).generate_to(dir)?);
    for sub in subcommands {
        write_tree(sub, dir, written)?;
    }
    Ok(())
}
