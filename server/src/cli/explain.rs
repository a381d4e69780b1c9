//! `culint explain` (in progress).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ExplainArgs {}

pub fn run(_args: ExplainArgs) -> ExitCode {
    eprintln!("culint explain: not built yet");
    ExitCode::from(super::EXIT_USAGE)
}
