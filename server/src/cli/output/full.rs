//! The default output: for each finding a code frame around the span, the message, and a
//! `help:` line with the fix, after rustc and Ruff.

use annotate_snippets::renderer::DecorStyle;
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::Applicability;
use crate::text::{LineIndex, TextRange};

use super::{Located, RenderOptions, display_path, is_applicable};

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

fn render_one(finding: &Located<'_>, path: &str, renderer: &Renderer) -> String {
    let diagnostic = finding.diagnostic;
    let text = &finding.report.text;
    let lines = &finding.lines;
    let (source, offset, line_start) = window(text, lines, diagnostic.range);
    let span = clamp(diagnostic.range, offset, source.len());
    let mut snippet = Snippet::source(source)
        .line_start(line_start)
        .path(path)
        .fold(false)
        .annotation(AnnotationKind::Primary.span(span));
    for related in &diagnostic.related {
        if related.range.start >= offset && related.range.end <= offset + source.len() {
            snippet = snippet.annotation(
                AnnotationKind::Context.span(clamp(related.range, offset, source.len())).label(&*related.message),
            );
        }
    }
    let marker = if is_applicable(finding.report, diagnostic) { "[*] " } else { "" };
    let title = format!("{marker}{}", diagnostic.message);
    let mut groups: Vec<Group<'_>> =
        vec![level(diagnostic.severity).primary_title(title).id(diagnostic.code).element(snippet)];
    for related in &diagnostic.related {
        if related.range.start < offset || related.range.end > offset + source.len() {
            let location = lines.location(text, related.range.start);
            groups.push(Group::with_title(
                Level::NOTE
                    .secondary_title(format!("{} (at {path}:{}:{})", related.message, location.row, location.column)),
            ));
        }
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
