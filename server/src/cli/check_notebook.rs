//! `culint check` on a notebook: lint its code cells as one program, report by cell, and put
//! fixes into the cell sources alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::ResolvedSettings;
use crate::notebook::{CellKind, NotebookFile, NumberedProgram, Program};

use super::check_file::{FileReport, FixMode, Notice, check_source, unified_diff};
use super::source::SourceText;

/// Check the notebook whose text is `source`, as [`check_source`] checks a Python text: with
/// fixes, `fixed_text` is the notebook's new text, changed in its cell sources only.
pub fn check_notebook(
    source: &SourceText,
    path: &Path,
    display: PathBuf,
    settings: &ResolvedSettings,
    mode: FixMode,
) -> FileReport {
    let file = match NotebookFile::parse(&source.text) {
        Ok(file) => file,
        Err(reason) => {
            let message = format!("{}: {reason}", display.display());
            let notice = if reason.starts_with("skipped") { Notice::Warning(message) } else { Notice::Error(message) };
            return FileReport::with_notice(display, notice);
        }
    };
    let code: Vec<usize> = (0..file.cells.len()).filter(|&i| file.cells[i].kind == CellKind::Code).collect();
    let program = Program::new(code.iter().map(|&i| &file.cells[i].source));
    let numbered =
        |program: Program| Arc::new(NumberedProgram { program, numbers: code.iter().map(|i| i + 1).collect() });

    let program_source = SourceText { text: program.text.clone(), had_bom: false };
    let mut report = check_source(&program_source, path, display.clone(), settings, mode);
    report.diff = None;
    let Some(fixed) = report.fixed_text.take() else {
        report.notebook = Some(numbered(program));
        return report;
    };
    let Some(fixed_cells) = program.cells_after(&fixed) else {
        // Never expected: a fix that crossed a cell boundary or dropped a masked IPython line.
        let mut unchanged = check_source(&program_source, path, display, settings, FixMode::Report);
        unchanged.notices.push(Notice::Warning(format!(
            "{}: fixes not applied: they would move code across cells; please report this as a culint bug",
            path.display()
        )));
        unchanged.notebook = Some(numbered(program));
        return unchanged;
    };
    let mut sources: Vec<Option<String>> = vec![None; file.cells.len()];
    for (&index, text) in code.iter().zip(&fixed_cells) {
        sources[index] = Some(text.clone());
    }
    let fixed_file = file.with_sources(&source.text, &sources);
    let fixed_program = Program::new(&fixed_cells);
    if fixed_program.text != report.text {
        // The cells as written mask to another program than the one fixed: report on theirs.
        let relinted = check_source(
            &SourceText { text: fixed_program.text.clone(), had_bom: false },
            path,
            display.clone(),
            settings,
            FixMode::Report,
        );
        report.diagnostics = relinted.diagnostics;
        report.text = fixed_program.text.clone();
    }
    report.notebook = Some(numbered(fixed_program));
    if mode == FixMode::Diff {
        report.diff = Some(unified_diff(&source.text, &fixed_file, &report.path));
    }
    // The caller writes the file (or prints it, for stdin), as for a Python file.
    report.fixed_text = Some(fixed_file);
    report
}
