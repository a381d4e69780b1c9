//! `culint check` (in progress).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> ExitCode {
    eprintln!("culint check: not built yet");
    ExitCode::from(super::EXIT_USAGE)
}
