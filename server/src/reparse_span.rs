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
//!
//! The same goes for the start. The NEWLINE, INDENT and DEDENT tokens at the end of a line look
//! ahead at the next line's indentation and first character, so an edit there marks them changed
//! too. Were the span to start on that first character (typing on a line that holds nothing
//! before the edit but indentation and one token), the reparse would pass the old tokens over
//! without lexing them anew, and meet the subtree after them with its scanner still in the state
//! of the line before: the same mismatch, and the rest of the file parsed anew. Such a span
//! starts one character into the last line of code before instead, so the reparse lexes those
//! tokens itself.
//!
//! The span is found in the text, not the tree, with one exception. A syntax error that the last
//! keystroke left may have cut blocks apart: an ERROR can take in the lines after it, and the
//! statements of a block cut off from its header become top-level statements that start
//! indented. Their old tokens were lexed with the scanner in states that the new parse does not
//! reach, so the span runs over all of them: over the top-level statement around the edit and
//! those after it, for as long as each has a syntax error or does not start its line.
//!
//! Edits that touch no line break meet no INDENT or DEDENT and are described as they are.
//!
//! Some edits change no token but the one they are in, and need no reparse at all
//! ([`told_without_reparse`]):
//!
//! - An edit inside a comment. The lexer takes a comment to the end of its line whatever it
//!   holds, and the scanner skips its text, so the edit changes no token but the comment and no
//!   scanner state. Told of the edit as it is, tree-sitter moves and resizes the nodes around it,
//!   and the tree is the new text's tree.
//! - Spaces and tabs typed or deleted between the last token of a line of code and its line
//!   break. The scanner skips them on its way to the line break, so they only move what follows.
//!   Told as it is, an insertion right after a token would make tree-sitter grow that token and
//!   the nodes that end with it over the new space; told as running through one character more
//!   (unchanged, a blank or the line break), it is no insertion, and only what follows moves.
//! - Letters, digits and underscores typed or deleted inside a name that stays a name and is no
//!   keyword before or after. The lexer takes the same tokens, the name's one longer or shorter.
//!   An insertion before the name's first character is told through that character, or it
//!   would go to the space before the name.
//! - An edit inside a string's text that types and deletes no character the string's scanner
//!   stops at (a quote, a backslash, a brace, a line break), in a string with no backslash, and
//!   that joins no two quotes (three in a row end a triple-quoted string). The scanner takes the
//!   same one run of text, longer or shorter. Told as it is, an insertion at the text's end goes
//!   to the text, the first token that touches it; one at its start would go to the opening
//!   quote, and is reparsed.
//! - Digits typed or deleted right after a digit of a decimal number (`32` to `64`, `1e-3` to
//!   `1e-4`), where no letter or underscore follows the edit (typing at `0|x1f`, `1|e5` or
//!   `1|_0` is reparsed). The lexer takes one number token, longer or shorter.
//!
//! Either way the span a reparse would have been told is told to the next reparse: the tokens
//! around the edit are then lexed anew, as if the keystroke had been reparsed.

use std::cell::OnceCell;

use tree_sitter::{Node, Tree};

use crate::grammar_ids::{COMMENT, IDENTIFIER, KEYWORDS, KindSet, NUMBER, STRING, STRING_CONTENT};
use crate::prefilter::{is_ascii_name_byte, starts_like_a_name};
use crate::text::{TextRange, line_start, starts_a_line};

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
    // Back over the blank space before the edit, then one character into what precedes it; and
    // where that is the first token of its line, one character into the last line of code before.
    let mut start = previous_char_start(text, before);
    let line = line_start(text, start);
    if line > 0 && bytes[line..start].iter().all(u8::is_ascii_whitespace) {
        start = previous_char_start(text, run_of_space_before(bytes, line));
    }
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
    // What a syntax error that the last keystroke left cut apart is parsed again whole.
    let root = tree.root_node();
    if root.has_error()
        && let Some(damaged) = last_damaged_statement(text, root.first_child_for_byte(range.end.saturating_sub(1)))
        && damaged.end_byte() > code
    {
        code = run_of_space_after(bytes, damaged.end_byte());
    }
    TextRange::new(start.min(range.start), next_char_end(text, code).max(range.end))
}

/// What to tell tree-sitter of replacing `range` of `text` by `inserted` when that changes no
/// token and the tree needs no reparse (see the module's documentation); `None` when it needs one.
pub fn told_without_reparse(text: &str, tree: &Tree, range: TextRange, inserted: &str) -> Option<TextRange> {
    // A reparse may recover from a syntax error otherwise: the recovery counts what it skips.
    if tree.root_node().has_error() {
        return None;
    }
    if let Some(holding) = HoldingTheEdit::of(tree, range)
        && (inside_a_comment(text, &holding, inserted)
            || inside_a_string(text, &holding, inserted)
            || inside_a_number(text, &holding, inserted))
    {
        return Some(range);
    }
    blank_at_a_line_end(text, tree, range, inserted).or_else(|| inside_a_name(text, tree, range, inserted))
}

