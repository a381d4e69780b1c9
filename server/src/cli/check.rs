//! `culint check [PATH...]`: lint files and directories, optionally fix them, and print the
//! findings in the chosen format. Exit codes: 0 clean, 1 findings remain (or `--diff` would
//! change something), 2 usage, configuration or IO error.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use rayon::prelude::*;

use crate::config::{OutputFormat, Overrides, Resolver, check_selector, parse_size};
use crate::hardware::HardwareFacts;

use super::EXIT_USAGE;
use super::check_file::{FileReport, FixMode, Notice, check_file, check_text};
use super::output::{FixSummary, RenderOptions, render, render_statistics, render_statistics_json, render_summary};
use super::source::{Loaded, decode};
use super::walk::collect_files;

const EXIT_FINDINGS: u8 = 1;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Files and directories to check; `-` reads standard input. Directories are searched for
    /// `.py` files and `.ipynb` notebooks, honouring `.gitignore` and the configuration's
    /// `exclude`.
    #[arg(value_name = "PATH", default_value = ".")]
    paths: Vec<PathBuf>,

    /// Apply safe fixes (and unsafe ones with `--unsafe-fixes`), writing the files.
    #[arg(long, conflicts_with = "diff")]
    fix: bool,
    /// Include fixes that may change behaviour.
    #[arg(long, overrides_with = "no_unsafe_fixes")]
    unsafe_fixes: bool,
    #[arg(long, overrides_with = "unsafe_fixes", hide = true)]
    no_unsafe_fixes: bool,
    /// Also report preview findings, those that rest on an assumption (marked `(preview)`).
    #[arg(long, overrides_with = "no_preview")]
    preview: bool,
    #[arg(long, overrides_with = "preview", hide = true)]
    no_preview: bool,
    /// Print the fixes as a unified diff and write nothing; exit 1 if any file would change.
    #[arg(long)]
    diff: bool,

    /// How findings are printed (default: the configuration's `output-format`, else `full`).
    #[arg(long, value_enum)]
    output_format: Option<OutputFormat>,
    /// Write the findings to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    output_file: Option<PathBuf>,
    /// Print how many findings each rule has instead of the findings.
    #[arg(long)]
    statistics: bool,
    /// Exit 0 even when findings remain (errors still exit 2).
    #[arg(long)]
    exit_zero: bool,
    /// Print the findings and errors only: no summary, no warnings.
    #[arg(short, long, conflicts_with = "silent")]
    quiet: bool,
    /// Print errors only; the exit code tells whether there are findings. `--output-file` is
    /// still written, and `--fix -` still prints the fixed text.
    #[arg(short, long)]
    silent: bool,
    /// Print what each file was judged to be (test, example, entry point or library) and why:
    /// resource rules speak only where training or evaluation really runs.
    #[arg(long)]
    show_context: bool,
    /// Also report the regions the parser could not read.
    #[arg(long)]
    show_syntax_errors: bool,
    /// Never colour the output (also: the `NO_COLOR` environment variable).
    #[arg(long)]
    no_color: bool,

    /// Rules to enable, replacing the configuration's `select`: codes, prefixes, names or `ALL`.
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    select: Option<Vec<String>>,
    /// Rules to enable in addition to those selected.
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    extend_select: Vec<String>,
    /// Rules to disable.
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    ignore: Vec<String>,
    /// Use this configuration file for every path instead of discovering one.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The path standard input is reported as, and looked up configuration for.
    #[arg(long, value_name = "PATH")]
    stdin_filename: Option<PathBuf>,

    /// Number of GPUs the script will see, for the hardware-aware rules.
    #[arg(long, value_name = "N", help_heading = "Hardware")]
    gpus: Option<usize>,
    /// Memory of one GPU: `80GiB`, `24GB`, `16G` or bytes.
    #[arg(long, value_name = "SIZE", value_parser = gpu_memory, help_heading = "Hardware")]
    gpu_memory: Option<u64>,
    /// Compute capability of the GPU, such as `8.0` (bf16 is native from 8.0).
    #[arg(long, value_name = "MAJOR.MINOR", value_parser = compute_capability, help_heading = "Hardware")]
    compute_capability: Option<(u32, u32)>,
    /// Read the hardware facts from this machine's GPU (through the driver, without creating a
    /// CUDA context); `--gpus`, `--gpu-memory` and `--compute-capability` override them.
    #[arg(long, help_heading = "Hardware")]
    probe: bool,
    /// The device `--probe` describes (default 0).
    #[arg(long, value_name = "INDEX", requires = "probe", help_heading = "Hardware")]
    probe_device: Option<usize>,
}

