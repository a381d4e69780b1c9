//! Building blocks for fixes that move, insert and wrap statements without breaking the file:
//! they keep the file's line endings and indentation, and refuse shapes they cannot edit safely.

use tree_sitter::Node;

use crate::fix::Edit;
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast};
use crate::text::{TextRange, indentation_at, line_ending, line_start};

/// The byte range of the whole lines a statement occupies (indentation and line break included),
/// when the statement is alone on them. `None` when it shares a line with other code.
pub fn own_lines(text: &str, statement: Node<'_>) -> Option<TextRange> {
    let line_start = line_start(text, statement.start_byte());
    if !text[line_start..statement.start_byte()].trim().is_empty() {
        return None;
    }
    let rest = &text[statement.end_byte()..];
    let line_end = rest.find('\n').map_or(text.len(), |i| statement.end_byte() + i + 1);
    let trailing = text[statement.end_byte()..line_end].trim();
    if !(trailing.is_empty() || trailing.starts_with('#')) {
        return None;
    }
    Some(TextRange::new(line_start, line_end))
}

/// The text of a statement's lines without indentation and line break, trailing comment kept.
pub fn statement_line_text<'a>(text: &'a str, statement: Node<'_>) -> Option<&'a str> {
    let lines = own_lines(text, statement)?;
    Some(text[statement.start_byte()..lines.end].trim_end_matches(['\n', '\r']))
}

/// Whether removing the `taken` statements would leave `statement`'s block empty, with
/// `statement` the first of them there: it is the one that leaves `pass` behind.
fn leaves_block_empty<'a>(model: &Model<'a>, statement: Node<'a>, taken: &[Node<'a>]) -> bool {
    model.parent(statement).is_some_and(|block| {
        let mut cursor = block.walk();
        // Reading stops at the first statement that stays: a long body need not be read to its end.
        let mut staying = block.named_children(&mut cursor).filter(|c| c.kind() != "comment");
        block.kind() == "block"
            && staying.next().is_some_and(|first| first.id() == statement.id())
            && staying.all(|c| taken.iter().any(|t| t.id() == c.id()))
    })
}

/// Remove a statement so it can be re-inserted elsewhere: the removal edit and the text to move.
/// A trailing comment moves with the statement, unless the statement must leave `pass` behind,
/// in which case the comment stays there.
pub fn take_statement<'a>(model: &Model<'a>, statement: Node<'a>) -> Option<(Edit, String)> {
    take(model, statement, leaves_block_empty(model, statement, &[statement]))
}

/// [`take_statement`] for several statements moved together, in the order given: where they
/// would leave a block empty, the first of them there leaves `pass` behind.
pub fn take_statements<'a>(model: &Model<'a>, statements: &[Node<'a>]) -> Option<Vec<(Edit, String)>> {
    statements.iter().map(|s| take(model, *s, leaves_block_empty(model, *s, statements))).collect()
}

fn take<'a>(model: &Model<'a>, statement: Node<'a>, only: bool) -> Option<(Edit, String)> {
    let text = model.text;
    let removal = deletion(text, statement, only)?;
    let moved =
        if only { text[statement.byte_range()].to_owned() } else { statement_line_text(text, statement)?.to_owned() };
    Some((removal, moved))
}

/// Delete a statement's lines. A statement alone in its block becomes `pass` so the block stays valid.
pub fn delete_statement<'a>(model: &Model<'a>, statement: Node<'a>) -> Option<Edit> {
    deletion(model.text, statement, leaves_block_empty(model, statement, &[statement]))
}

/// [`delete_statement`] once it is known whether the statement is `only` one in its block.
fn deletion(text: &str, statement: Node<'_>, only: bool) -> Option<Edit> {
    let lines = own_lines(text, statement)?;
    if only {
        return Some(Edit::replacement(TextRange::of(statement), "pass"));
    }
    Some(Edit::deletion(lines))
}

/// The offset of the end of the line that holds `offset`, before its line break.
pub fn end_of_line(text: &str, offset: usize) -> usize {
    let rest = &text[offset..];
    let end = rest.find('\n').map_or(text.len(), |i| offset + i);
    if end > offset && text.as_bytes()[end - 1] == b'\r' { end - 1 } else { end }
}

/// Insert `line` as a new statement after `anchor`, at `indent`.
pub fn insert_line_after(text: &str, anchor: Node<'_>, indent: &str, line: &str) -> Edit {
    let at = end_of_line(text, anchor.end_byte());
    Edit::insertion(at, format!("{}{indent}{line}", line_ending(text)))
}

