//! Ruff's JSON shape, so tools that read `ruff check --output-format json` read culint too:
//! a list of findings with `code`, `message`, `filename` (absolute), one-based `location` /
//! `end_location` (`row`, `column` in characters), `fix` (or null), `url` and `noqa_row`; plus
//! culint's `name`, `severity`, `knowledge`, `related`, `facts` (what the finding rests on),
//! `preview` and `assumptions` (what a preview finding took for granted) and `code_kind` (what the
//! file was judged to be, and why). In a notebook, `cell` is the one-based number of the cell (counting every cell,
//! as Ruff does), and rows are the cell's; related locations and fix edits carry their `cell` too.

use serde_json::{Value, json};

use crate::fix::Fix;

use super::{Located, RenderOptions, rule_url};

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let values: Vec<Value> = findings.iter().map(|finding| to_json(finding, options)).collect();
    let mut out = serde_json::to_string_pretty(&values).expect("JSON values serialise");
    out.push('\n');
    out
}

fn to_json(finding: &Located<'_>, options: &RenderOptions<'_>) -> Value {
    let diagnostic = finding.diagnostic;
    let path = &finding.report.path;
    let absolute = if path.is_absolute() || path.as_os_str() == "-" { path.clone() } else { options.cwd.join(path) };
    let related: Vec<Value> = diagnostic
        .related
        .iter()
        .map(|related| {
            let mut value = json!({
                "message": related.message,
                "location": finding.place(related.range.start).1,
                "end_location": finding.place(related.range.end).1,
            });
            if let (Some(cell), _) = finding.place(related.range.start) {
                value["cell"] = json!(cell);
            }
            value
        })
        .collect();
    json!({
        "cell": finding.cell,
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "severity": diagnostic.severity,
        "filename": absolute.to_string_lossy(),
        "location": finding.start,
        "end_location": finding.end,
        "fix": diagnostic.fix.as_ref().map(|fix| fix_json(fix, finding)),
        "url": rule_url(diagnostic.code),
        "noqa_row": finding.start.row,
        "knowledge": diagnostic.knowledge,
        "related": related,
        "facts": diagnostic.facts,
        "preview": diagnostic.is_preview(),
        "assumptions": diagnostic.assumptions,
        "code_kind": finding.report.code_kind.as_ref().map(|judgement| json!({
            "kind": judgement.kind.as_str(),
            "reason": judgement.reason,
        })),
    })
}

fn fix_json(fix: &Fix, finding: &Located<'_>) -> Value {
    let edits: Vec<Value> = fix
        .edits
        .iter()
        .map(|edit| {
            let (cell, start) = finding.place(edit.range.start);
            let mut value = json!({
                "content": edit.content,
                "location": start,
                "end_location": finding.place(edit.range.end).1,
            });
            if let Some(cell) = cell {
                value["cell"] = json!(cell);
            }
            value
        })
        .collect();
    json!({ "applicability": fix.applicability.as_str(), "message": fix.title, "edits": edits })
}
