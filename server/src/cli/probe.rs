//! `culint probe` (in progress).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ProbeArgs {}

pub fn run(_args: ProbeArgs) -> ExitCode {
    eprintln!("culint probe: not built yet");
    ExitCode::from(super::EXIT_USAGE)
}
