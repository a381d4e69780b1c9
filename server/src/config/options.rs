//! The keys of `[tool.culint]` / `culint.toml`, read strictly: an unknown key or a value of the
//! wrong shape is an error that names the key and says what is expected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::diagnostic::Severity;
use crate::suppression::selector_is_known;

use super::patterns::{PathPattern, PathPatterns};
use super::size::parse_size;

/// Every key culint reads, in the order the documentation lists them.
pub const KEYS: &[&str] = &[
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "severity",
    "output-format",
    "unsafe-fixes",
    "max-file-size",
    "knowledge-dirs",
    "code-kind",
    "preview",
];

/// Files larger than this are skipped unless `max-file-size` says otherwise: generated or
/// vendored code, never a training script someone edits.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1000 * 1000;

/// The largest `max-file-size` accepted: culint reads each file whole.
pub const MAX_FILE_SIZE_LIMIT: u64 = 1 << 30;

/// How `culint check` prints its findings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Code frame, message and fix hint for every finding.
    #[default]
    Full,
    /// One line per finding: `path:line:col: CODE message`.
    Concise,
    /// Ruff-compatible JSON list.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands, shown as annotations on pull requests.
    Github,
}

impl OutputFormat {
    pub const NAMES: &[&str] = &["full", "concise", "json", "sarif", "github"];

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "full" => Some(Self::Full),
            "concise" => Some(Self::Concise),
            "json" => Some(Self::Json),
            "sarif" => Some(Self::Sarif),
            "github" => Some(Self::Github),
            _ => None,
        }
    }
}

/// The options of one configuration file, validated. Unset keys are `None` or empty.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    /// Pattern → selectors ignored for matching files.
    pub per_file_ignores: Vec<(PathPattern, Vec<String>)>,
    /// Pattern → what matching files are (`test`, `example`, `entry-point`, `library`),
    /// overriding culint's judgement; the last matching pattern wins.
    pub code_kind: Vec<(PathPattern, crate::semantic::CodeKind)>,
    pub exclude: PathPatterns,
    /// Severity overrides, keyed by the selector as written (a code, prefix or name).
    pub severity: BTreeMap<String, Severity>,
    pub output_format: Option<OutputFormat>,
    pub unsafe_fixes: Option<bool>,
    /// Show preview findings, those that rest on an assumption.
    pub preview: Option<bool>,
    pub max_file_size: Option<u64>,
    /// Absolute, canonical directories inside the configuration's directory.
    pub knowledge_dirs: Vec<PathBuf>,
}