/// Whether replacing `range` of `text` by `inserted` changes only the spaces and tabs between the
/// last token of a line of code and the line's break, not in a string that runs on to the next
/// line.
/// A backslash that joins the next line ends no token there: its line continuation holds the break.
/// Returns the range to tell tree-sitter: `range` and the character after it, left as it was.
fn blank_at_a_line_end(text: &str, tree: &Tree, range: TextRange, inserted: &str) -> Option<TextRange> {
    let bytes = text.as_bytes();
    let (space_start, space_end) = run_around(bytes, range, inserted, |byte| matches!(byte, b' ' | b'\t'))?;
    if space_start == 0 || !matches!(&bytes[space_end..], [b'\n', ..] | [b'\r', b'\n', ..]) {
        return None;
    }
    let root = tree.root_node();
    // A token ends where the space starts: not a comment or a line continuation, which hold
    // what follows, not a string's text, and not a line break (the space would be a blank line's
    // indentation). And no string holds the space and the line break: an f-string's `}` ends a
    // token inside one.
    let token = root.descendant_for_byte_range(space_start - 1, space_start)?;
    let around = root.descendant_for_byte_range(space_start - 1, space_end + 1)?;
    let in_a_string = std::iter::successors(Some(around), Node::parent).any(|node| STRING.contains(node));
    (token.end_byte() == space_start && !in_a_string).then(|| TextRange::new(range.start, range.end + 1))
}

/// Whether replacing `range` of `text` by `inserted` changes only the ASCII letters, digits and
/// underscores of one name of `tree`, and leaves a name: the run of
/// them still starts with a letter or an underscore, and neither it nor the old run is a keyword.
/// (In a name with other characters the run may be part of it: that only takes more to a
/// reparse.) Returns the range to tell tree-sitter.
fn inside_a_name(text: &str, tree: &Tree, range: TextRange, inserted: &str) -> Option<TextRange> {
    // ASCII only, not `is_name_byte`, which takes every byte of a non-ASCII character: whether
    // one belongs in a name depends on the whole character.
    let (start, end) = run_around(text.as_bytes(), range, inserted, is_ascii_name_byte)?;
    if start == end {
        return None;
    }
    let name = tree.root_node().descendant_for_byte_range(start, end)?;
    if !IDENTIFIER.contains(name) {
        return None;
    }
    let new_name = [&text[start..range.start], inserted, &text[range.end..end]].concat();
    if !starts_like_a_name(&new_name) || KEYWORDS.contains(&text[start..end]) || KEYWORDS.contains(&new_name) {
        return None;
    }
    Some(if range.is_empty() && range.start == start { TextRange::new(start, start + 1) } else { range })
}

/// Whether replacing the edit's range of `text` by `inserted` changes nothing but the text of one
/// comment: the edit lies after the comment's `#`, neither side of it holds a line break or a
/// form feed (which end a line or reset its indentation) or a NUL (which the scanner takes for
/// the end of the input).
fn inside_a_comment(text: &str, holding: &HoldingTheEdit<'_>, inserted: &str) -> bool {
    let breaks_a_line = |s: &str| s.bytes().any(|b| matches!(b, b'\n' | b'\r' | b'\x0c' | b'\0'));
    let range = holding.range;
    if breaks_a_line(inserted) || breaks_a_line(&text[range.start..range.end]) {
        return false;
    }
    // A comment that holds the byte before the edit holds the edit after its `#`.
    holding.of_kind(&COMMENT).is_some()
}

/// The smallest node that holds the byte before an edit's range and the range itself: one that
/// holds the edit after its first byte, an insertion at its very end included. Found once, when
/// first asked for: the checks of a keystroke that ask for it share it, and one turned away by
/// the characters it types or deletes never descends the tree.
struct HoldingTheEdit<'t> {
    tree: &'t Tree,
    /// Never at the start of the text: there is a byte before it.
    range: TextRange,
    node: OnceCell<Option<Node<'t>>>,
}

impl<'t> HoldingTheEdit<'t> {
    /// `None` for an edit at the start of the text, which no token holds after its first byte.
    fn of(tree: &'t Tree, range: TextRange) -> Option<Self> {
        (range.start > 0).then(|| Self { tree, range, node: OnceCell::new() })
    }

    /// The node, if it is of one of `kinds`.
    fn of_kind(&self, kinds: &KindSet) -> Option<Node<'t>> {
        let range = self.range;
        let node = self.node.get_or_init(|| {
            self.tree
                .root_node()
                .descendant_for_byte_range(range.start - 1, range.end)
                .filter(|node| node.start_byte() < range.start && range.end <= node.end_byte())
        });
        node.filter(|node| kinds.contains(*node))
    }
}

