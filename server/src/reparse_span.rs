//! The span of old text that an incremental reparse is told an edit replaced.
//!
//! Tree-sitter (0.27) reuses the old tree's subtrees after an edit only where the external
//! scanner's state before a subtree matches the state the new parse has reached. Python's
//! indentation is such state: an INDENT or DEDENT token is zero bytes wide and sits at the end of
//! the line before the indentation changes. An edit that touches one (typing at the end of a line
//! whose next line is indented differently, or on a blank line before a dedent) marks it changed,
//! and the reparse then meets the subtree that follows it at the same byte before it has lexed the
//! new INDENT or DEDENT: the states differ, and the old subtree is passed over whole, not looked
//! into. Past the end of the edited block the same happens at every statement that follows a
//! dedent, so in a script of functions and classes the rest of the file is parsed from scratch:
//! 45–65 ms a keystroke in a 10,000-line script, against about half a millisecond.
//!
//! Telling tree-sitter that a little more changed avoids it: from the character before the edit
//! (or before the blank space it is in) to the first character of the first line after the edit
//! that is indented no deeper than the lines on either side of the boundary it touches (the
//! line the edit is on, and the next line of code). The statement that starts there then sits
//! partly inside the edit, the reparse reaches its tokens past its start and looks into it rather
//! than passing it over, and finds the old DEDENT where it expects one. What the reparse may
//! reuse only shrinks, so the tree is the same as without the widening; only the cost changes.
//! The span is found in the text, not the tree, with one exception: a top-level statement that
//! the last keystroke left with a syntax error may have its blocks out of line with its
//! indentation (an ERROR can take in the lines after it), and the span then runs to its end.
//!
//! Edits that touch no line break meet no INDENT or DEDENT and are described as they are.

use tree_sitter::Tree;

use crate::prefilter::line_start;
use crate::text::TextRange;

/// The old text's bytes to describe to tree-sitter as replaced when `range` of `text` is
/// replaced by `inserted`. It holds `range`; the text in it outside `range` is unchanged.
pub fn span_to_reparse(text: &str, tree: &Tree, range: TextRange, inserted: &str) -> TextRange {
    let bytes = text.as_bytes();
    let after = run_of_space_after(bytes, range.end);
    let before = run_of_space_before(bytes, range.start);
    let touches_line_break = inserted.contains('\n')
        || bytes[range.start..range.end].contains(&b'\n')
        || after == bytes.len()
        || bytes[range.end..after].contains(&b'\n')
        || before == 0
        || bytes[before..range.start].contains(&b'\n');
    if !touches_line_break {
        return range;
    }
    // Back over the blank space before the edit, then one character into what precedes it.
    let start = previous_char_start(text, before);
    // The boundary's lines: the one the span starts on, the one the edit ends on, and the next
    // line of code after that.
    let lines_after = lines_of_code(bytes, line_end(bytes, range.end));
    let mut deepest_allowed =
        indentation(bytes, line_start(text, start)).min(indentation(bytes, line_start(text, range.end)));
    let mut code = bytes.len();
    for (n, (line, indent)) in lines_after.enumerate() {
        if n == 0 {
            deepest_allowed = deepest_allowed.min(indent);
        }
        if indent <= deepest_allowed {
            code = run_of_space_after(bytes, line);
            break;
        }
    }
    // A statement the last keystroke left with a syntax error was parsed with its blocks out of
    // line with its indentation: all of it is parsed again.
    let root = tree.root_node();
    if root.has_error()
        && let Some(statement) = root
            .first_child_for_byte(range.end.saturating_sub(1))
            .filter(|s| s.start_byte() <= range.end && s.has_error() && s.end_byte() > code)
    {
        code = run_of_space_after(bytes, statement.end_byte());
    }
    TextRange::new(start.min(range.start), next_char_end(text, code).max(range.end))
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c')
}

/// The first byte at or after `from` that is not blank space (the text's length if none is).
fn run_of_space_after(bytes: &[u8], from: usize) -> usize {
    from + bytes[from..].iter().take_while(|&&b| is_space(b)).count()
}

/// The start of the run of blank space that ends at `to`.
fn run_of_space_before(bytes: &[u8], to: usize) -> usize {
    to - bytes[..to].iter().rev().take_while(|&&b| is_space(b)).count()
}

/// The byte after the line break that ends the line holding `at` (the text's length if none).
fn line_end(bytes: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |newline| at + newline + 1)
}