fn gpu_memory(value: &str) -> Result<u64, String> {
    parse_size(value)
}

fn compute_capability(value: &str) -> Result<(u32, u32), String> {
    let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n < 100);
    match value.split_once('.') {
        Some((major, minor)) => parse(major).zip(parse(minor)),
        None => parse(value).map(|major| (major, 0)),
    }
    .ok_or_else(|| format!("`{value}` is not a compute capability; write it as MAJOR.MINOR, such as `8.0`"))
}

impl CheckArgs {
    /// The facts from `--probe`, overridden field by field by the explicit flags.
    fn hardware(&self) -> Result<Option<HardwareFacts>, String> {
        let probed = if self.probe {
            let facts = crate::probe::hardware_facts(self.probe_device).map_err(|reason| {
                format!("--probe: {reason}; give the facts with --gpus, --gpu-memory and --compute-capability instead")
            })?;
            Some(facts)
        } else {
            None
        };
        if probed.is_none() && self.gpus.is_none() && self.gpu_memory.is_none() && self.compute_capability.is_none() {
            return Ok(None);
        }
        let probed = probed.unwrap_or_default();
        Ok(Some(HardwareFacts {
            gpus: self.gpus.or(probed.gpus),
            memory_bytes: self.gpu_memory.or(probed.memory_bytes),
            compute_capability: self.compute_capability.or(probed.compute_capability),
        }))
    }

    fn overrides(&self) -> Result<Overrides, String> {
        let unsafe_fixes = match (self.unsafe_fixes, self.no_unsafe_fixes) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        Ok(Overrides {
            config_file: self.config.clone(),
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            unsafe_fixes,
            preview: match (self.preview, self.no_preview) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            show_syntax_errors: self.show_syntax_errors,
            hardware: self.hardware()?,
        })
    }

    fn fix_mode(&self) -> FixMode {
        if self.diff {
            FixMode::Diff
        } else if self.fix {
            FixMode::Apply
        } else {
            FixMode::Report
        }
    }
}

