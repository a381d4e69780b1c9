//! `culint probe`: check the live GPU and print one verdict per check.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::probe::{self, ProbeOptions};

#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 every check passed, 1 a check warned or failed, 2 usage error, 3 no NVIDIA driver or no GPU.\nThe JSON schema is docs/probe-schema.json."
)]
pub struct ProbeArgs {
    /// Probe only this device, numbered as this process sees it (after CUDA_VISIBLE_DEVICES).
    #[arg(long, value_name = "N")]
    device: Option<usize>,
    /// Skip the search for the largest single allocation (the slowest check).
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON (schema: docs/probe-schema.json).
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the report as Markdown.
    #[arg(long)]
    markdown: bool,
    /// The Python whose PyTorch to compare with the driver [default: python3 on PATH].
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
}

pub fn run(args: ProbeArgs) -> ExitCode {
    let report = probe::run(&ProbeOptions { device: args.device, quick: args.quick, python: args.python });
    if args.json {
        println!("{}", report.to_json());
    } else if args.markdown {
        print!("{}", report.to_markdown());
    } else if report.unavailable.is_some() {
        // One clear line: no driver, or no GPU, and why.
        eprintln!("culint probe: {}", report.headline());
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::from(report.exit_code())
}
