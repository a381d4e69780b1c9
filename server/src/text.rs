//! Byte ranges in source text and the line/column arithmetic every output needs.

use serde::{Deserialize, Serialize};

/// A half-open byte range `[start, end)` into a source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub fn new(start: usize, end: usize) -> Self {
        debug_assert!(start <= end, "range start {start} after end {end}");
        Self { start, end }
    }

    pub fn empty(at: usize) -> Self {
        Self { start: at, end: at }
    }

    pub fn of(node: tree_sitter::Node<'_>) -> Self {
        Self::new(node.start_byte(), node.end_byte())
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub fn contains_range(&self, other: TextRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    pub fn intersects(&self, other: TextRange) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// The smallest range holding both.
    pub fn cover(self, other: TextRange) -> Self {
        Self::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// This range of a text, in the text after `edited` is replaced by `inserted` bytes: moved
    /// with the text after the edit, and stretched over the edit where the two meet.
    pub fn after_edit(self, edited: TextRange, inserted: usize) -> Self {
        let moved = |at: usize| at - edited.len() + inserted;
        if self.end < edited.start {
            self
        } else if self.start > edited.end {
            Self::new(moved(self.start), moved(self.end))
        } else {
            let end = if self.end >= edited.end { moved(self.end) } else { edited.start + inserted };
            Self::new(self.start.min(edited.start), end)
        }
    }
}

/// Where two texts differ: the bytes between what they begin with alike and what they end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Difference {
    /// How many bytes alike they begin with.
    pub prefix: usize,
    /// How many bytes alike they end with, after the prefix.
    pub suffix: usize,
    /// How many bytes of the text before differ.
    pub replaced: usize,
}

impl Difference {
    pub fn between(before: &str, after: &str) -> Self {
        let (before, after) = (before.as_bytes(), after.as_bytes());
        let prefix = common_prefix(before, after);
        let suffix = common_suffix(&before[prefix..], &after[prefix..]);
        Difference { prefix, suffix, replaced: before.len() - prefix - suffix }
    }

    /// The one edit that makes `after` of `before`: the range of `before` it replaces, widened to
    /// whole characters, and what `after` holds there. `None` when the texts are the same.
    pub fn edit<'a>(before: &str, after: &'a str) -> Option<(TextRange, &'a str)> {
        let Difference { mut prefix, mut suffix, .. } = Difference::between(before, after);
        // The bytes alike can end, or start, inside a character that differs.
        while !(before.is_char_boundary(prefix) && after.is_char_boundary(prefix)) {
            prefix -= 1;
        }
        while !(before.is_char_boundary(before.len() - suffix) && after.is_char_boundary(after.len() - suffix)) {
            suffix -= 1;
        }
        let replaced = TextRange::new(prefix, before.len() - suffix);
        let inserted = &after[prefix..after.len() - suffix];
        (!replaced.is_empty() || !inserted.is_empty()).then_some((replaced, inserted))
    }
}

/// How many bytes `a` and `b` begin with alike. Compared a block at a time, which a memory
/// comparison does at memory speed.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 512;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len].iter().zip(&b[at..len]).take_while(|(x, y)| x == y).count()
}

/// How many bytes `a` and `b` end with alike.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 512;
    let len = a.len().min(b.len());
    let (a_end, b_end) = (a.len(), b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[a_end - at - BLOCK..a_end - at] == b[b_end - at - BLOCK..b_end - at] {
        at += BLOCK;
    }
    at + a[..a_end - at].iter().rev().zip(b[..b_end - at].iter().rev()).take_while(|(x, y)| x == y).count()
}

/// A one-based row and a one-based column counted in Unicode scalar values, the convention of
/// Ruff's JSON output and of most terminal tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceLocation {
    pub row: usize,
    pub column: usize,
}

/// Start offsets of every line, so offset → line lookups are a binary search.
#[derive(Clone, Debug)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = Vec::with_capacity(text.len() / 32 + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Self { line_starts }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Zero-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line.min(self.line_starts.len() - 1)]
    }

    /// Byte range of a zero-based line, without its line terminator.
    pub fn line_range(&self, text: &str, line: usize) -> TextRange {
        let start = self.line_start(line);
        let mut end = self.line_starts.get(line + 1).copied().unwrap_or(text.len());
        let bytes = text.as_bytes();
        if end > start && bytes[end - 1] == b'\n' {
            end -= 1;
        }
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        TextRange::new(start, end)
    }

    pub fn location(&self, text: &str, offset: usize) -> SourceLocation {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        SourceLocation { row: line + 1, column: text[start..offset].chars().count() + 1 }
    }
}

/// The largest char boundary at or below `offset`.
pub fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The byte offset where the line holding `at` starts.
pub fn line_start(text: &str, at: usize) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |newline| newline + 1)
}

