//! The command line: `culint check | server | explain | probe | rule`.

mod atomic_write;
mod check;
mod check_file;
mod check_notebook;
mod explain;
pub mod output;
mod probe;
pub mod rule;
mod server;
mod source;
mod walk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for usage, configuration and IO errors, shared by every subcommand.
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(name = "culint", version, about = "Find the PyTorch code that runs GPUs out of memory or fails in cuBLAS", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lint training scripts and optionally fix them.
    Check(check::CheckArgs),
    /// Run the language server over stdio.
    Server(server::ServerArgs),
    /// Explain a CUDA / cuBLAS error message or a log.
    Explain(explain::ExplainArgs),
    /// Check the live GPU: memory, cuBLAS health, driver and runtime versions.
    Probe(probe::ProbeArgs),
    /// Show the documentation of a rule, or of all rules.
    Rule(rule::RuleArgs),
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Server(args) => server::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Rule(args) => rule::run(args),
    }
}