/// The indentation of the line starting at `start`, counted as tree-sitter-python's scanner
/// counts it: a space as 1, a tab as 8, a form feed back to 0.
fn indentation(bytes: &[u8], start: usize) -> usize {
    let mut width = 0;
    for &byte in &bytes[start..] {
        match byte {
            b' ' => width += 1,
            b'\t' => width += 8,
            b'\x0c' => width = 0,
            _ => break,
        }
    }
    width
}

/// The lines from the one starting at `from` on that hold code (not blank, not only a comment),
/// as (start, indentation).
fn lines_of_code(bytes: &[u8], from: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut next = from;
    std::iter::from_fn(move || {
        while next < bytes.len() {
            let start = next;
            next = line_end(bytes, start);
            let first = run_of_space_after(bytes, start).min(next);
            if first < next && !matches!(bytes[first], b'\n' | b'#') {
                return Some((start, indentation(bytes, start)));
            }
        }
        None
    })
}

fn previous_char_start(text: &str, at: usize) -> usize {
    text[..at].char_indices().next_back().map_or(0, |(start, _)| start)
}

fn next_char_end(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(at, |c| at + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use tree_sitter::{InputEdit, Point};

    use super::*;
    use crate::parse::parse;
    use crate::tree_reuse::{settled, statements_not_shared};

    /// Functions, a class with methods, a decorator, a comment and blank lines, many times over.
    fn script() -> String {
        let mut text = String::from("import torch\n\n");
        for n in 0..150 {
            text.push_str(&format!(
                "\
def train_{n}(model, loader):
    total = 0
    for batch in loader:
        loss = model(batch).sum()
        total += loss.item()
    return total


class Block{n}(torch.nn.Module):
    def __init__(self):
        # No parameters of its own.
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        return x * 2
\n"
            ));
        }
        text
    }

    fn point(text: &str, byte: usize) -> Point {
        let line_start = text[..byte].rfind('\n').map_or(0, |newline| newline + 1);
        Point { row: text[..byte].matches('\n').count(), column: byte - line_start }
    }

    /// Replace `range` of `text` with `inserted` and reparse `tree` incrementally, telling it of
    /// the span [`span_to_reparse`] gives, or of `range` alone.
    fn keystroke(text: &str, tree: &Tree, range: TextRange, inserted: &str, widen: bool) -> (String, Tree) {
        let told = if widen { span_to_reparse(text, tree, range, inserted) } else { range };
        let new_text = format!("{}{inserted}{}", &text[..range.start], &text[range.end..]);
        let new_end = range.start + inserted.len() + (told.end - range.end);
        let mut edited = tree.clone();
        edited.edit(&InputEdit {
            start_byte: told.start,
            old_end_byte: told.end,
            new_end_byte: new_end,
            start_position: point(text, told.start),
            old_end_position: point(text, told.end),
            new_end_position: point(&new_text, new_end),
        });
        let reparsed = parse(&new_text, Some(&edited));
        (new_text, reparsed)
    }

    /// Places to type at, and what: a comment at the end of a function's header, of a block's
    /// last line before a dedent, of the last line of a method before the next, and on a blank
    /// line between statements; a name's end in the middle of a line; and at the end of a line,
    /// text that leaves a syntax error on the way (`total = 0 *`).
    const PLACES: [(&str, &str); 6] = [
        ("def train_70(model, loader):", "  # x"),
        ("        total += loss.item()\n    return total", "  # x"),
        ("        super().__init__()", "  # x"),
        ("        return x * 2\n", "  # x"),
        ("        loss = model", "_2"),
        ("def train_90(model, loader):\n    total = 0", " * 2"),
    ];

    #[test]
    fn typing_at_an_indentation_change_rebuilds_only_the_statements_around_it() {
        let text = script();
        let tree = settled(&text, parse(&text, None));
        let statements = tree.root_node().child_count() as usize;
        for (place, typed) in PLACES {
            let at = text.find(place).expect("the script holds the place") + place.len();
            let root = tree.root_node();
            let following = root.children(&mut root.walk()).filter(|s| s.start_byte() > at).count();
            // Type there a character at a time, then take them out again.
            let typing = (0..typed.len()).map(|i| (TextRange::empty(at + i), &typed[i..=i]));
            let deleting = (0..typed.len()).rev().map(|i| (TextRange::new(at + i, at + i + 1), ""));
            let (mut current, mut current_tree) = (text.clone(), tree.clone());
            let mut worst_without = 0;
            for (range, inserted) in typing.chain(deleting) {
                let (_, unwidened) = keystroke(&current, &current_tree, range, inserted, false);
                let (next, reparsed) = keystroke(&current, &current_tree, range, inserted, true);
                assert_eq!(reparsed.root_node().to_sexp(), parse(&next, None).root_node().to_sexp(), "{place:?}");
                let rebuilt = statements_not_shared(&current_tree, &reparsed);
                assert!(rebuilt <= 3, "{place:?} {inserted:?}: {rebuilt} of {statements} top-level statements rebuilt");
                worst_without = worst_without.max(statements_not_shared(&current_tree, &unwidened));
                (current, current_tree) = (next, reparsed);
            }
            assert_eq!(current, text);
            // Told of the keystroke alone, tree-sitter parses the rest of the file anew from an
            // indentation change (or the end of a statement with an error) on; in the middle of
            // a line it has no need to.
            if typed == "_2" {
                assert!(worst_without <= 3, "{place:?}: {worst_without} rebuilt without widening");
            } else {
                let only = format!("{place:?}: only {worst_without} of the {following} statements after rebuilt");
                assert!(worst_without * 2 > following, "{only} without widening");
            }
        }
    }

    /// At every byte of a script: typing any of a few characters, and deleting the character
    /// there, through [`crate::document::Document`] as the server edits a buffer. The reparsed
    /// tree is the tree of a fresh parse.
    #[test]
    fn every_keystroke_anywhere_reparses_to_a_fresh_parse() {
        let text: String = script().lines().take(40).map(|line| format!("{line}\n")).collect();
        assert_every_keystroke_reparses_to_a_fresh_parse(&text);
    }

    /// The same with CRLF line ends, a tab-indented block, and non-ASCII text in a comment and a
    /// string.
    #[test]
    fn every_keystroke_in_crlf_tabs_and_non_ascii_text_reparses_to_a_fresh_parse() {
        let text = "import torch\r\n\r\ndef f(x):\r\n\t# 显存 😀\r\n\ty = \"é 😀\"\r\n\treturn y\r\n\r\n\r\nclass A:\r\n    def g(self):\r\n        return 1\r\n";
        assert_every_keystroke_reparses_to_a_fresh_parse(text);
    }

    fn assert_every_keystroke_reparses_to_a_fresh_parse(text: &str) {
        for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
            let next_char = text[at..].chars().next().map_or(0, char::len_utf8);
            let deleting = (at < text.len()).then(|| (TextRange::new(at, at + next_char), ""));
            let typing = ["#", " ", "x", "\n", ":", "("].map(|typed| (TextRange::empty(at), typed));
            for (range, inserted) in typing.into_iter().chain(deleting) {
                let mut document = crate::document::Document::new(text, 1);
                document.edit(range, inserted);
                let fresh = parse(document.text(), None);
                assert_eq!(
                    document.tree().root_node().to_sexp(),
                    fresh.root_node().to_sexp(),
                    "{range:?} {inserted:?}"
                );
            }
        }
    }

    #[test]
    fn an_edit_inside_a_line_is_told_as_it_is() {
        let text = "x = torch.ones(3)\ny = x\n";
        let tree = parse(text, None);
        let range = TextRange::new(10, 14);
        assert_eq!(span_to_reparse(text, &tree, range, "zeros"), range);
    }

    #[test]
    fn the_span_runs_from_before_the_blank_space_to_into_the_next_line_no_deeper() {
        let text = "def f():\n    y = 1\n    return y\n\n\ndef g():\n    pass\n";
        let tree = parse(text, None);
        // The end of the header: the block after it is indented deeper, so the span runs to `def g`.
        let header = "def f():".len();
        let span = span_to_reparse(text, &tree, TextRange::empty(header), "#");
        assert_eq!(&text[span.start..span.end], ":\n    y = 1\n    return y\n\n\nd");
        // The end of the block: the next line of code is `def g`.
        let last = text.find("return y").unwrap() + "return y".len();
        let span = span_to_reparse(text, &tree, TextRange::empty(last), "#");
        assert_eq!(&text[span.start..span.end], "y\n\n\nd");
        // A blank line: from the character before the blank space.
        let span = span_to_reparse(text, &tree, TextRange::empty(last + 1), "x");
        assert_eq!(&text[span.start..span.end], "y\n\n\nd");
        // The end of the file.
        let span = span_to_reparse(text, &tree, TextRange::empty(text.len()), "z");
        assert_eq!(&text[span.start..span.end], "s\n");
    }
}
