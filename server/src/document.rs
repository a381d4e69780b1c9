//! A source document: its text, its syntax tree and the edits that keep the two in step.
//!
//! The CLI builds a document once from a file. The language server keeps one per open buffer and
//! feeds it incremental changes: the rope takes the text edit, the tree is told about it with
//! `Tree::edit`, and the reparse reuses the old tree, so a keystroke costs about a millisecond
//! even in a ten-thousand-line script.

use std::sync::Arc;

use ropey::Rope;
use tree_sitter::{InputEdit, Point, Tree};

use crate::parse::parse;
use crate::text::TextRange;

/// A buffer's text, shared with lint snapshots and the project index rather than copied. A
/// `String` behind the `Arc`, not a `str`: an `Arc<str>` is made by copying the text once more
/// after each edit, and on a large script that copy is a third of a megabyte a keystroke.
pub type SharedText = Arc<String>;

pub struct Document {
    rope: Rope,
    /// The text as one string: the rules read contiguous text.
    text: SharedText,
    /// `None` after [`Document::drop_tree`]: a syntax tree takes many times the memory of its
    /// text, so buffers that sit idle give theirs up and reparse when next needed.
    tree: Option<Tree>,
    /// Edited since the last parse: the tree has been told of the edits but not reparsed.
    reparse_pending: bool,
    version: i32,
}

impl Document {
    pub fn new(text: &str, version: i32) -> Self {
        let tree = Some(parse(text, None));
        Self { rope: Rope::from_str(text), text: Arc::new(text.to_owned()), tree, reparse_pending: false, version }
    }