/// Insert `line` as a new statement before `anchor`, at the anchor's indentation.
pub fn insert_line_before(text: &str, anchor: Node<'_>, line: &str) -> Option<Edit> {
    let line_start = line_start(text, anchor.start_byte());
    let indent = &text[line_start..anchor.start_byte()];
    if !indent.trim().is_empty() {
        return None;
    }
    Some(Edit::insertion(line_start, format!("{indent}{line}{}", line_ending(text))))
}

/// One level of indentation as the file writes it below `header` (a `for`, `def` or `with`).
pub fn indent_unit(text: &str, header: Node<'_>) -> String {
    let outer = indentation_at(text, header.start_byte());
    if let Some(body) = header.field("body").and_then(|b| b.named_child(0)) {
        let inner = indentation_at(text, body.start_byte());
        if inner.len() > outer.len() && inner.starts_with(outer) {
            return inner[outer.len()..].to_owned();
        }
    }
    "    ".to_owned()
}

/// Whether any string literal in `range` spans lines: re-indenting those lines would change it.
pub fn has_multiline_string(model: &Model<'_>, range: TextRange) -> bool {
    // Start from the smallest node around the range, not the root: a search from the root
    // would visit every top-level statement for each question, which is quadratic in a long
    // script. The callers' ranges are whole statements, which never lie inside a string, so no
    // ancestor of that node can be one.
    let top = model.descendant_for_byte_range(range.start, range.end).unwrap_or_else(|| model.tree.root_node());
    let mut stack = vec![top];
    let mut cursor = top.walk();
    while let Some(node) = stack.pop() {
        // A node on one line holds no string that spans lines: most of a statement's nodes are
        // passed over without a look at their children.
        if node.start_position().row == node.end_position().row || !TextRange::of(node).intersects(range) {
            continue;
        }
        if matches!(node.kind(), "string" | "concatenated_string") {
            return true;
        }
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

/// Re-indent whole lines by prefixing each non-blank line with `unit`.
pub fn indent_lines(text: &str, unit: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            out.push_str(unit);
        }
        out.push_str(line);
    }
    out
}

/// The local name under which a module is imported (`torch`, or `T` after `import torch as T`),
/// plus an edit that adds `import <module>` when the file has none.
pub fn module_reference(model: &Model<'_>, module: &str) -> (String, Option<Edit>) {
    let source = model.text;
    for statement in &model.imports.statements {
        if statement.is_from || !statement.top_level {
            continue;
        }
        let node = model.descendant_for_byte_range(statement.range.start_byte, statement.range.end_byte);
        let Some(node) = node.filter(|n| n.kind() == "import_statement") else { continue };
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            match name.kind() {
                "dotted_name" if ast::text(name, source).split('.').next() == Some(module) => {
                    return (module.to_owned(), None);
                }
                "aliased_import" if name.field("name").is_some_and(|n| ast::text(n, source) == module) => {
                    let alias = name.field("alias").map_or(module, |a| ast::text(a, source));
                    return (alias.to_owned(), None);
                }
                _ => {}
            }
        }
    }
    (module.to_owned(), Some(add_import(model, &format!("import {module}"))))
}

/// An edit that adds an import line after the module's last top-level import (or at the top,
/// after a docstring and `from __future__` imports). Only the imports before the first statement
/// the parser could not read count: a line placed after broken text can be swallowed by it, and
/// the next fix run would add the import again.
pub fn add_import(model: &Model<'_>, line: &str) -> Edit {
    let text = model.text;
    let eol = line_ending(text);
    let root = model.tree.root_node();
    let mut cursor = root.walk();
    let mut anchor = None;
    for child in root.named_children(&mut cursor) {
        if child.has_error() {
            break;
        }
        match child.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => anchor = Some(child),
            "expression_statement"
                if anchor.is_none() && child.named_child(0).is_some_and(|s| s.kind() == "string") =>
            {
                anchor = Some(child)
            }
            "comment" => {}
            _ => break,
        }
    }
    match anchor {
        Some(anchor) => insert_line_after(text, anchor, "", line),
        None => {
            // After a shebang or encoding comment block at the top, else at the very start.
            let start =
                root.named_child(0).filter(|c| c.kind() != "comment").map_or(0, |c| line_start(text, c.start_byte()));
            let start = start.max(leading_comment_end(text));
            let bom = if text.starts_with('\u{feff}') && start == 0 { '\u{feff}'.len_utf8() } else { 0 };
            Edit::insertion(start.max(bom), format!("{line}{eol}"))
        }
    }
}

fn leading_comment_end(text: &str) -> usize {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches('\u{feff}').trim();
        if trimmed.starts_with("#!") || trimmed.starts_with("# -*-") || trimmed.starts_with("# coding") {
            offset += line.len();
        } else {
            break;
        }
    }
    offset
}
