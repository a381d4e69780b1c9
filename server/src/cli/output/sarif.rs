//! SARIF 2.1.0 as GitHub code scanning reads it: one run whose driver lists every rule, and one
//! result per finding with a repository-relative location and, where there is one, the fix.
//! Columns are Unicode code points (`columnKind`), the same columns the other formats show. In a
//! notebook the region is in the cell's own lines, and the result's `properties.cell` is the
//! cell's number.

use serde_json::{Value, json};

use crate::diagnostic::Severity;
use crate::fix::Applicability;
use crate::rules::{RULES, Rule};

use super::{Located, RenderOptions, display_path, rule_url};
use crate::cli::rule::doc_section;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let rules: Vec<Value> = RULES.iter().map(|rule| rule_json(rule)).collect();
    let results: Vec<Value> = findings.iter().map(|finding| result_json(finding, options)).collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "culint",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": env!("CARGO_PKG_REPOSITORY"),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    let mut out = serde_json::to_string_pretty(&log).expect("SARIF values serialise");
    out.push('\n');
    out
}

/// SARIF knows three levels; info and hint are notes.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info | Severity::Hint => "note",
    }
}

fn rule_json(rule: &Rule) -> Value {
    let what = doc_section(rule.doc, "## What it does").unwrap_or(rule.name);
    let short = what.split_once(". ").map_or(what, |(first, _)| first).trim_end_matches('.');
    json!({
        "id": rule.code,
        "name": rule.name,
        "shortDescription": { "text": format!("{short}.") },
        "fullDescription": { "text": what },
        "help": { "text": rule.doc, "markdown": rule.doc },
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": { "level": level(rule.severity) },
        "properties": { "tags": ["culint", rule.code.get(..4).unwrap_or(rule.code)] },
    })
}

fn result_json(finding: &Located<'_>, options: &RenderOptions<'_>) -> Value {
    let diagnostic = finding.diagnostic;
    let uri = artifact_uri(&display_path(&finding.report.path, options.cwd));
    let mut result = json!({
        "ruleId": diagnostic.code,
        "level": level(diagnostic.severity),
        "message": { "text": diagnostic.message },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri },
                "region": {
                    "startLine": finding.start.row,
                    "startColumn": finding.start.column,
                    "endLine": finding.end.row,
                    "endColumn": finding.end.column,
                }
            }
        }],
    });
    // What the finding rests on, and for a preview finding what it assumed.
    result["properties"] = json!({ "facts": diagnostic.facts, "preview": diagnostic.is_preview() });
    if diagnostic.is_preview() {
        result["properties"]["assumptions"] = json!(diagnostic.assumptions);
    }
    if let Some(cell) = finding.cell {
        result["properties"]["cell"] = json!(cell);
    }
    if let Some(index) = RULES.iter().position(|rule| rule.code == diagnostic.code) {
        result["ruleIndex"] = json!(index);
    }
    if let Some(fix) = diagnostic.fix.as_ref().filter(|fix| fix.applicability != Applicability::DisplayOnly) {
        let replacements: Vec<Value> = fix
            .edits
            .iter()
            .map(|edit| {
                let start = finding.place(edit.range.start).1;
                let end = finding.place(edit.range.end).1;
                json!({
                    "deletedRegion": {
                        "startLine": start.row, "startColumn": start.column,
                        "endLine": end.row, "endColumn": end.column,
                    },
                    "insertedContent": { "text": edit.content },
                })
            })
            .collect();
        result["fixes"] = json!([{
            "description": { "text": format!("{} ({} fix)", fix.title, fix.applicability.as_str()) },
            "artifactChanges": [{ "artifactLocation": { "uri": uri }, "replacements": replacements }],
        }]);
    }
    result
}

/// A relative path as a URI reference: `/` separators, with the characters that URIs reserve
/// percent-encoded.
fn artifact_uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(artifact_uri("src/my train#1.py"), "src/my%20train%231.py");
        assert_eq!(artifact_uri("数据.py"), "%E6%95%B0%E6%8D%AE.py");
    }
}