    /// A document whose tree is parsed on first use.
    pub fn unparsed(text: &str, version: i32) -> Self {
        Self {
            rope: Rope::from_str(text),
            text: Arc::new(text.to_owned()),
            tree: None,
            reparse_pending: false,
            version,
        }
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    /// The syntax tree, reparsed first if it was dropped or edited.
    pub fn tree(&mut self) -> &Tree {
        self.reparse();
        self.tree.get_or_insert_with(|| parse(&self.text, None))
    }

    /// The syntax tree if the document holds one of its text.
    pub fn cached_tree(&self) -> Option<&Tree> {
        self.tree.as_ref().filter(|_| !self.reparse_pending)
    }

    /// Give up the syntax tree until it is needed again.
    pub fn drop_tree(&mut self) {
        drop(self.take_tree());
    }

    /// [`Document::drop_tree`], handing the tree over to be freed elsewhere: freeing a large
    /// tree reads memory all over it.
    pub fn take_tree(&mut self) -> Option<Tree> {
        self.reparse_pending = false;
        self.tree.take()
    }

    /// Take a tree of the current text that was parsed elsewhere (by a lint, off the session's
    /// lock) for a buffer that holds none. A buffer that has one keeps its own.
    pub fn keep_tree(&mut self, tree: &Tree) {
        if self.tree.is_none() {
            self.tree = Some(tree.clone());
            self.reparse_pending = false;
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn shared_text(&self) -> SharedText {
        Arc::clone(&self.text)
    }

    /// Replace the bytes in `range` with `new_text`, then update the tree incrementally.
    /// `range` must lie on char boundaries of the current text.
    pub fn edit(&mut self, range: TextRange, new_text: &str) {
        self.edit_text(range, new_text);
        self.reparse();
    }

    /// [`Document::edit`] without the reparse, which [`Document::reparse`] then makes once for
    /// all the edits of a change. Until then the tree is not of the text: it is not handed out.
    pub fn edit_text(&mut self, range: TextRange, new_text: &str) {
        let start_char = self.rope.byte_to_char(range.start);
        let end_char = self.rope.byte_to_char(range.end);
        let (start_position, old_end_position) = (self.point(range.start), self.point(range.end));
        self.rope.remove(start_char..end_char);
        self.rope.insert(start_char, new_text);
        let new_end_byte = range.start + new_text.len();
        let edit = InputEdit {
            start_byte: range.start,
            old_end_byte: range.end,
            new_end_byte,
            start_position,
            old_end_position,
            new_end_position: self.point(new_end_byte),
        };
        if let Some(tree) = &mut self.tree {
            tree.edit(&edit);
        }
        // The new text spliced from the old, which the rope holds too: collecting the rope's
        // chunks goes through `Display`, a formatter call per chunk, several times the copy.
        let mut text = String::with_capacity(self.text.len() - range.len() + new_text.len());
        text.push_str(&self.text[..range.start]);
        text.push_str(new_text);
        text.push_str(&self.text[range.end..]);
        debug_assert_eq!(text.len(), self.rope.len_bytes());
        self.text = Arc::new(text);
        self.reparse_pending = true;
    }

    /// Reparse after [`Document::edit_text`], against the tree before the edits.
    pub fn reparse(&mut self) {
        if !std::mem::take(&mut self.reparse_pending) {
            return;
        }
        // A buffer that gave its tree up is parsed by its next lint, on the lint's thread: a
        // parse from scratch of a large file takes tens of milliseconds.
        if let Some(tree) = &self.tree {
            self.tree = Some(parse(&self.text, Some(tree)));
        }
    }

    pub fn set_version(&mut self, version: i32) {
        self.version = version;
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

    /// A buffer without a tree is not parsed by an edit (that is a lint's work, off the
    /// session's lock), but on demand, or when a tree parsed elsewhere is handed to it.
    #[test]
    fn a_dropped_tree_comes_back_on_demand_or_from_a_lint() {
        let mut doc = Document::new("import torch\nx = 1\n", 1);
        doc.drop_tree();
        assert!(doc.cached_tree().is_none());
        assert_eq!(doc.tree().root_node().to_sexp(), parse("import torch\nx = 1\n", None).root_node().to_sexp());
        doc.drop_tree();
        let at = "import torch\nx = ".len();
        doc.edit(TextRange::new(at, at + 1), "2");
        assert_eq!(doc.text(), "import torch\nx = 2\n");
        assert!(doc.cached_tree().is_none());
        let parsed_by_a_lint = parse(doc.text(), None);
        doc.keep_tree(&parsed_by_a_lint);
        let fresh = parse(doc.text(), None).root_node().to_sexp();
        assert_eq!(doc.cached_tree().map(|t| t.root_node().to_sexp()), Some(fresh.clone()));
        // Edited again, it is reparsed incrementally; a tree handed over now is not taken.
        doc.edit(TextRange::new(at, at + 1), "3");
        doc.keep_tree(&parsed_by_a_lint);
        let fresh = parse(doc.text(), None).root_node().to_sexp();
        assert_eq!(doc.cached_tree().map(|t| t.root_node().to_sexp()), Some(fresh));
    }

    /// Edits of one change are reparsed once, and the tree is not handed out in between.
    #[test]
    fn edits_reparsed_once_match_a_fresh_parse() {
        let mut doc = Document::new("import torch\nx = 1\ny = 2\n", 1);
        doc.edit_text(TextRange::new(17, 18), "42");
        assert!(doc.cached_tree().is_none(), "a tree not of the text");
        doc.edit_text(TextRange::new(13, 13), "z = 0\n");
        assert_eq!(doc.text(), "import torch\nz = 0\nx = 42\ny = 2\n");
        doc.reparse();
        let fresh = parse(doc.text(), None).root_node().to_sexp();
        assert_eq!(doc.cached_tree().map(|t| t.root_node().to_sexp()), Some(fresh.clone()));
        // Asked for before the reparse, the tree is reparsed first.
        doc.edit_text(TextRange::new(0, 0), "# a\n");
        let fresh = parse(doc.text(), None).root_node().to_sexp();
        assert_eq!(doc.tree().root_node().to_sexp(), fresh);
    }
}
