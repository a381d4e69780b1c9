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
    /// In a notebook, the number of the cell the finding is in; `start` and `end` are then
    /// positions in that cell.
    pub cell: Option<usize>,
    pub start: SourceLocation,
    pub end: SourceLocation,
    /// The line index of the report's text, shared by its findings.
    pub lines: Arc<LineIndex>,
}

impl Located<'_> {
    /// Where an offset of the report's text is shown: the notebook cell it is in, if any, and
    /// the row and column (in that cell).
    pub fn place(&self, offset: usize) -> (Option<usize>, SourceLocation) {
        place(self.report, &self.lines, offset)
    }

    /// [`Located::place`] written as `row:column`, after `cell N:` in a notebook.
    pub fn place_text(&self, offset: usize) -> String {
        let (cell, at) = self.place(offset);
        format!("{}{}:{}", cell_prefix(cell), at.row, at.column)
    }
}

/// `cell N:` for a notebook's cell, nothing otherwise: what the text formats put between a
/// notebook's path and the row.
pub fn cell_prefix(cell: Option<usize>) -> String {
    cell.map(|n| format!("cell {n}:")).unwrap_or_default()
}

fn place(report: &FileReport, lines: &LineIndex, offset: usize) -> (Option<usize>, SourceLocation) {
    match &report.notebook {
        None => (None, lines.location(&report.text, offset)),
        Some(notebook) => {
            let (cell, location) = notebook.program.location(offset);
            (notebook.numbers.get(cell).copied(), location)
        }
    }
}

/// Every finding of every report, in report order, with one-based rows and character columns.
pub fn located(reports: &[FileReport]) -> Vec<Located<'_>> {
    let mut out = Vec::new();
    for report in reports.iter().filter(|r| !r.diagnostics.is_empty()) {
        let lines = Arc::new(LineIndex::new(&report.text));
        for diagnostic in &report.diagnostics {
            let (cell, start) = place(report, &lines, diagnostic.range.start);
            let (end_cell, end) = place(report, &lines, diagnostic.range.end);
            // A range that ends in a later cell is shown to the end of its own.
            let end = if end_cell == cell { end } else { start };
            out.push(Located { report, diagnostic, cell, start, end, lines: lines.clone() });
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

/// The message as the text formats show it: a preview finding says so at the end.
pub fn shown_message(diagnostic: &Diagnostic) -> String {
    if diagnostic.is_preview() { format!("{} (preview)", diagnostic.message) } else { diagnostic.message.to_string() }
}

/// Whether a diagnostic's fix would be applied by `--fix` in its file.
pub fn is_applicable(report: &FileReport, diagnostic: &Diagnostic) -> bool {
    diagnostic.fix.as_ref().is_some_and(|fix| {
        fix.applicability >= report.fix_threshold && fix.applicability != crate::fix::Applicability::DisplayOnly
    })
}