/// Read the options table. `location` says where the table lives, for messages (`in
/// [tool.culint]`, or `at the top level` of culint.toml); `root` is the configuration's directory.
pub fn parse_options(table: &Table, location: &str, root: &Path) -> Result<Options, String> {
    let mut options = Options::default();
    for (key, value) in table {
        let at = |message: String| format!("`{key}` {location}: {message}");
        match key.as_str() {
            "select" => options.select = Some(selectors(value).map_err(at)?),
            "extend-select" => options.extend_select = selectors(value).map_err(at)?,
            "ignore" => options.ignore = selectors(value).map_err(at)?,
            "per-file-ignores" => options.per_file_ignores = per_file_ignores(value).map_err(at)?,
            "exclude" => options.exclude = strings(value).and_then(|list| PathPatterns::new(&list)).map_err(at)?,
            "severity" => options.severity = severities(value).map_err(at)?,
            "output-format" => options.output_format = Some(output_format(value).map_err(at)?),
            "unsafe-fixes" => options.unsafe_fixes = Some(boolean(value).map_err(at)?),
            "max-file-size" => options.max_file_size = Some(max_file_size(value).map_err(at)?),
            "knowledge-dirs" => options.knowledge_dirs = knowledge_dirs(value, root).map_err(at)?,
            "code-kind" => options.code_kind = code_kinds(value).map_err(at)?,
            "preview" => options.preview = Some(boolean(value).map_err(at)?),
            unknown => {
                return Err(format!(
                    "unknown key `{unknown}` {location}; expected one of {}",
                    KEYS.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    Ok(options)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

fn strings(value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!("expected a list of strings, found {}", kind_of(value)));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!("expected a list of strings, found {} in the list", kind_of(other))),
        })
        .collect()
}

/// A list of rule selectors, each of which must name at least one rule.
fn selectors(value: &Value) -> Result<Vec<String>, String> {
    let list = strings(value)?;
    for selector in &list {
        check_selector(selector)?;
    }
    Ok(list)
}

/// The message for a selector that names no rule, shared with the command line.
pub fn check_selector(selector: &str) -> Result<(), String> {
    if selector.trim().eq_ignore_ascii_case("ALL") || selector_is_known(selector) {
        Ok(())
    } else {
        Err(format!(
            "unknown rule selector `{selector}`; use a code (`CUL201`), a prefix (`CUL2`), a name or `ALL` (`culint rule --all` lists the rules)"
        ))
    }
}

fn per_file_ignores(value: &Value) -> Result<Vec<(PathPattern, Vec<String>)>, String> {
    let Value::Table(table) = value else {
        return Err(format!("expected a table of glob = [selectors], found {}", kind_of(value)));
    };
    table
        .iter()
        .map(|(pattern, selectors_value)| {
            let pattern = PathPattern::new(pattern)?;
            let list = selectors(selectors_value).map_err(|e| format!("pattern `{}`: {e}", pattern.as_str()))?;
            Ok((pattern, list))
        })
        .collect()
}

fn code_kinds(value: &Value) -> Result<Vec<(PathPattern, crate::semantic::CodeKind)>, String> {
    use crate::semantic::CodeKind;
    let expected = || CodeKind::NAMES.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
    let Value::Table(table) = value else {
        return Err(format!("expected a table of glob = one of {}, found {}", expected(), kind_of(value)));
    };
    table
        .iter()
        .map(|(pattern, kind)| {
            let pattern = PathPattern::new(pattern)?;
            let kind = kind.as_str().and_then(CodeKind::parse).ok_or_else(|| {
                format!("pattern `{}`: expected one of {}, found {kind}", pattern.as_str(), expected())
            })?;
            Ok((pattern, kind))
        })
        .collect()
}

fn severities(value: &Value) -> Result<BTreeMap<String, Severity>, String> {
    let Value::Table(table) = value else {
        return Err(format!(
            "expected a table of selector = \"error\"|\"warning\"|\"info\"|\"hint\", found {}",
            kind_of(value)
        ));
    };
    let mut out = BTreeMap::new();
    for (selector, level) in table {
        check_selector(selector)?;
        let severity = match level {
            Value::String(s) => Severity::parse(s),
            _ => None,
        }
        .ok_or_else(|| format!("`{selector}` must be \"error\", \"warning\", \"info\" or \"hint\", found {level}"))?;
        out.insert(selector.clone(), severity);
    }
    Ok(out)
}

fn output_format(value: &Value) -> Result<OutputFormat, String> {
    match value {
        Value::String(s) => OutputFormat::parse(s)
            .ok_or_else(|| format!("unknown format `{s}`; expected one of {}", OutputFormat::NAMES.join(", "))),
        other => Err(format!("expected a string, found {}", kind_of(other))),
    }
}

fn boolean(value: &Value) -> Result<bool, String> {
    value.as_bool().ok_or_else(|| format!("expected true or false, found {}", kind_of(value)))
}

fn max_file_size(value: &Value) -> Result<u64, String> {
    let bytes = match value {
        Value::Integer(n) if *n > 0 => *n as u64,
        Value::Integer(n) => return Err(format!("expected a positive size, found {n}")),
        Value::String(s) => parse_size(s)?,
        other => return Err(format!("expected a size such as 10000000 or \"10MB\", found {}", kind_of(other))),
    };
    if bytes > MAX_FILE_SIZE_LIMIT {
        return Err(format!("{bytes} bytes is more than the limit of 1 GiB"));
    }
    Ok(bytes)
}

/// Directories of user knowledge entries, relative to the configuration file. They must exist
/// and stay inside the configuration's directory, so a shared config cannot read arbitrary files.
fn knowledge_dirs(value: &Value, root: &Path) -> Result<Vec<PathBuf>, String> {
    let root = root.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", root.display()))?;
    strings(value)?
        .iter()
        .map(|dir| {
            let resolved =
                root.join(dir).canonicalize().map_err(|e| format!("directory `{dir}` cannot be read: {e}"))?;
            if !resolved.starts_with(&root) {
                return Err(format!(
                    "directory `{dir}` resolves to {}, outside {}; knowledge directories must stay inside the project",
                    resolved.display(),
                    root.display()
                ));
            }
            if !resolved.is_dir() {
                return Err(format!("`{dir}` is not a directory"));
            }
            Ok(resolved)
        })
        .collect()
}