/// Whether replacing the edit's range of `text` by `inserted` changes nothing but the text of one
/// string (see the module's documentation): the edit lies inside the string's text, after its
/// first character; neither side of it holds a quote, a backslash, a brace, a line break, a form
/// feed or a NUL; the text holds no backslash (no escape sequence starts, ends or changes around
/// the edit); and a deletion leaves no quote next to a quote.
fn inside_a_string(text: &str, holding: &HoldingTheEdit<'_>, inserted: &str) -> bool {
    let range = holding.range;
    let stops_the_scanner =
        |s: &str| s.bytes().any(|b| matches!(b, b'"' | b'\'' | b'\\' | b'{' | b'}' | b'\n' | b'\r' | b'\x0c' | b'\0'));
    if stops_the_scanner(inserted) || stops_the_scanner(&text[range.start..range.end]) {
        return false;
    }
    let is_quote = |byte: Option<&u8>| matches!(byte, Some(b'"' | b'\''));
    let bytes = text.as_bytes();
    if inserted.is_empty() && is_quote(bytes.get(range.start - 1)) && is_quote(bytes.get(range.end)) {
        return false;
    }
    holding.of_kind(&STRING_CONTENT).is_some_and(|node| !text[node.byte_range()].contains('\\'))
}

/// Whether replacing the edit's range of `text` by `inserted` changes nothing but the digits of
/// one decimal number (see the module's documentation): only digits are typed and deleted,
/// right after a digit of the number; what follows the edit is no letter or underscore; and the
/// number is written with digits, `_`, `.`, `e` and signs only (no `0x`, `0o` or `0b`, whose
/// digits are fewer, and no `j`).
fn inside_a_number(text: &str, holding: &HoldingTheEdit<'_>, inserted: &str) -> bool {
    let range = holding.range;
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let bytes = text.as_bytes();
    if !digits_only(inserted) || !digits_only(&text[range.start..range.end]) {
        return false;
    }
    if !bytes[range.start - 1].is_ascii_digit()
        || bytes.get(range.end).is_some_and(|&b| is_ascii_name_byte(b) && !b.is_ascii_digit())
    {
        return false;
    }
    holding.of_kind(&NUMBER).is_some_and(|node| {
        text[node.byte_range()]
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'e' | b'E' | b'+' | b'-'))
    })
}

/// The last of the top-level statements from `first` on that each have a syntax error or do not
/// start their line: a top-level statement of valid Python starts at its line's start, so one
/// that does not was cut out of its block by an error before it (or shares its line with another).
fn last_damaged_statement<'t>(text: &str, first: Option<Node<'t>>) -> Option<Node<'t>> {
    let damaged = |statement: &Node<'_>| statement.has_error() || !starts_a_line(text, *statement);
    std::iter::successors(first, Node::next_sibling).take_while(damaged).last()
}

/// The first byte at or after `from` that is not blank space (the text's length if none is).
fn run_of_space_after(bytes: &[u8], from: usize) -> usize {
    run_end(bytes, from, |byte| byte.is_ascii_whitespace())
}

/// The start of the run of blank space that ends at `to`.
fn run_of_space_before(bytes: &[u8], to: usize) -> usize {
    run_start(bytes, to, |byte| byte.is_ascii_whitespace())
}

/// The first byte at or after `from` that `part` does not take (the text's length if none).
fn run_end(bytes: &[u8], from: usize, part: impl Fn(u8) -> bool) -> usize {
    from + bytes[from..].iter().take_while(|&&byte| part(byte)).count()
}

/// The start of the run of bytes that `part` takes that ends at `to`.
fn run_start(bytes: &[u8], to: usize, part: impl Fn(u8) -> bool) -> usize {
    to - bytes[..to].iter().rev().take_while(|&&byte| part(byte)).count()
}

