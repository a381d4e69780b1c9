//! A source document: its text, its syntax tree and the edits that keep the two in step.
//!
//! The CLI builds a document once from a file. The language server keeps one per open buffer and
//! feeds it incremental changes: the rope takes the text edit, the tree is told about it with
//! `Tree::edit`, and the reparse reuses the old tree, so a keystroke costs about a millisecond
//! even in a ten-thousand-line script.

use ropey::Rope;
use tree_sitter::{InputEdit, Point, Tree};

use crate::parse::parse;
use crate::text::TextRange;

pub struct Document {
    rope: Rope,
    tree: Tree,
    version: i32,
    /// The text as one string, rebuilt lazily after edits: the rules read contiguous text.
    text_cache: Option<String>,
}

impl Document {
    pub fn new(text: &str, version: i32) -> Self {
        Self { rope: Rope::from_str(text), tree: parse(text, None), version, text_cache: Some(text.to_owned()) }
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn text(&mut self) -> &str {
        self.text_cache.get_or_insert_with(|| self.rope.to_string())
    }

    /// The text without touching the cache, for callers that only hold `&self`.
    pub fn to_text(&self) -> String {
        match &self.text_cache {
            Some(text) => text.clone(),
            None => self.rope.to_string(),
        }
    }

    /// Replace the bytes in `range` with `new_text`, then update the tree incrementally.
    /// `range` must lie on char boundaries of the current text.
    pub fn edit(&mut self, range: TextRange, new_text: &str) {
        let start_char = self.rope.byte_to_char(range.start);
        let end_char = self.rope.byte_to_char(range.end);
        let start_position = self.point(range.start);
        let old_end_position = self.point(range.end);

        self.rope.remove(start_char..end_char);
        self.rope.insert(start_char, new_text);
        self.text_cache = None;

        let new_end_byte = range.start + new_text.len();
        let edit = InputEdit {
            start_byte: range.start,
            old_end_byte: range.end,
            new_end_byte,
            start_position,
            old_end_position,
            new_end_position: self.point(new_end_byte),
        };
        self.tree.edit(&edit);
        let text = self.rope.to_string();
        self.tree = parse(&text, Some(&self.tree));
        self.text_cache = Some(text);
    }

    pub fn set_version(&mut self, version: i32) {
        self.version = version;
    }

    /// Replace the whole text (a full-document sync) and reparse from scratch.
    pub fn replace(&mut self, text: &str, version: i32) {
        *self = Self::new(text, version);
    }

    /// Tree-sitter's point: zero-based row and byte column.
    fn point(&self, byte: usize) -> Point {
        let line = self.rope.byte_to_line(byte);
        Point { row: line, column: byte - self.rope.line_to_byte(line) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_edit_matches_a_fresh_parse() {
        let mut doc = Document::new("import torch\nx = torch.ones(3)\n", 1);
        let at = "import torch\nx = torch.".len();
        doc.edit(TextRange::new(at, at + 4), "zeros");
        doc.edit(TextRange::empty(0), "# 注释 😀\n");
        let text = doc.text().to_owned();
        assert_eq!(text, "# 注释 😀\nimport torch\nx = torch.zeros(3)\n");
        let fresh = parse(&text, None);
        assert_eq!(doc.tree().root_node().to_sexp(), fresh.root_node().to_sexp());
    }
}
