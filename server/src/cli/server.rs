//! `culint server` (in progress).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ServerArgs {}

pub fn run(_args: ServerArgs) -> ExitCode {
    eprintln!("culint server: not built yet");
    ExitCode::from(super::EXIT_USAGE)
}
