//! The formats `culint check` prints findings in, one file per format.

mod concise;
mod full;
mod github;
mod json;
mod sarif;
mod statistics;
mod summary;

use std::path::Path;
use std::sync::Arc;

pub use statistics::{render_statistics, render_statistics_json};
pub use summary::{FixSummary, render_summary};

use crate::config::OutputFormat;
use crate::diagnostic::Diagnostic;
use crate::rules::by_code;
use crate::text::{LineIndex, SourceLocation};

use super::check_file::FileReport;

/// Where each rule's documentation is published: the generated pages under `docs/rules/`.
pub const DOCS_BASE_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rules/");

/// The documentation page of a rule code; `None` for pseudo-codes such as `syntax-error`.
pub fn rule_url(code: &str) -> Option<String> {
    by_code(code).map(|rule| format!("{DOCS_BASE_URL}{}.md", rule.code))
}

/// One finding with the file it belongs to and its positions worked out.
pub struct Located<'a> {
    pub report: &'a FileReport,
    pub diagnostic: &'a Diagnostic,
    pub start: SourceLocation,
    pub end: SourceLocation,
    /// The line index of the report's text, shared by its findings.
    pub lines: Arc<LineIndex>,
}

/// Every finding of every report, in report order, with one-based rows and character columns.
pub fn located(reports: &[FileReport]) -> Vec<Located<'_>> {
    let mut out = Vec::new();
    for report in reports.iter().filter(|r| !r.diagnostics.is_empty()) {
        let lines = Arc::new(LineIndex::new(&report.text));
        for diagnostic in &report.diagnostics {
            out.push(Located {
                report,
                diagnostic,
                start: lines.location(&report.text, diagnostic.range.start),
                end: lines.location(&report.text, diagnostic.range.end),
                lines: lines.clone(),
            });
        }
    }
    out
}

/// A path as the output shows it: relative to the current directory when below it, with `/`
/// separators.
pub fn display_path(path: &Path, cwd: &Path) -> String {
    let relative = if path.is_absolute() { path.strip_prefix(cwd).unwrap_or(path) } else { path };
    let relative = relative.strip_prefix(".").unwrap_or(relative);
    relative.to_string_lossy().replace('\\', "/")
}

/// How to render.
pub struct RenderOptions<'a> {
    pub format: OutputFormat,
    pub colour: bool,
    pub cwd: &'a Path,
}

/// Render the findings of `reports` in the chosen format (without the summary line).
pub fn render(reports: &[FileReport], options: &RenderOptions<'_>) -> String {
    let findings = located(reports);
    match options.format {
        OutputFormat::Full => full::render(&findings, options),
        OutputFormat::Concise => concise::render(&findings, options),
        OutputFormat::Json => json::render(&findings, options),
        OutputFormat::Sarif => sarif::render(&findings, options),
        OutputFormat::Github => github::render(&findings, options),
    }
}

/// Whether a diagnostic's fix would be applied by `--fix` in its file.
pub fn is_applicable(report: &FileReport, diagnostic: &Diagnostic) -> bool {
    diagnostic.fix.as_ref().is_some_and(|fix| {
        fix.applicability >= report.fix_threshold && fix.applicability != crate::fix::Applicability::DisplayOnly
    })
}
