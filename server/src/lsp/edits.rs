//! Engine edits (byte ranges) as LSP workspace edits, and the fix-all edit of a document.

use std::collections::HashMap;

use similar::{DiffOp, TextDiff};
use tower_lsp_server::ls_types::{
    DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

use crate::fix::Edit;
use crate::lint::{LintContext, fix_text};
use crate::lsp::position::PositionMapper;
use crate::lsp::session::Snapshot;
use crate::text::TextRange;

pub fn text_edits(edits: &[Edit], mapper: &PositionMapper<'_>) -> Vec<TextEdit> {
    edits.iter().map(|edit| TextEdit { range: mapper.range(edit.range), new_text: edit.content.to_string() }).collect()
}

/// Edits for one document. With a version (when the client supports versioned edits) the client
/// refuses the edit if the document changed since, instead of applying it to the wrong text.
pub fn workspace_edit(uri: &Uri, version: Option<i32>, edits: Vec<TextEdit>) -> WorkspaceEdit {
    match version {
        Some(version) => WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version: Some(version) },
                edits: edits.into_iter().map(OneOf::Left).collect(),
            }])),
            ..WorkspaceEdit::default()
        },
        None => WorkspaceEdit { changes: Some(HashMap::from([(uri.clone(), edits)])), ..WorkspaceEdit::default() },
    }
}

/// The result of fixing a whole document.
pub struct FixAll {
    /// Edits that turn the snapshot's text into the fixed text, smallest first.
    pub edits: Vec<Edit>,
    pub fixed: usize,
}

/// Apply every fix the settings allow (safe only, or unsafe too with `unsafeFixes` or the
/// configuration's `unsafe-fixes`) until stable,
/// through the same `fix_text` as `culint check --fix`.
pub fn fix_all(snapshot: &Snapshot) -> FixAll {
    if snapshot.excluded {
        return FixAll { edits: Vec::new(), fixed: 0 };
    }
    let context = LintContext {
        path: snapshot.path.as_deref(),
        project: Some(&snapshot.project),
        code_kind: snapshot.code_kind,
        preview: snapshot.preview,
    };
    let outcome = fix_text(&snapshot.text, context, &snapshot.settings, snapshot.fix_threshold);
    FixAll { edits: diff(&snapshot.text, &outcome.text), fixed: outcome.fixed }
}

/// Line-granular edits from `old` to `new`: small edits keep the client's cursor, folds and
/// markers where they were, which one whole-document replacement would not.
pub fn diff(old: &str, new: &str) -> Vec<Edit> {
    if old == new {
        return Vec::new();
    }
    let diff = TextDiff::configure().algorithm(similar::Algorithm::Myers).diff_lines(old, new);
    let old_lines: Vec<&str> = diff.old_slices().to_vec();
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    let old_starts = line_offsets(&old_lines);
    let new_starts = line_offsets(&new_lines);
    let mut edits: Vec<Edit> = Vec::new();
    for op in diff.ops() {
        let (old_range, new_range) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert { old_index, new_index, new_len } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                (old_index..old_index + old_len, new_index..new_index + new_len)
            }
        };
        let range = TextRange::new(old_starts[old_range.start], old_starts[old_range.end]);
        let content = new[new_starts[new_range.start]..new_starts[new_range.end]].to_owned();
        match edits.last_mut() {
            Some(last) if last.range.end == range.start => {
                last.range.end = range.end;
                last.content = format!("{}{content}", last.content).into();
            }
            _ => edits.push(Edit::replacement(range, content)),
        }
    }
    edits
}

/// Start offset of every line, plus the total length.
fn line_offsets(lines: &[&str]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    offsets.push(0);
    for line in lines {
        at += line.len();
        offsets.push(at);
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::{Applicability, apply_fixes};
    use crate::lsp::position::PositionEncoding;

    fn apply(old: &str, edits: Vec<Edit>) -> String {
        let fix = crate::fix::Fix::new("all", Applicability::Safe, edits);
        apply_fixes(old, [&fix], Applicability::Safe).text
    }

    #[test]
    fn diff_edits_reproduce_the_new_text() {
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc\n", "a\nc\n"),
            ("a\nc", "a\nb\nc"),
            ("import torch\r\nx = 1\r\n", "import os\r\nimport torch\r\nx = 1\r\n"),
            (
                "# 注释\nfor b in d:\n    loss.backward()\n",
                "# 注释\nfor b in d:\n    loss.backward()\ntorch.cuda.empty_cache()\n",
            ),
            ("no newline", "no newline at all"),
            ("", "x\n"),
            ("x\n", ""),
        ];
        for (old, new) in cases {
            let edits = diff(old, new);
            assert_eq!(apply(old, edits), new, "{old:?} -> {new:?}");
        }
        assert!(diff("same\n", "same\n").is_empty());
    }

    #[test]
    fn unchanged_lines_are_not_in_the_edits() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nb\nX\nd\ne\n";
        let edits = diff(old, new);
        assert_eq!(edits, vec![Edit::replacement(TextRange::new(4, 6), "X\n")]);
    }

    #[test]
    fn versioned_edits_carry_the_version() {
        let uri: Uri = "file:///w/t.py".parse().unwrap();
        let text = "a😀b\n";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        let edits = text_edits(&[Edit::insertion(5, "!")], &mapper);
        assert_eq!(edits[0].range.start.character, 3);
        let versioned = workspace_edit(&uri, Some(4), edits.clone());
        let Some(DocumentChanges::Edits(changes)) = versioned.document_changes else { panic!("document changes") };
        assert_eq!(changes[0].text_document.version, Some(4));
        let plain = workspace_edit(&uri, None, edits);
        assert_eq!(plain.changes.unwrap()[&uri].len(), 1);
    }
}