/// The run of bytes that `part` takes around `range`, as its (start, end), when it takes every
/// byte that `range` holds and every byte of `inserted`: an edit that stays inside such a run.
fn run_around(
    bytes: &[u8],
    range: TextRange,
    inserted: &str,
    part: impl Fn(u8) -> bool + Copy,
) -> Option<(usize, usize)> {
    let all = |run: &[u8]| run.iter().all(|&byte| part(byte));
    (all(inserted.as_bytes()) && all(&bytes[range.start..range.end]))
        .then(|| (run_start(bytes, range.start, part), run_end(bytes, range.end, part)))
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
    use super::*;
    use crate::document::Document;
    use crate::parse::parse;
    use crate::test_support::told_edit;
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

    /// Replace `range` of `text` with `inserted` and reparse `tree` incrementally, telling it of
    /// the span [`span_to_reparse`] gives, or of `range` alone.
    fn keystroke(text: &str, tree: &Tree, range: TextRange, inserted: &str, widen: bool) -> (String, Tree) {
        let told = if widen { span_to_reparse(text, tree, range, inserted) } else { range };
        let (new_text, edited) = told_edit(text, tree, told, range, inserted);
        let reparsed = parse(&new_text, Some(&edited));
        (new_text, reparsed)
    }

    /// How many top-level statements of `new` differ from the statement at their place in `old`
    /// (`range` replaced by `inserted`): in their text, kind or structure. A reparse has to
    /// build these anew whatever it reuses.
    fn statements_changed(old: (&str, &Tree), new: (&str, &Tree), range: TextRange, inserted: &str) -> usize {
        let ((old_text, old_tree), (new_text, new_tree)) = (old, new);
        let inserted_end = range.start + inserted.len();
        // Where a byte of the new text was in the old one, if it was there.
        let old_byte = |byte: usize| match byte {
            _ if byte <= range.start => Some(byte),
            _ if byte >= inserted_end => Some(byte - inserted_end + range.end),
            _ => None,
        };
        let old_root = old_tree.root_node();
        let old_statements: std::collections::HashMap<(usize, usize), Node<'_>> = old_root
            .children(&mut old_root.walk())
            .map(|statement| ((statement.start_byte(), statement.end_byte()), statement))
            .collect();
        let new_root = new_tree.root_node();
        let unchanged = |statement: &Node<'_>| {
            let (Some(start), Some(end)) = (old_byte(statement.start_byte()), old_byte(statement.end_byte())) else {
                return false;
            };
            old_statements.get(&(start, end)).is_some_and(|old| {
                old.kind() == statement.kind()
                    && old_text[start..end] == new_text[statement.byte_range()]
                    && old.to_sexp() == statement.to_sexp()
            })
        };
        new_root.children(&mut new_root.walk()).filter(|statement| !unchanged(statement)).count()
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
        for (place, typed) in PLACES {
            let at = text.find(place).expect("the script holds the place") + place.len();
            let root = tree.root_node();
            let following = root.children(&mut root.walk()).filter(|s| s.start_byte() > at).count();
            let worst_without = assert_typing_rebuilds_little(&text, &tree, at, typed, 3);
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

    /// Typing text that leaves a syntax error on a blank line, at its start: between a function
    /// and the decorated one after it, and between two methods. On the way the error cuts the
    /// class apart, and takes the decorator's line in.
    #[test]
    fn typing_an_error_on_a_blank_line_rebuilds_only_the_statements_around_it() {
        let mut text = String::from("import torch\n\n");
        for n in 0..100 {
            text.push_str(&format!(
                "\
def release_{n}(model, optimizer):
    torch.cuda.empty_cache()
    del model, optimizer

@torch.no_grad()
def evaluate_{n}(model, loader):
    return model(loader)


class Block{n}(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = torch.nn.Linear(width, width)

    def forward(self, x):
        h = self.up(x)
        h = torch.relu(h)
        return x + h

@torch.no_grad()
def score_{n}(model, x):
    return model(x).sum()
\n"
            ));
        }
        let tree = settled(&text, parse(&text, None));
        for place in ["    del model, optimizer\n", "        self.up = torch.nn.Linear(width, width)\n"] {
            for n in [20, 50, 80] {
                let at = text.match_indices(place).nth(n).expect("the script holds the place").0 + place.len();
                // A syntax error keeps several readings of the lines after it alive for a while,
                // and the parse reuses nothing until one wins: up to 7 statements here, as many
                // when told of the keystroke alone. Without the widening's start one character
                // into the line before, or without its run over the statements that the error
                // cut out of the class, the rest of the file is rebuilt.
                assert_typing_rebuilds_little(&text, &tree, at, " * 2", 8);
            }
        }
    }

    /// Type `typed` at `at` a character at a time, then take it out again, reparsing after each
    /// keystroke as told by [`span_to_reparse`]. Each reparse gives a fresh parse's tree and
    /// rebuilds at most `slack` top-level statements more than those that changed. Returns the
    /// most that a reparse told of the keystroke alone rebuilt.
    fn assert_typing_rebuilds_little(text: &str, tree: &Tree, at: usize, typed: &str, slack: usize) -> usize {
        let statements = tree.root_node().child_count();
        let typing = (0..typed.len()).map(|i| (TextRange::empty(at + i), &typed[i..=i]));
        let deleting = (0..typed.len()).rev().map(|i| (TextRange::new(at + i, at + i + 1), ""));
        let (mut current, mut current_tree) = (text.to_owned(), tree.clone());
        let mut worst_without = 0;
        let line = text[..at].matches('\n').count() + 1;
        for (range, inserted) in typing.chain(deleting) {
            let (_, unwidened) = keystroke(&current, &current_tree, range, inserted, false);
            let (next, reparsed) = keystroke(&current, &current_tree, range, inserted, true);
            assert_eq!(reparsed.root_node().to_sexp(), parse(&next, None).root_node().to_sexp(), "line {line}");
            let rebuilt = statements_not_shared(&current_tree, &reparsed);
            let changed = statements_changed((&current, &current_tree), (&next, &reparsed), range, inserted);
            assert!(
                rebuilt <= changed + slack,
                "line {line}, {inserted:?}: {rebuilt} of {statements} top-level statements rebuilt, {changed} changed"
            );
            worst_without = worst_without.max(statements_not_shared(&current_tree, &unwidened));
            (current, current_tree) = (next, reparsed);
        }
        assert_eq!(current, text);
        worst_without
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
                let mut document = Document::new(text, 1);
                document.edit(range, inserted);
                let fresh = parse(document.text(), None);
                assert_same_layout(&document.tree().clone(), &fresh, &format!("{range:?} {inserted:?}"));
            }
        }
    }

    /// The two trees have the same nodes in the same places (a tree's S-expression leaves out
    /// where its nodes are).
    fn assert_same_layout(tree: &Tree, fresh: &Tree, what: &str) {
        let (nodes, fresh_nodes) = (crate::parse::layout(tree), crate::parse::layout(fresh));
        let first_difference = nodes.iter().zip(&fresh_nodes).position(|(a, b)| a != b);
        assert!(
            nodes == fresh_nodes,
            "{what}: node {first_difference:?} differs: {:?} against a fresh parse's {:?}",
            first_difference.map(|i| &nodes[i]),
            first_difference.map(|i| &fresh_nodes[i]),
        );
    }

    /// Spaces and tabs typed and deleted at every place of a script whose lines end in many ways:
    /// the tree is a fresh parse's tree node for node. At the end of a line of code (spaces there
    /// already, a function's header, inside brackets, a tab-indented block with CRLF ends) that
    /// takes no reparse, nor inside a string that runs on (its text grows: see
    /// `typing_inside_a_string_needs_no_reparse`). After a backslash, after an f-string's `}`
    /// inside one, on a blank line or before a line's first token, at the end of the input and
    /// in a tree with a syntax error it does.
    #[test]
    fn blank_space_at_the_end_of_a_line_of_code_needs_no_reparse() {
        let text = "import torch  \n\n@torch.no_grad()\ndef f(x,\n      y):\n    z = x + \\\n        y\n    s = \"\"\"a\nb \t\n\"\"\"\n    t = f\"\"\"{z}\n{s}\"\"\"\n    return z  # done\n\nclass A:\r\n\tdef g(self):\r\n\t\treturn 1\t\r\nx = [1,\n     2]\ny = 3";
        let edits_at = |at: usize| {
            let deleting =
                matches!(text.as_bytes().get(at), Some(b' ' | b'\t')).then(|| (TextRange::new(at, at + 1), ""));
            [(TextRange::empty(at), " "), (TextRange::empty(at), "\t")].into_iter().chain(deleting)
        };
        for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
            for (range, inserted) in edits_at(at) {
                let mut document = Document::new(text, 1);
                document.edit_text(range, inserted);
                let fresh = parse(document.text(), None);
                assert_same_layout(document.tree(), &fresh, &format!("{range:?} {inserted:?}"));
            }
        }
        let unreparsed = |after: &str, text: &str| {
            let at = text.find(after).expect("the script holds the place") + after.len();
            edits_at(at)
                .map(|(range, inserted)| {
                    let mut document = Document::new(text, 1);
                    document.edit_text(range, inserted);
                    !document.needs_reparse()
                })
                .collect::<Vec<_>>()
        };
        let ends_of_lines = ["import torch", "import torch ", "def f(x,", "y):", "@torch.no_grad()", "return 1", "2]"];
        for after in ends_of_lines.into_iter().chain(["\"\"\"a", "b "]) {
            assert!(unreparsed(after, text).iter().all(|&u| u), "after {after:?}");
        }
        for after in ["x + \\", "{z}", "y = 3", "class A:\r\n", "import torch  \n"] {
            assert!(unreparsed(after, text).iter().all(|&u| !u), "after {after:?}");
        }
        let broken = text.replace("2]", "2");
        assert!(unreparsed("import torch", &broken).iter().all(|&u| !u), "in a tree with a syntax error");
    }

    /// Letters, digits and underscores typed at every place of every name of a script, and each
    /// character of a name deleted: the tree is a fresh parse's tree node for node. Inside a name,
    /// at its start and at its end that takes no reparse, unless the name would start with a
    /// digit or become a keyword (`if`, `None`, the soft `match`), or is one (`print`, `match`,
    /// `__future__`), or the tree has a syntax error.
    #[test]
    fn typing_inside_a_name_needs_no_reparse() {
        let text = "from __future__ import annotations\nimport torch\n\nx1 = torch.zeros(3)\ny = x1.shape[0] + 1e5.real + Non + café\n\n\ndef train(model, loader, *, lr=1e-3):\n    for i, batch in enumerate(loader):\n        loss = model(batch).sum()\n        print(loss, f\"{loss!r} {lr}\")\n    match = i\n    return loss\n";
        let tree = parse(text, None);
        let names: Vec<TextRange> = crate::parse::layout(&tree)
            .into_iter()
            .filter(|(kind, bytes, ..)| {
                *kind == crate::parse::python().id_for_node_kind("identifier", true) && !bytes.is_empty()
            })
            .map(|(_, bytes, ..)| TextRange::new(bytes.start, bytes.end))
            .collect();
        assert!(names.len() > 20, "{} names", names.len());
        let mut unreparsed = 0;
        for name in &names {
            let places = (name.start..=name.end).filter(|&at| text.is_char_boundary(at));
            let deleting = places.clone().filter(|&at| at < name.end).map(|at| {
                let next_char = text[at..].chars().next().map_or(0, char::len_utf8);
                (TextRange::new(at, at + next_char), "")
            });
            let typing = places.flat_map(|at| ["x", "_", "9", "e", "f"].map(|typed| (TextRange::empty(at), typed)));
            for (range, inserted) in typing.chain(deleting) {
                let mut document = Document::new(text, 1);
                document.edit_text(range, inserted);
                unreparsed += usize::from(!document.needs_reparse());
                let fresh = parse(document.text(), None);
                assert_same_layout(document.tree(), &fresh, &format!("{range:?} {inserted:?}"));
            }
        }
        assert!(unreparsed > 200, "{unreparsed} edits of names not reparsed");
        let reparsed = needs_reparse;
        let at = |place: &str| place_after(text, place);
        for (place, inserted) in [("def train", "s"), ("(model", "s"), ("lr", "e"), ("(batch).", "_")] {
            assert!(!reparsed(text, TextRange::empty(at(place)), inserted), "{inserted:?} after {place:?}");
        }
        assert!(!reparsed(text, TextRange::new(at("lo") - 2, at("lo") - 1), ""), "deleting a name's first letter");
        for (place, inserted) in [("for i", "f"), ("+ Non", "e"), ("    matc", "h"), ("__futur", "e")] {
            assert!(reparsed(text, TextRange::empty(at(place)), inserted), "{inserted:?} after {place:?}");
        }
        assert!(reparsed(text, TextRange::empty(at("\ny = ")), "9"), "a name starting with a digit");
        assert!(reparsed(text, TextRange::new(at("\nx") - 1, at("\nx")), ""), "x1 made a number");
        assert!(reparsed(text, TextRange::empty(at("    prin")), "t"), "inside `print`");
        let broken = text.replace("zeros(3)", "zeros(3");
        assert!(reparsed(&broken, TextRange::empty(broken.find("(model").unwrap() + 6), "s"), "a syntax error");
    }

    /// Typing and deleting inside a comment, at every place after its `#`, its end included: the
    /// tree is not reparsed, and it is a fresh parse's tree node for node. Characters that end a
    /// line, reset its indentation or end the input, and edits of the `#` itself, are reparsed.
    #[test]
    fn typing_inside_a_comment_needs_no_reparse() {
        let text = "import torch\n\ndef f(x):\n    y = x  # 显存 😀\n    # own line \\\n    return y\n# last\r\n\nclass A:\n    pass  # end of input";
        let comments = nodes_of_kind(text, "comment");
        assert_eq!(comments.len(), 4);
        let unreparsed = ["x", " ", "#", "\\", "\"", "'", ")", ":", "\t", "é", "😀", "\u{2028}", "\u{85}"];
        let reparsed = ["\n", "\r", "\x0c", "\0", "a\nb"];
        let typed: Vec<&str> = unreparsed.iter().chain(&reparsed).copied().collect();
        for comment in comments {
            for (range, inserted) in edits_in(text, comment, &typed) {
                let needs_reparse = needs_reparse_to_a_fresh_parse(text, range, inserted);
                // The comment's text holds the `\r` of its line's CRLF: taking it out is reparsed.
                let removed = &text[range.start..range.end];
                let inside = range.start > comment.start && !reparsed.contains(&inserted) && removed != "\r";
                assert_eq!(needs_reparse, !inside, "{range:?} {inserted:?}");
            }
        }
    }

    /// Digits typed and deleted at every place of every number of a script (integers, floats
    /// with exponents and underscores, hex, octal and binary, complex): the tree is a fresh
    /// parse's tree node for node. A digit typed or deleted right after a digit of a decimal
    /// number takes no reparse; before a letter or an underscore, and in a number with a prefix
    /// or a `j`, it does.
    #[test]
    fn typing_digits_in_a_number_needs_no_reparse() {
        let text = "batch_size = 32\nlr = 1e-3\nsteps = 1_000\nmask = 0x1f + 0o17 + 0b10\nz = 2j + 1.5 + .25 + 10.\nx = f(3)[0]\n";
        let numbers: Vec<TextRange> =
            nodes_of_kind(text, "integer").into_iter().chain(nodes_of_kind(text, "float")).collect();
        assert_eq!(numbers.len(), 12);
        let digits: Vec<&str> = ["0", "1", "7", "8", "9"].to_vec();
        let mut unreparsed = 0;
        for number in numbers {
            for (range, inserted) in edits_in(text, number, &digits) {
                unreparsed += usize::from(!needs_reparse_to_a_fresh_parse(text, range, inserted));
            }
        }
        assert!(unreparsed > 40, "{unreparsed} edits of numbers not reparsed");
        let reparsed = |range: TextRange, inserted: &str| needs_reparse(text, range, inserted);
        let at = |place: &str| place_after(text, place);
        for place in ["= 3", "= 32", "1e-3", "= 1_000", "1.5", "f(3"] {
            assert!(!reparsed(TextRange::empty(at(place)), "4"), "a digit after {place:?}");
        }
        assert!(!reparsed(TextRange::new(at("= 3"), at("= 32")), ""), "deleting a digit after a digit");
        for place in ["= ", "0x1", "0o1", "0b1", "lr = 1", "= 1_", "z = 2", "10."] {
            assert!(reparsed(TextRange::empty(at(place)), "4"), "a digit after {place:?}");
        }
        assert!(reparsed(TextRange::empty(at("= 0")), "4"), "a digit before a prefix's letter");
    }

    /// Whether replacing `range` of `text` with `inserted`, as a buffer edits it, needs a reparse.
    fn needs_reparse(text: &str, range: TextRange, inserted: &str) -> bool {
        let mut document = Document::new(text, 1);
        document.edit_text(range, inserted);
        document.needs_reparse()
    }

    /// The offset just after the first `place` in `text`.
    fn place_after(text: &str, place: &str) -> usize {
        text.find(place).expect("the script holds the place") + place.len()
    }

    /// The nodes of `text`'s tree that are of the named kind `kind`.
    fn nodes_of_kind(text: &str, kind: &str) -> Vec<TextRange> {
        let kind = crate::parse::python().id_for_node_kind(kind, true);
        crate::parse::layout(&parse(text, None))
            .into_iter()
            .filter(|(of_kind, ..)| *of_kind == kind)
            .map(|(_, bytes, ..)| TextRange::new(bytes.start, bytes.end))
            .collect()
    }

    /// At every place of `within` in `text`, its end included: each of `typed` typed, and the
    /// character there deleted.
    fn edits_in<'t>(text: &str, within: TextRange, typed: &[&'t str]) -> Vec<(TextRange, &'t str)> {
        let mut edits = Vec::new();
        for at in (within.start..=within.end).filter(|&at| text.is_char_boundary(at)) {
            edits.extend(typed.iter().map(|typed| (TextRange::empty(at), *typed)));
            if at < within.end {
                let next_char = text[at..].chars().next().map_or(0, char::len_utf8);
                edits.push((TextRange::new(at, at + next_char), ""));
            }
        }
        edits
    }

    /// Whether replacing `range` of `text` with `inserted`, as a buffer edits it, needs a
    /// reparse; the tree, reparsed where it needs one, is checked against a fresh parse's.
    fn needs_reparse_to_a_fresh_parse(text: &str, range: TextRange, inserted: &str) -> bool {
        let mut document = Document::new(text, 1);
        document.edit_text(range, inserted);
        let needs_reparse = document.needs_reparse();
        let fresh = parse(document.text(), None);
        assert_same_layout(document.tree(), &fresh, &format!("{range:?} {inserted:?}"));
        needs_reparse
    }

    /// Typing and deleting inside a string's text, at every place of every string of a script
    /// (both quotes, triple quotes with quotes and a line inside, an f-string, raw and bytes
    /// strings, an escape, a backslash that is none and half an escape, non-ASCII text): the tree
    /// is a fresh parse's tree node for node.
    /// Plain characters typed inside the text or at its end, and deletions that join no quotes,
    /// are not reparsed; quotes, backslashes, braces and line breaks typed are, and so is every
    /// edit of a string with an escape and a deletion that joins two quotes.
    #[test]
    fn typing_inside_a_string_needs_no_reparse() {
        let text = r#"import torch

device = "cuda:0"
name = 'it"s'
doc = """a "quoted" word
next ""line"" end"""
tail = """a""x"""
path = f"{device}/runs/{name}.pt"
raw = r'C:/x' + b"bytes"
esc = "tab\there"
digits = "\d+"
half = "\x4"
msg = "显存 😀 ok"
empty = ""
"#;
        let contents = nodes_of_kind(text, "string_content");
        assert_eq!(contents.len(), 12);
        // `n` typed after the backslash of `\d`, or `1` after the `\x4` of an escape being typed,
        // makes an escape.
        let plain = ["x", "n", "1", " ", "é", "😀", "/", "#", ":"];
        let stopping = ["\"", "'", "\\", "{", "}", "\n"];
        let typed: Vec<&str> = plain.iter().chain(&stopping).copied().collect();
        let mut unreparsed = 0;
        for content in contents {
            for (range, inserted) in edits_in(text, content, &typed) {
                let needs_reparse = needs_reparse_to_a_fresh_parse(text, range, inserted);
                unreparsed += usize::from(!needs_reparse);
                assert!(needs_reparse || !stopping.contains(&inserted), "{range:?} {inserted:?}");
            }
        }
        assert!(unreparsed > 200, "{unreparsed} edits of strings not reparsed");
        let reparsed = |range: TextRange, inserted: &str| needs_reparse(text, range, inserted);
        let at = |place: &str| place_after(text, place);
        for place in ["\"cuda", "\"cuda:0", "/runs", "r'C:", "显存 "] {
            assert!(!reparsed(TextRange::empty(at(place)), "x"), "typing after {place:?}");
        }
        assert!(!reparsed(TextRange::new(at("\"cud"), at("\"cuda")), ""), "deleting inside a string");
        assert!(reparsed(TextRange::empty(at("\"")), "x"), "typing before a string's first character");
        assert!(reparsed(TextRange::empty(at("\"tab")), "x"), "typing in a string with an escape");
        assert!(reparsed(TextRange::new(at("a\"\""), at("a\"\"x")), ""), "deleting what parts two quotes");
    }

    /// A comment typed a character at a time: at the end of a block's last line before a dedent,
    /// at the end of a function's header, on a blank line between two methods. Then a space typed
    /// and deleted before a call's arguments in a function further down, which is reparsed, and
    /// the comment taken out again. The keystrokes after the `#` are not reparsed, nor are the
    /// spaces before it at the end of a line of code; each reparse after them, told what theirs
    /// would have been told, rebuilds the statements around its edit, not the rest of the file.
    #[test]
    fn a_reparse_after_keystrokes_that_change_no_token_rebuilds_little() {
        let text = script();
        let elsewhere = text.match_indices("        loss = model").nth(100).expect("the script holds the place");
        let after_the_hash = 2 * " warm up".len();
        let places = [
            ("        total += loss.item()\n    return total", after_the_hash + 4),
            ("def train_3(model, loader):", after_the_hash + 4),
            // On a blank line the spaces are indentation, which the scanner measures.
            ("        super().__init__()\n", after_the_hash),
        ];
        for (place, expected_unreparsed) in places {
            let at = text.find(place).expect("the script holds the place") + place.len();
            let typed = "  # warm up";
            let space_at = elsewhere.0 + elsewhere.1.len() + typed.len();
            let typing = (0..typed.len()).map(|i| (TextRange::empty(at + i), &typed[i..=i]));
            let spacing = [(TextRange::empty(space_at), " "), (TextRange::new(space_at, space_at + 1), "")];
            let deleting = (0..typed.len()).rev().map(|i| (TextRange::new(at + i, at + i + 1), ""));
            let mut document = Document::unparsed(&text, 1);
            let mut tree = document.settled_tree();
            let mut unreparsed = 0;
            for (range, inserted) in typing.chain(spacing).chain(deleting) {
                document.edit_text(range, inserted);
                unreparsed += usize::from(!document.needs_reparse());
                let edited = document.tree().clone();
                let fresh = parse(document.text(), None);
                assert_same_layout(&edited, &fresh, &format!("{place:?} {range:?} {inserted:?}"));
                // At most the statements around the edit, and after keystrokes inside the
                // comment the two around it too; told nothing of those keystrokes, the reparse
                // of the space rebuilds all 300 statements after the comment.
                let rebuilt = statements_not_shared(&tree, &edited);
                assert!(rebuilt <= 4, "{place:?} {range:?} {inserted:?}: {rebuilt} top-level statements rebuilt");
                tree = edited;
            }
            assert_eq!(document.text(), text);
            assert_eq!(unreparsed, expected_unreparsed, "{place:?}");
        }
    }

    /// Typing in a comment near the top of a file and in one near its end, then a space inside a
    /// call's parentheses between them: the reparse of the space is told of the two comments
    /// apart, and does not parse the text between them anew.
    #[test]
    fn keystrokes_in_comments_far_apart_are_told_apart() {
        let text = script();
        let comment = "        # No parameters of its own.";
        let first = text.find(comment).expect("the script holds the comment") + comment.len();
        let last = text.match_indices(comment).nth(140).expect("the script holds the comment").0 + comment.len();
        let call = text.match_indices("        loss = model").nth(70).expect("the script holds the place");
        let space_at = call.0 + call.1.len() + 1;
        let mut document = Document::unparsed(&text, 1);
        let tree = document.settled_tree();
        document.edit_text(TextRange::empty(last), "!");
        document.edit_text(TextRange::empty(first), "!");
        assert!(!document.needs_reparse());
        document.edit_text(TextRange::empty(space_at), " ");
        assert!(document.needs_reparse());
        let edited = document.tree().clone();
        assert_same_layout(&edited, &parse(document.text(), None), "the space");
        // The statements around each comment and around the space; told as one span, the 283
        // between the comments.
        let rebuilt = statements_not_shared(&tree, &edited);
        assert!(rebuilt <= 9, "{rebuilt} top-level statements rebuilt");
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

    #[test]
    fn a_span_on_a_lines_first_token_starts_in_the_line_of_code_before() {
        let text = "def f():\n    del y\n\n *\n@d\ndef g():\n    pass\n";
        let tree = parse(text, None);
        let after_star = text.find('*').unwrap() + 1;
        let span = span_to_reparse(text, &tree, TextRange::empty(after_star), "2");
        assert!(text[span.start..].starts_with("y\n\n *"), "{:?}", &text[span.start..span.end]);
        // Past a line's first token the span starts as before: one character before the edit.
        let span = span_to_reparse(text, &tree, TextRange::empty(text.find("pass").unwrap() + 4), "#");
        assert!(text[span.start..].starts_with("s\n"), "{:?}", &text[span.start..span.end]);
    }

    /// An ERROR can cut the statements of a block out of it and take in a decorator's `@`: the
    /// statements then start at the top level indented, and the span runs over all of them, to
    /// the first statement that starts its line.
    #[test]
    fn a_span_in_a_syntax_error_runs_over_the_statements_it_cut_apart() {
        let text = "class A:\n    def f(self):\n        pass\n * 2\n    def g(self, x):\n        h = x\n        return h\n\n@torch.no_grad()\ndef h():\n    pass\n";
        let tree = parse(text, None);
        let root = tree.root_node();
        let cut_out = root.children(&mut root.walk()).filter(|s| s.start_position().column != 0).count();
        assert_eq!(cut_out, 5, "{}", root.to_sexp());
        let two = text.find('2').unwrap();
        let span = span_to_reparse(text, &tree, TextRange::new(two, two + 1), "");
        assert!(text[..span.end].ends_with("torch.no_grad()\nd"), "{:?}", &text[span.start..span.end]);
    }
}
