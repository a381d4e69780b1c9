//! Configuration: `[tool.culint]` in pyproject.toml or the top level of culint.toml, found by
//! walking up from each file (the nearest wins) and resolved into [`LintSettings`] per file.
//!
//! The CLI and the language server share this API: [`load`] reads one file strictly,
//! [`Resolver`] finds and caches the configuration of each directory and answers
//! [`Resolver::settings_for`] with the settings for one path.
//!
//! [`LintSettings`]: crate::lint::LintSettings

mod discovery;
mod error;
mod options;
mod patterns;
mod resolver;
mod size;

use std::path::{Path, PathBuf};

pub use discovery::{CONFIG_FILE_NAMES, find_config_file};
pub use error::ConfigError;
pub use options::{
    DEFAULT_MAX_FILE_SIZE, KEYS, MAX_FILE_SIZE_LIMIT, Options, OutputFormat, check_selector, parse_options,
};
pub use patterns::{PathPattern, PathPatterns};
pub use resolver::{Overrides, ResolvedSettings, Resolver};
pub use size::{MAX_SIZE, parse_size};

/// Larger configuration files are refused unread: no real one comes near this.
pub const MAX_CONFIG_FILE_SIZE: u64 = 1 << 20;

/// One configuration file, read and validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file the options came from.
    pub path: PathBuf,
    /// Its directory: relative paths and globs in the options are relative to it.
    pub root: PathBuf,
    pub options: Options,
}

/// Read a configuration file: `pyproject.toml` (its `[tool.culint]` table, which may be absent)
/// or any other file name, read as culint.toml with the options at the top level.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let size = std::fs::metadata(path).map_err(|e| ConfigError::new(path, format!("cannot read: {e}")))?.len();
    if size > MAX_CONFIG_FILE_SIZE {
        return Err(ConfigError::new(
            path,
            format!("{size} bytes is too large for a configuration file (the limit is 1 MiB)"),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new(path, format!("cannot read: {e}")))?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // Globs are matched against absolute paths, so the root must be absolute too.
    let root = parent
        .canonicalize()
        .map_err(|e| ConfigError::new(path, format!("cannot resolve the directory of the configuration: {e}")))?;
    let options = if is_pyproject(path) {
        match culint_table_of_pyproject(path, &text)? {
            Some(table) => parse_options(&table, "in [tool.culint]", &root),
            None => Ok(Options::default()),
        }
    } else {
        let table = parse_toml(path, &text)?;
        parse_options(&table, "at the top level", &root)
    }
    .map_err(|message| ConfigError::new(path, message))?;
    Ok(Config { path: path.to_path_buf(), root, options })
}

fn is_pyproject(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "pyproject.toml")
}

fn parse_toml(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>()
        .map_err(|e| ConfigError::new(path, format!("invalid TOML: {}", shorten_lines(e.to_string().trim_end()))))
}

/// The TOML parser quotes the offending line whole; a minified or generated file can make that
/// line megabytes long, so each line of the message is cut to a readable width.
fn shorten_lines(message: &str) -> String {
    const WIDTH: usize = 160;
    message
        .lines()
        .map(|line| match line.char_indices().nth(WIDTH) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `[tool.culint]` table of a pyproject.toml, or `None` when it has none.
pub(crate) fn culint_table_of_pyproject(path: &Path, text: &str) -> Result<Option<toml::Table>, ConfigError> {
    let mut document = parse_toml(path, text)?;
    let Some(toml::Value::Table(mut tool)) = document.remove("tool") else {
        return Ok(None);
    };
    match tool.remove("culint") {
        None => Ok(None),
        Some(toml::Value::Table(table)) => Ok(Some(table)),
        Some(_) => Err(ConfigError::new(path, "`tool.culint` must be a table")),
    }
}

#[cfg(test)]
mod tests;