pub fn run(args: CheckArgs) -> ExitCode {
    match check(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Errors that stop the run before any file is checked.
fn validate_selectors(args: &CheckArgs) -> Result<(), String> {
    let lists = [
        ("--select", args.select.as_deref().unwrap_or(&[])),
        ("--extend-select", &args.extend_select),
        ("--ignore", &args.ignore),
    ];
    for (flag, selectors) in lists {
        for selector in selectors {
            check_selector(selector).map_err(|e| format!("{flag}: {e}"))?;
        }
    }
    Ok(())
}

fn check(args: &CheckArgs) -> Result<ExitCode, String> {
    validate_selectors(args)?;
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let resolver = Arc::new(Resolver::new(args.overrides()?).map_err(|e| e.to_string())?);
    let format = match args.output_format {
        Some(format) => format,
        None => resolver
            .config_for_directory(&cwd)
            .map_err(|e| e.to_string())?
            .and_then(|config| config.options.output_format)
            .unwrap_or_default(),
    };
    let mode = args.fix_mode();

    let reads_stdin = args.paths.iter().any(|p| p.as_os_str() == "-");
    let paths: Vec<PathBuf> = args.paths.iter().filter(|p| p.as_os_str() != "-").cloned().collect();
    let mut errors = 0usize;

    let walk = if paths.is_empty() { Default::default() } else { collect_files(&paths, &resolver) };
    if let Some(error) = walk.config_errors.first() {
        return Err(error.to_string());
    }
    for error in &walk.io_errors {
        eprintln!("error: {error}");
        errors += 1;
    }

    let warn = !(args.quiet || args.silent);
    if walk.files.is_empty() && !reads_stdin && walk.io_errors.is_empty() && warn {
        eprintln!("warning: no Python files found under the given paths");
    }
    let mut reports: Vec<FileReport> = walk.files.par_iter().map(|path| check_file(path, &resolver, mode)).collect();
    if reads_stdin {
        reports.push(check_stdin(args, &resolver, mode)?);
    }

    match print_notices(&reports, warn) {
        Some(count) => errors += count,
        None => return Ok(ExitCode::from(EXIT_USAGE)),
    }

    if args.show_context {
        for report in &reports {
            if let Some(judgement) = &report.code_kind {
                println!("{}: {} ({})", report.path.display(), judgement.kind.as_str(), judgement.reason);
            }
        }
    }
    if mode == FixMode::Diff {
        return Ok(print_diffs(&reports, errors, args));
    }
    if mode == FixMode::Apply {
        for report in &reports {
            if let Some(fixed) = &report.fixed_text {
                // Only stdin leaves fixed text behind: print it, as `ruff check --fix -` does.
                print!("{fixed}");
            }
        }
    }

    let colour = args.output_file.is_none() && !args.no_color && std::io::stdout().is_terminal() && !no_color_env();
    let options = RenderOptions { format, colour, cwd: &cwd };
    let summary = FixSummary::of(&reports);
    let text_format = matches!(format, OutputFormat::Full | OutputFormat::Concise);
    let mut out = if args.statistics {
        if format == OutputFormat::Json { render_statistics_json(&reports) } else { render_statistics(&reports) }
    } else {
        render(&reports, &options)
    };
    if text_format && warn {
        out.push_str(&render_summary(&summary, mode == FixMode::Apply));
    }
    // With stdin fixed onto stdout, the findings go to stderr so the two do not mix.
    let stdin_fixed = mode == FixMode::Apply && reads_stdin;
    if !args.silent || args.output_file.is_some() {
        emit(&out, args.output_file.as_deref(), stdin_fixed)?;
    }

    Ok(if errors > 0 {
        ExitCode::from(EXIT_USAGE)
    } else if summary.remaining > 0 && !args.exit_zero {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    })
}

/// Print each report's errors to stderr, and its warnings too when `warn`, and return how many
/// errors there were; `None` when a broken configuration stops the run (reported once, however
/// many files it covers).
fn print_notices(reports: &[FileReport], warn: bool) -> Option<usize> {
    let mut config_errors: Vec<&str> = reports
        .iter()
        .flat_map(|r| &r.notices)
        .filter_map(|n| if let Notice::Config(message) = n { Some(message.as_str()) } else { None })
        .collect();
    if !config_errors.is_empty() {
        config_errors.sort_unstable();
        config_errors.dedup();
        for message in config_errors {
            eprintln!("error: {message}");
        }
        return None;
    }
    let mut errors = 0;
    for notice in reports.iter().flat_map(|r| &r.notices) {
        match notice {
            Notice::Warning(message) if warn => eprintln!("warning: {message}"),
            Notice::Warning(_) => {}
            Notice::Error(message) => {
                eprintln!("error: {message}");
                errors += 1;
            }
            Notice::Config(_) => {}
        }
    }
    Some(errors)
}

fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn check_stdin(args: &CheckArgs, resolver: &Resolver, mode: FixMode) -> Result<FileReport, String> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("cannot read standard input: {e}"))?;
    let display = args.stdin_filename.clone().unwrap_or_else(|| PathBuf::from("-"));
    let lookup = args.stdin_filename.clone().unwrap_or_else(|| PathBuf::from("stdin.py"));
    let settings = resolver.settings_for(&lookup).map_err(|e| e.to_string())?;
    if args.stdin_filename.is_some() && resolver.is_excluded(&lookup).map_err(|e| e.to_string())? {
        // Excluded files stay unlinted even when an editor pipes them in; `--fix` echoes them.
        let mut report = FileReport::unchecked(display);
        if mode == FixMode::Apply {
            report.fixed_text = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        return Ok(report);
    }
    match decode(bytes) {
        Loaded::Text(source) => {
            let mut report = check_text(&source, &lookup, display, &settings, mode);
            report.fixed_text = report.fixed_text.take().map(|fixed| source.restore(&fixed));
            if mode == FixMode::Apply && report.fixed_text.is_none() {
                // Nothing changed: still echo the input, so `--fix -` works as a filter.
                report.fixed_text = Some(source.restore(&source.text));
            }
            Ok(report)
        }
        Loaded::Skipped(skip) => Err(format!("{}: {}", display.display(), skip.describe())),
    }
}

fn print_diffs(reports: &[FileReport], errors: usize, args: &CheckArgs) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let mut would_fix = 0;
    for report in reports {
        if let Some(diff) = &report.diff {
            if !args.silent {
                let _ = stdout.write_all(diff.as_bytes());
            }
            would_fix += report.fixed;
        }
    }
    let _ = stdout.flush();
    if args.quiet || args.silent {
        // The diff (or the exit code) says it all.
    } else if would_fix > 0 {
        eprintln!("Would fix {would_fix} {}.", if would_fix == 1 { "error" } else { "errors" });
    } else {
        eprintln!("No errors would be fixed.");
    }
    if errors > 0 {
        ExitCode::from(EXIT_USAGE)
    } else if would_fix > 0 {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }
}

fn emit(text: &str, output_file: Option<&Path>, to_stderr: bool) -> Result<(), String> {
    if let Some(path) = output_file {
        return std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()));
    }
    let result = if to_stderr {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
    match result {
        // A closed pipe (`culint check | head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("cannot write the output: {e}")),
    }
}
