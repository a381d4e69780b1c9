//! `culint explain`: the cause of a CUDA / cuBLAS error, what works, what does not, and the
//! lines of the user's script that are likely at fault.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use crate::config::{Overrides, Resolver};
use crate::explain::{ExplainOptions, explain};
use crate::knowledge::{Base, Label, Lang};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  culint explain 'CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`'\n  culint explain --file train.log\n  torchrun train.py 2>&1 | tee train.log | culint explain"
)]
pub struct ExplainArgs {
    /// The error text. Several arguments are joined with spaces. Without text or --file, the
    /// log is read from standard input.
    #[arg(value_name = "TEXT")]
    pub text: Vec<String>,
    /// Read the error text or a whole log from this file (`-` for standard input).
    #[arg(long, short = 'f', value_name = "LOG", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
    /// Language of the explanation: `en`, `zh` (also `zh-CN` and similar), or `auto` to follow
    /// the locale (LC_ALL, LC_MESSAGES, LANG).
    #[arg(long, value_parser = parse_lang, default_value = "en")]
    pub lang: Lang,
    /// Also load the knowledge entries in this directory (repeatable), after the configuration's
    /// `knowledge-dirs`; an entry with a built-in id replaces the built-in one.
    #[arg(long = "knowledge-dir", value_name = "DIR")]
    pub knowledge_dirs: Vec<PathBuf>,
    /// Use this configuration file instead of discovering one from the root directory.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Resolve traceback paths against this directory when looking for the user's files
    /// [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Do not lint the files named in tracebacks.
    #[arg(long)]
    pub no_lint: bool,
    /// Show one entry by id (such as `cublas/alloc-failed`) instead of reading a log.
    #[arg(long, value_name = "ID", conflicts_with_all = ["text", "file", "list"])]
    pub entry: Option<String>,
    /// List the ids and titles of every known error.
    #[arg(long, conflicts_with_all = ["text", "file"])]
    pub list: bool,
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

fn parse_lang(value: &str) -> Result<Lang, String> {
    if value == "auto" {
        return Ok(system_lang());
    }
    Lang::parse(value).ok_or_else(|| format!("unknown language `{value}`: use `en`, `zh` or `auto`"))
}

/// The language of the POSIX locale, looked up in the order the C library uses.
fn system_lang() -> Lang {
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.is_empty())
        .map_or(Lang::En, |locale| Lang::from_locale(&locale))
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("culint explain: {message}");
    ExitCode::from(super::EXIT_USAGE)
}

pub fn run(args: ExplainArgs) -> ExitCode {
    let knowledge_dirs = match knowledge_dirs(&args) {
        Ok(dirs) => dirs,
        Err(message) => return usage_error(message),
    };
    let base = match Base::with_user_dirs(&knowledge_dirs) {
        Ok(base) => base,
        Err(error) => return usage_error(error),
    };
    if args.list {
        return list(&base, &args);
    }
    if let Some(id) = &args.entry {
        return show_entry(&base, id, &args);
    }
    let (input, source) = match read_input(&args) {
        Ok(input) => input,
        Err(message) => return usage_error(message),
    };
    let lint_root = if args.no_lint {
        None
    } else {
        match &args.root {
            Some(root) if !root.is_dir() => {
                return usage_error(format!("--root {}: not a directory", root.display()));
            }
            Some(root) => Some(root.clone()),
            None => std::env::current_dir().ok(),
        }
    };
    let report = explain(&input, &base, &ExplainOptions { lang: args.lang, lint_root });
    let rendered = match args.format {
        ExplainFormat::Json => serde_json::to_string_pretty(&report.to_json()).expect("report serialises") + "\n",
        ExplainFormat::Markdown => report.to_markdown(),
        ExplainFormat::Text => report.to_text(use_color(args.color)),
    };
    if report.is_empty() {
        if args.format == ExplainFormat::Json {
            print_out(&rendered);
        }
        eprintln!(
            "culint explain: {} in {source} ({} lines); `culint explain --list` shows what is recognised",
            Label::NoMatch.text(args.lang),
            report.line_count
        );
        return ExitCode::from(1);
    }
    print_out(&rendered);
    ExitCode::SUCCESS
}

/// The configuration's `knowledge-dirs` (from `--config`, or found from the root directory),
/// then the ones given with `--knowledge-dir`.
fn knowledge_dirs(args: &ExplainArgs) -> Result<Vec<PathBuf>, String> {
    let resolver = Resolver::new(Overrides { config_file: args.config.clone(), ..Overrides::default() })
        .map_err(|error| error.to_string())?;
    let start = match &args.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let config = resolver.config_for_directory(&start).map_err(|error| error.to_string())?;
    let mut dirs = config.map(|config| config.options.knowledge_dirs.clone()).unwrap_or_default();
    dirs.extend(args.knowledge_dirs.iter().cloned());
    Ok(dirs)
}

fn print_out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal(),
    }
}

/// The text to explain and a name for it in messages.
fn read_input(args: &ExplainArgs) -> Result<(String, String), String> {
    if !args.text.is_empty() {
        return Ok((args.text.join(" "), "the given text".to_owned()));
    }
    match &args.file {
        Some(path) if path.as_os_str() != "-" => {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            // Logs often carry stray bytes from progress bars; they never hold the error itself.
            Ok((String::from_utf8_lossy(&bytes).into_owned(), path.display().to_string()))
        }
        Some(_) => read_stdin(),
        None if std::io::stdin().is_terminal() => Err(
            "no error text: pass it as arguments, with --file LOG, or on standard input (`... 2>&1 | culint explain`)"
                .to_owned(),
        ),
        None => read_stdin(),
    }
}

fn read_stdin() -> Result<(String, String), String> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("cannot read standard input: {e}"))?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), "standard input".to_owned()))
}

fn list(base: &Base, args: &ExplainArgs) -> ExitCode {
    if args.format == ExplainFormat::Json {
        let entries: Vec<serde_json::Value> = base
            .entries()
            .iter()
            .map(|e| serde_json::json!({ "id": e.id, "title": e.title.text(args.lang) }))
            .collect();
        print_out(&(serde_json::to_string_pretty(&entries).expect("list serialises") + "\n"));
        return ExitCode::SUCCESS;
    }
    let width = base.entries().iter().map(|e| e.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for entry in base.entries() {
        out.push_str(&format!("{:width$}  {}\n", entry.id, entry.title.text(args.lang)));
    }
    print_out(&out);
    ExitCode::SUCCESS
}

fn show_entry(base: &Base, id: &str, args: &ExplainArgs) -> ExitCode {
    let Some(entry) = base.entry(id) else {
        return usage_error(format!("no entry `{id}`; `culint explain --list` shows the ids"));
    };
    match args.format {
        ExplainFormat::Json => {
            print_out(&(serde_json::to_string_pretty(&entry.spec).expect("entry serialises") + "\n"));
        }
        _ => print_out(&entry.to_markdown(args.lang)),
    }
    ExitCode::SUCCESS
}
