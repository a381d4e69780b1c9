//! What hover shows of a rule: its doc and the knowledge entry it leads to, for the findings at
//! a place in a file or a notebook cell.

use crate::diagnostic::Diagnostic;
use crate::knowledge::{self, Lang};
use crate::rules::Rule;
use crate::text::TextRange;

/// Docs of the rules flagged at `offset`, the narrowest finding's range first.
pub fn diagnostic_hover(diagnostics: &[Diagnostic], offset: usize, lang: Lang) -> Option<(TextRange, String)> {
    let mut hits: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| {
            d.range.start <= offset && (offset < d.range.end || (d.range.is_empty() && offset == d.range.start))
        })
        .collect();
    hits.sort_by_key(|d| d.range.len());
    let range = hits.first()?.range;
    let mut seen: Vec<&str> = Vec::new();
    let sections: Vec<String> = hits
        .iter()
        .filter(|d| {
            let new = !seen.contains(&d.code);
            seen.push(d.code);
            new
        })
        .map(|d| match crate::rules::by_code(d.code) {
            Some(rule) => rule_markdown(rule, lang),
            None => format!("**{}**: {}", d.code, d.message),
        })
        .collect();
    Some((range, sections.join("\n\n---\n\n")))
}

/// A rule's doc under a heading with its code and name (the same text as `culint rule`), then
/// the knowledge entry it links to: the runtime error this code leads to, and what works.
pub fn rule_markdown(rule: &Rule, lang: Lang) -> String {
    // The doc opens with its own `# name (CODE)` title, which this heading replaces.
    let doc = rule.doc.trim();
    let body = doc.strip_prefix('#').and_then(|rest| rest.split_once('\n')).map_or(doc, |(_, body)| body.trim_start());
    let mut markdown = format!("### {} `{}`\n\n{}", rule.code, rule.name, body);
    if let Some(entry) = rule.knowledge.and_then(|id| knowledge::builtin().entry(id)) {
        markdown.push_str("\n\n---\n\n");
        markdown.push_str(entry.to_markdown(lang).trim_end());
    }
    markdown
}
