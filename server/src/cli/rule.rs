//! `culint rule` (in progress).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RuleArgs {}

pub fn run(_args: RuleArgs) -> ExitCode {
    eprintln!("culint rule: not built yet");
    ExitCode::from(super::EXIT_USAGE)
}
