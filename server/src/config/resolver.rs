//! Per-file settings: the nearest configuration of each file, layered under the command line,
//! with its per-file ignores applied. Directory lookups are cached, so a walk over thousands of
//! files reads each configuration once; the cache is shared across threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::diagnostic::Severity;
use crate::hardware::HardwareFacts;
use crate::lint::{LintSettings, RuleSet};
use crate::rules::RULES;
use crate::suppression::selector_matches;

use super::{Config, ConfigError, DEFAULT_MAX_FILE_SIZE, find_config_file, load};

/// What the command line (or an editor's settings) sets on top of the configuration files.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Use this file for every path instead of discovering one (`--config`).
    pub config_file: Option<PathBuf>,
    /// Replaces the configuration's `select`.
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    pub unsafe_fixes: Option<bool>,
    /// `--preview` / `--no-preview`, the editor's `preview`: over the configuration's.
    pub preview: Option<bool>,
    pub show_syntax_errors: bool,
    pub hardware: Option<HardwareFacts>,
}

/// The settings for one path.
#[derive(Clone, Debug)]
pub struct ResolvedSettings {
    pub lint: LintSettings,
    /// The configuration that applied, if any.
    pub config: Option<Arc<Config>>,
    pub unsafe_fixes: bool,
    /// Report preview findings too ([`crate::diagnostic::Diagnostic::is_preview`]).
    pub preview: bool,
    pub max_file_size: u64,
    /// The configured `code-kind` of the file, when a pattern matches it.
    pub code_kind: Option<crate::semantic::CodeKind>,
}

/// A configuration and the settings derived from it once, before per-file ignores.
#[derive(Debug)]
struct Resolved {
    config: Option<Arc<Config>>,
    base: ResolvedSettings,
}

type Lookup = Result<Arc<Resolved>, ConfigError>;

pub struct Resolver {
    overrides: Overrides,
    /// Set when `--config` names the one file to use.
    forced: Option<Arc<Resolved>>,
    /// Directory → the configuration that applies there.
    by_directory: Mutex<HashMap<PathBuf, Lookup>>,
    /// Directory as given → its absolute form: resolving every component of every file's path
    /// costs a system call per component, and a walk meets each directory many times.
    absolute_directories: Mutex<HashMap<PathBuf, PathBuf>>,
    /// For directories with no configuration anywhere above them.
    unconfigured: Arc<Resolved>,
}

impl Resolver {
    /// Fails when `overrides.config_file` cannot be loaded.
    pub fn new(overrides: Overrides) -> Result<Self, ConfigError> {
        let forced = match &overrides.config_file {
            Some(path) => Some(Arc::new(resolve(Some(Arc::new(load(path)?)), &overrides))),
            None => None,
        };
        let unconfigured = Arc::new(resolve(None, &overrides));
        Ok(Self {
            overrides,
            forced,
            by_directory: Mutex::default(),
            absolute_directories: Mutex::default(),
            unconfigured,
        })
    }

    pub fn overrides(&self) -> &Overrides {
        &self.overrides
    }

    /// The configuration that applies to files in `dir`, if any.
    pub fn config_for_directory(&self, dir: &Path) -> Result<Option<Arc<Config>>, ConfigError> {
        Ok(self.lookup(dir)?.config.clone())
    }

    /// The settings for the file at `path` (which need not exist, for stdin and unsaved
    /// buffers): its directory's configuration with the per-file ignores that match it.
    pub fn settings_for(&self, path: &Path) -> Result<ResolvedSettings, ConfigError> {
        let path = self.absolute(path);
        let resolved = self.lookup(path.parent().unwrap_or(&path))?;
        let mut settings = resolved.base.clone();
        if let Some(config) = &resolved.config {
            for (pattern, selectors) in &config.options.per_file_ignores {
                if pattern.matches(&config.root, &path) {
                    settings.lint.rules.remove(selectors);
                }
            }
            for (pattern, kind) in &config.options.code_kind {
                if pattern.matches(&config.root, &path) {
                    settings.code_kind = Some(*kind);
                }
            }
        }
        Ok(settings)
    }

    /// Whether `path` (a file or a directory) matches the `exclude` of the configuration of the
    /// directory that holds it.
    pub fn is_excluded(&self, path: &Path) -> Result<bool, ConfigError> {
        let path = self.absolute(path);
        let Some(parent) = path.parent() else { return Ok(false) };
        Ok(self
            .lookup(parent)?
            .config
            .as_ref()
            .is_some_and(|config| config.options.exclude.matches(&config.root, &path)))
    }

