//! `leasehold completions SHELL`: a shell completion script, generated from the argument
//! definitions by `clap_complete`.

use std::process::ExitCode;

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs};
use crate::exit::Failure;
use crate::say;

/// Prints the completion script for `args.shell`.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<ExitCode, Failure> {
    let mut cmd = Cli::command();
    let name = cmd.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    if !say::document(&String::from_utf8_lossy(&script)) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok(ExitCode::SUCCESS)
}