/// Whether a syntax node starts at its line's start (after the byte-order mark on the first
/// line), as every top-level statement of valid Python does.
pub fn starts_a_line(text: &str, node: tree_sitter::Node<'_>) -> bool {
    let start = node.start_position();
    start.column == 0 || (start.row == 0 && text.starts_with('\u{feff}') && start.column == 3)
}

/// The leading whitespace of the line that holds `offset`.
pub fn indentation_at(text: &str, offset: usize) -> &str {
    let rest = &text[line_start(text, offset)..];
    let width = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..width]
}

/// The line terminator the file already uses, so inserted lines match it.
pub fn line_ending(text: &str) -> &'static str {
    match memchr::memchr(b'\n', text.as_bytes()) {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// A character that can be part of a Python name.
pub fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A byte that can be part of a Python name: ASCII letters, digits, `_`, and every byte of a
/// non-ASCII character (which a scan over bytes cannot tell apart).
pub fn is_name_byte(b: u8) -> bool {
    is_ascii_name_byte(b) || b >= 0x80
}

/// An ASCII byte that can be part of a Python name: a letter, a digit or `_`.
pub fn is_ascii_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `word` starts as an ASCII name does: with a letter or `_`, not a digit.
pub fn starts_like_a_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_suffixes_are_found_across_blocks() {
        let long = "x".repeat(1500);
        for (a, b) in [
            (format!("{long}a{long}"), format!("{long}b{long}")),
            (format!("{long}{long}"), format!("{long}y{long}")),
            (String::new(), "abc".to_owned()),
            ("abc".to_owned(), "abc".to_owned()),
        ] {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            let naive_prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            let naive_suffix = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
            assert_eq!(common_prefix(a, b), naive_prefix);
            assert_eq!(common_suffix(a, b), naive_suffix);
        }
    }

    /// The edit between two texts replaces whole characters, and applied to the first text it
    /// makes the second. 显 and 时 begin with the same byte, 显 and 瘾 end with the same two.
    #[test]
    fn the_edit_between_two_texts_replaces_whole_characters() {
        for (before, after, replaced, inserted) in [
            ("x = '显'\n", "x = '时'\n", (5, 8), "时"),
            ("x = '显'\n", "x = '瘾'\n", (5, 8), "瘾"),
            ("# 显存\nx = 1\n", "# 显存\nx = 12\n", (14, 14), "2"),
            ("a\nb\n", "a\n", (2, 4), ""),
            ("", "import torch\n", (0, 0), "import torch\n"),
            // Alike bytes on both sides end inside characters: the edit widens over both.
            ("😀😀", "😀😁😀", (4, 8), "😁😀"),
        ] {
            let edit = Difference::edit(before, after);
            assert_eq!(edit, Some((TextRange::new(replaced.0, replaced.1), inserted)), "{before:?} -> {after:?}");
            let mut applied = before.to_owned();
            applied.replace_range(replaced.0..replaced.1, inserted);
            assert_eq!(applied, after);
        }
        assert_eq!(Difference::edit("same\n", "same\n"), None);
    }

    /// A range before an edit stays, one after it moves by what the edit added or took away, and
    /// one that meets the edit stretches over what was inserted.
    #[test]
    fn a_range_follows_an_edit() {
        let range = TextRange::new(10, 20);
        let cases = [
            ((30, 35), 1, (10, 20)),
            ((0, 5), 2, (7, 17)),
            ((0, 0), 3, (13, 23)),
            ((12, 14), 5, (10, 23)),
            ((5, 12), 0, (5, 13)),
            ((15, 25), 1, (10, 16)),
            ((20, 20), 4, (10, 24)),
            ((8, 22), 2, (8, 10)),
        ];
        for ((start, end), inserted, (new_start, new_end)) in cases {
            let edited = TextRange::new(start, end);
            assert_eq!(range.after_edit(edited, inserted), TextRange::new(new_start, new_end), "{edited:?} {inserted}");
        }
        assert_eq!(TextRange::new(3, 5).cover(TextRange::new(8, 9)), TextRange::new(3, 9));
    }

    #[test]
    fn locations_count_characters_not_bytes() {
        let text = "a = 1\n# 注释 x\r\nb";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(index.location(text, x), SourceLocation { row: 2, column: 6 });
        assert_eq!(index.location(text, text.len() - 1), SourceLocation { row: 3, column: 1 });
        assert_eq!(index.line_range(text, 1), TextRange::new(6, 6 + "# 注释 x".len()));
    }

    #[test]
    fn detects_crlf() {
        assert_eq!(line_ending("a\r\nb"), "\r\n");
        assert_eq!(line_ending("a\nb\r\n"), "\n");
        assert_eq!(indentation_at("def f():\n    \tx = 1", 15), "    \t");
    }
}
