//! The default output: for each finding a code frame around the span, the message,
//! `note:` lines with what the finding rests on (and, for a preview finding, what it assumed), and a
//! `help:` line with the fix, after rustc and Ruff. A notebook's frame is cut from the finding's
//! cell, numbered by the cell's lines, under `path:cell N`.

use annotate_snippets::renderer::DecorStyle;
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::Applicability;
use crate::text::{LineIndex, TextRange};

use super::{Located, RenderOptions, cell_prefix, display_path, is_applicable};

/// Lines of context shown above and below the reported lines.
const CONTEXT_LINES: usize = 2;

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let renderer = if options.colour {
        Renderer::styled().decor_style(DecorStyle::Unicode)
    } else {
        Renderer::plain().decor_style(DecorStyle::Ascii)
    };
    let mut out = String::new();
    for finding in findings {
        let path = display_path(&finding.report.path, options.cwd);
        let report = render_one(finding, &path, &renderer);
        out.push_str(&report);
        out.push_str("\n\n");
    }
    out
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::INFO,
        Severity::Hint => Level::NOTE.with_name("hint"),
    }
}

/// A window of whole lines around `range`: the source slice, its first byte offset and its
/// one-based first line number.
fn window<'t>(text: &'t str, lines: &LineIndex, range: TextRange) -> (&'t str, usize, usize) {
    let first = lines.line_of(range.start).saturating_sub(CONTEXT_LINES);
    // The empty "line" after a final newline is not shown as context.
    let mut last_line = lines.line_count() - 1;
    if last_line > 0 && lines.line_start(last_line) == text.len() {
        last_line -= 1;
    }
    let last = (lines.line_of(range.end) + CONTEXT_LINES).min(last_line).max(lines.line_of(range.end));
    let start = lines.line_start(first);
    let end = lines.line_range(text, last).end;
    (&text[start..end], start, first + 1)
}

/// The text a finding's code frame is cut from: the report's text, or in a notebook the text of
/// the finding's cell, with the finding's range in it and the path it is shown under.
struct Frame<'a> {
    text: &'a str,
    lines: &'a LineIndex,
    /// The program cell, for a notebook.
    cell: Option<usize>,
    label: String,
}

impl Frame<'_> {
    /// A range of the report's text as a range of the frame's, if it lies in the frame's text.
    fn range(&self, finding: &Located<'_>, range: TextRange) -> Option<TextRange> {
        let Some(cell) = self.cell else { return Some(range) };
        let program = &finding.report.notebook.as_ref()?.program;
        let (in_cell, range) = program.locate_range(range);
        (in_cell == cell).then_some(range)
    }
}

fn frame<'a>(finding: &'a Located<'_>, path: &str) -> Frame<'a> {
    match &finding.report.notebook {
        None => Frame { text: &finding.report.text, lines: &finding.lines, cell: None, label: path.to_owned() },
        Some(notebook) => {
            let cell = notebook.program.locate(finding.diagnostic.range.start).cell;
            Frame {
                text: notebook.program.cell_text(cell),
                lines: notebook.program.cell_lines(cell),
                cell: Some(cell),
                label: format!("{path}:{}", cell_prefix(finding.cell).trim_end_matches(':')),
            }
        }
    }
}

fn render_one(finding: &Located<'_>, path: &str, renderer: &Renderer) -> String {
    let diagnostic = finding.diagnostic;
    let frame = frame(finding, path);
    let primary = frame.range(finding, diagnostic.range).unwrap_or(diagnostic.range);
    let (source, offset, line_start) = window(frame.text, frame.lines, primary);
    let span = clamp(primary, offset, source.len());
    let mut snippet = Snippet::source(source)
        .line_start(line_start)
        .path(frame.label.as_str())
        .fold(false)
        .annotation(AnnotationKind::Primary.span(span));
    let in_window = |range: TextRange| range.start >= offset && range.end <= offset + source.len();
    let related: Vec<(Option<TextRange>, &crate::diagnostic::Related)> =
        diagnostic.related.iter().map(|related| (frame.range(finding, related.range), related)).collect();
    for (range, related) in &related {
        if let Some(range) = range.filter(|r| in_window(*r)) {
            snippet = snippet
                .annotation(AnnotationKind::Context.span(clamp(range, offset, source.len())).label(&*related.message));
        }
    }
    let marker = if is_applicable(finding.report, diagnostic) { "[*] " } else { "" };
    let title = format!("{marker}{}", super::shown_message(diagnostic));
    let mut groups: Vec<Group<'_>> =
        vec![level(diagnostic.severity).primary_title(title).id(diagnostic.code).element(snippet)];
    for (range, related) in &related {
        if !range.is_some_and(in_window) {
            let location = finding.place_text(related.range.start);
            groups.push(Group::with_title(
                Level::NOTE.secondary_title(format!("{} (at {path}:{location})", related.message)),
            ));
        }
    }
    for fact in &diagnostic.facts {
        groups.push(Group::with_title(Level::NOTE.secondary_title(format!("rests on: {fact}"))));
    }
    for assumption in &diagnostic.assumptions {
        groups.push(Group::with_title(Level::NOTE.secondary_title(format!("assumes: {assumption}"))));
    }
    if let Some(help) = help_line(diagnostic) {
        groups.push(Group::with_title(Level::HELP.secondary_title(help)));
    }
    renderer.render(&groups)
}

/// `range` relative to a window that starts at `offset`, kept inside the window.
fn clamp(range: TextRange, offset: usize, len: usize) -> std::ops::Range<usize> {
    let start = range.start.saturating_sub(offset).min(len);
    let end = range.end.saturating_sub(offset).clamp(start, len);
    start..end
}

fn help_line(diagnostic: &Diagnostic) -> Option<String> {
    let fix = diagnostic.fix.as_ref()?;
    Some(match fix.applicability {
        Applicability::Safe => fix.title.to_string(),
        Applicability::Unsafe => format!("{} (unsafe fix: applied with `--fix --unsafe-fixes`)", fix.title),
        Applicability::DisplayOnly => format!("{} (suggestion only: never applied automatically)", fix.title),
    })
}