    fn lookup(&self, dir: &Path) -> Lookup {
        if let Some(forced) = &self.forced {
            return Ok(forced.clone());
        }
        let dir = self.absolute_directory(dir);
        let mut cache = self.by_directory.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Walk up until a cached answer or a configuration file, then record the answer for
        // every directory passed on the way.
        let mut visited = Vec::new();
        let mut current = Some(dir.as_path());
        let answer = loop {
            let Some(here) = current else { break Ok(self.unconfigured.clone()) };
            if let Some(cached) = cache.get(here) {
                break cached.clone();
            }
            visited.push(here.to_path_buf());
            match find_config_file(here) {
                Err(error) => break Err(error),
                Ok(Some(file)) => {
                    break load(&file).map(|config| Arc::new(resolve(Some(Arc::new(config)), &self.overrides)));
                }
                Ok(None) => current = here.parent(),
            }
        };
        for dir in visited {
            cache.insert(dir, answer.clone());
        }
        answer
    }
}

impl Resolver {
    /// [`absolute`], with the directory part looked up once per directory. A symbolic link
    /// resolves to its target, as [`absolute`] resolves it, which needs only one system call.
    fn absolute(&self, path: &Path) -> PathBuf {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return absolute(path) };
        let is_link = path.symlink_metadata().map_or(true, |meta| meta.file_type().is_symlink());
        if is_link {
            return absolute(path);
        }
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        self.absolute_directory(dir).join(name)
    }

    fn absolute_directory(&self, dir: &Path) -> PathBuf {
        let mut known = self.absolute_directories.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        known.entry(dir.to_path_buf()).or_insert_with(|| absolute(dir)).clone()
    }
}

/// An absolute path without `.`/`..` where the file system can tell, for stable cache keys and
/// glob matching.
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().or_else(|_| std::path::absolute(path)).unwrap_or_else(|_| path.to_path_buf())
}

/// The settings of one configuration (or none) under the command line's overrides.
fn resolve(config: Option<Arc<Config>>, overrides: &Overrides) -> Resolved {
    let options = config.as_ref().map(|c| &c.options);
    let mut enabled = vec![true; RULES.len()];
    if let Some(options) = options {
        apply_selection(&mut enabled, options.select.as_deref(), &options.extend_select, &options.ignore);
    }
    apply_selection(&mut enabled, overrides.select.as_deref(), &overrides.extend_select, &overrides.ignore);
    let mut rules = RuleSet::none();
    for (rule, on) in RULES.iter().zip(&enabled) {
        if *on {
            rules.extend(&[rule.code]);
        }
    }
    let severities = options.map(|o| severities_by_code(&o.severity)).unwrap_or_default();
    let lint = LintSettings {
        rules,
        severities,
        show_syntax_errors: overrides.show_syntax_errors,
        hardware: overrides.hardware.clone(),
    };
    let base = ResolvedSettings {
        lint,
        config: config.clone(),
        unsafe_fixes: overrides.unsafe_fixes.or(options.and_then(|o| o.unsafe_fixes)).unwrap_or(false),
        preview: overrides.preview.or(options.and_then(|o| o.preview)).unwrap_or(false),
        max_file_size: options.and_then(|o| o.max_file_size).unwrap_or(DEFAULT_MAX_FILE_SIZE),
        code_kind: None,
    };
    Resolved { config, base }
}

/// How specific a selector is for a rule it matches: `ALL` least, then longer prefixes, then the
/// full code or the name. Used so that `select = ["CUL201"]` beats `ignore = ["CUL2"]`, as in Ruff.
fn specificity(selector: &str, code: &str, name: &str) -> Option<usize> {
    if !selector_matches(selector, code, name) {
        return None;
    }
    let selector = selector.trim();
    Some(if selector.eq_ignore_ascii_case("ALL") {
        0
    } else if selector.eq_ignore_ascii_case(name) {
        usize::MAX
    } else {
        selector.len()
    })
}

fn most_specific(selectors: &[String], code: &str, name: &str) -> Option<usize> {
    selectors.iter().filter_map(|s| specificity(s, code, name)).max()
}

/// One layer of selection (a configuration file, then the command line). A `select` replaces
/// what earlier layers chose; within a layer the most specific selector wins, and `ignore` wins
/// a tie.
fn apply_selection(enabled: &mut [bool], select: Option<&[String]>, extend_select: &[String], ignore: &[String]) {
    for (on, rule) in enabled.iter_mut().zip(RULES) {
        let inherited = if select.is_none() && *on { Some(0) } else { None };
        let chosen = [
            inherited,
            most_specific(select.unwrap_or(&[]), rule.code, rule.name),
            most_specific(extend_select, rule.code, rule.name),
        ]
        .into_iter()
        .flatten()
        .max();
        let ignored = most_specific(ignore, rule.code, rule.name);
        *on = match (chosen, ignored) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(chosen), Some(ignored)) => chosen > ignored,
        };
    }
}

/// Severity overrides keyed by selector, expanded to rule codes; the most specific selector
/// wins for each rule.
fn severities_by_code(by_selector: &std::collections::BTreeMap<String, Severity>) -> HashMap<String, Severity> {
    RULES
        .iter()
        .filter_map(|rule| {
            by_selector
                .iter()
                .filter_map(|(selector, severity)| Some((specificity(selector, rule.code, rule.name)?, *severity)))
                .max_by_key(|(spec, _)| *spec)
                .map(|(_, severity)| (rule.code.to_owned(), severity))
        })
        .collect()
}
