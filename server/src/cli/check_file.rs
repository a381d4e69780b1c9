//! Linting, and fixing, one file or one stdin text: what `culint check` does per path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{ResolvedSettings, Resolver};
use crate::diagnostic::Diagnostic;
use crate::fix::Applicability;
use crate::lint::{LintContext, fix_text, lint_text, may_have_findings};
use crate::notebook::{NumberedProgram, is_notebook};
use crate::rules::{FixAvailability, by_code};
use crate::text::LineIndex;

use super::atomic_write::write_atomically;
use super::check_notebook::check_notebook;
use super::source::{Loaded, SourceText, read_source};

/// What `culint check` does with fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixMode {
    /// Only report.
    Report,
    /// Apply fixes and write the files.
    Apply,
    /// Apply fixes in memory and show the diff; write nothing.
    Diff,
}

/// Something to tell the user on stderr about one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    Warning(String),
    /// Makes the run exit with code 2.
    Error(String),
    /// The path's configuration is broken: the run stops with code 2.
    Config(String),
}

/// The result of checking one path.
#[derive(Debug)]
pub struct FileReport {
    /// The path as the user will read it.
    pub path: PathBuf,
    /// The text the diagnostics point into: after fixes, without a byte-order mark.
    pub text: String,
    pub diagnostics: Vec<Diagnostic>,
    /// The least applicability of a fix that `--fix` applies in this file.
    pub fix_threshold: Applicability,
    /// Fixes applied (or, with `--diff`, that would be).
    pub fixed: usize,
    /// The unified diff, with `--diff`, when fixes change the file.
    pub diff: Option<String>,
    /// The fixed text, when fixes changed a text that has no file to write (stdin).
    pub fixed_text: Option<String>,
    pub notices: Vec<Notice>,
    /// For a notebook: the program `text` is, and the cell numbers, to report findings by cell.
    pub notebook: Option<Arc<NumberedProgram>>,
    /// What the file was judged to be (test, example, entry point, library), and why.
    pub code_kind: Option<crate::semantic::Judgement>,
}

impl FileReport {
    /// A path that was not checked (excluded), with nothing to report.
    pub fn unchecked(path: PathBuf) -> Self {
        Self::empty(path)
    }

    fn empty(path: PathBuf) -> Self {
        Self {
            path,
            text: String::new(),
            diagnostics: Vec::new(),
            fix_threshold: Applicability::Safe,
            fixed: 0,
            diff: None,
            fixed_text: None,
            notices: Vec::new(),
            notebook: None,
            code_kind: None,
        }
    }

    pub(super) fn with_notice(path: PathBuf, notice: Notice) -> Self {
        let mut report = Self::empty(path);
        report.notices.push(notice);
        report
    }
}

/// Check the file at `path`, writing fixes back to it in [`FixMode::Apply`].
pub fn check_file(path: &Path, resolver: &Resolver, mode: FixMode) -> FileReport {
    let display = path.to_path_buf();
    let settings = match resolver.settings_for(path) {
        Ok(settings) => settings,
        Err(error) => return FileReport::with_notice(display, Notice::Config(error.to_string())),
    };
    let source = match read_source(path, settings.max_file_size) {
        Ok(Loaded::Text(source)) => source,
        Ok(Loaded::Skipped(skip)) => {
            return FileReport::with_notice(
                display.clone(),
                Notice::Warning(format!("{}: {}", display.display(), skip.describe())),
            );
        }
        Err(error) => {
            return FileReport::with_notice(display.clone(), Notice::Error(format!("{}: {error}", display.display())));
        }
    };
    let report = check_text(&source, path, display.clone(), &settings, mode);
    let Some(fixed) = report.fixed_text.as_deref().filter(|_| mode == FixMode::Apply) else {
        return report;
    };
    match write_atomically(path, &source.restore(fixed)) {
        Ok(()) => {
            // Files checked after this one that call into it must see its fixed text.
            PROJECT.invalidate(path);
            FileReport { fixed_text: None, ..report }
        }
        Err(error) => {
            // The file keeps its findings: report them as they are on disk.
            let mut unchanged = check_text(&source, path, display, &settings, FixMode::Report);
            unchanged.notices.extend(report.notices);
            unchanged.notices.push(Notice::Error(format!(
                "{}: cannot write the fixed file: {error}; the file is unchanged",
                path.display()
            )));
            unchanged
        }
    }
}

/// One project index for the whole run: each project module that the run's files import is
/// summarised once, however many of them import it.
static PROJECT: std::sync::LazyLock<crate::project::ProjectIndex> =
    std::sync::LazyLock::new(crate::project::ProjectIndex::new);

/// Check a text: a notebook's (by its path) with [`check_notebook`], any other with
/// [`check_source`].
pub fn check_text(
    source: &SourceText,
    path: &Path,
    display: PathBuf,
    settings: &ResolvedSettings,
    mode: FixMode,
) -> FileReport {
    if is_notebook(path) {
        check_notebook(source, path, display, settings, mode)
    } else {
        check_source(source, path, display, settings, mode)
    }
}

/// Check a text. `path` locates the text for the rules; `display` is how it is reported. In
/// [`FixMode::Apply`] the fixed text (without byte-order mark) is left in `fixed_text` for the
/// caller to write.
pub fn check_source(
    source: &SourceText,
    path: &Path,
    display: PathBuf,
    settings: &ResolvedSettings,
    mode: FixMode,
) -> FileReport {
    let text = &source.text;
    let judgement = match settings.code_kind {
        Some(kind) => crate::semantic::code_kind::configured(kind),
        None => crate::semantic::code_kind::judge(Some(path), text),
    };
    // The file is judged once: the lint's model takes the judgement as given.
    let context = LintContext {
        path: Some(path),
        project: Some(&PROJECT),
        code_kind: Some(judgement.kind),
        preview: settings.preview,
    };
    let threshold = if settings.unsafe_fixes { Applicability::Unsafe } else { Applicability::Safe };
    let mut report = FileReport::empty(display);
    report.fix_threshold = threshold;
    report.code_kind = Some(judgement);
    if mode == FixMode::Report {
        report.diagnostics = lint_text(text, context, &settings.lint);
        // The text is kept only to show the findings in it.
        if !report.diagnostics.is_empty() {
            report.text = source.text.clone();
        }
        return report;
    }
    if !may_have_findings(text, &settings.lint) {
        return report;
    }
    let outcome = fix_text(text, context, &settings.lint, threshold);
    if outcome.refused_unparsable {
        report.notices.push(Notice::Warning(format!(
            "{}: some fixes were not applied because the result would not parse; please report this as a culint bug",
            report.path.display()
        )));
    }
    if let Some(error) = outcome.syntax_error
        && outcome.remaining.iter().any(|d| by_code(d.code).is_some_and(|rule| rule.fix != FixAvailability::None))
    {
        let at = LineIndex::new(text).location(text, error.start);
        report.notices.push(Notice::Warning(format!(
            "{}:{}:{}: no fixes applied: the file has a syntax error here; fixes resume once it parses",
            report.path.display(),
            at.row,
            at.column
        )));
    }
    report.diagnostics = outcome.remaining;
    report.fixed = outcome.fixed;
    if outcome.text != *text {
        if mode == FixMode::Diff {
            report.diff = Some(unified_diff(text, &outcome.text, &report.path));
        }
        report.fixed_text = Some(outcome.text.clone());
    }
    report.text = outcome.text;
    report
}

pub(super) fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(&name, &name).to_string()
}
