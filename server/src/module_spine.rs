//! Lets tree-sitter reuse runs of a module's top-level statements whole, and lines that start
//! with a name or `print`.
//!
//! Tree-sitter holds a repetition as a binary tree of hidden nodes: a module of 982 statements
//! hangs them from about 980 `module_repeat1` nodes, its spine. Python's grammar makes the parser
//! weigh several parses at once at every statement, and a node reduced while it does is marked
//! fragile: no reparse reuses it whole. So every reparse walks down the whole spine, reuses the
//! statements one at a time and builds the spine again: about a thousand shifts and reductions,
//! 1.0–1.5 ms of a keystroke on a 10,000-line script whatever the edit, and several times the
//! rest of the reparse.
//!
//! A spine node holds nothing but whole statements, each parsed at the same state (the one after
//! a run of statements), so reusing it whole gives the tree that reusing its statements one by
//! one would. After each parse this marks such nodes reusable, as tree-sitter would have had it
//! not weighed several parses when it reduced them:
//!
//! - the node and everything under it parsed without an error, and every statement in it is
//!   itself reusable (not fragile) and was parsed at the state a reparse will meet it in, the one
//!   after the statements before it; the node is given that state, as tree-sitter gives a
//!   reduced node the state before it;
//! - it does not hold the module's first statement, which is parsed at the module's first state;
//! - its first token was lexed in a state with the lexer mode of the state a reparse meets the
//!   node in (the one after a spine node). Tree-sitter checks this before it reuses a node; a
//!   node whose first token is then lexed again would take the statement it starts apart, and
//!   the statements after it, each lexed in the state the last one left;
//! - the state after its last statement has that lexer mode too, so the token after the node is
//!   checked as tree-sitter alone would check it. A simple statement (`x = 1`) leaves another
//!   lexer mode than a definition, as does a comment between statements: runs of definitions
//!   gain, and a module of interleaved assignments, comments and definitions gains less. None
//!   loses: no statement is rebuilt that tree-sitter alone would have shared (a test checks it).
//!
//! A line of simple statements that starts with a name (`loss = model(x)`, `optimizer.step()`)
//! is never reused whole by tree-sitter at the top level, spine or no spine: it is checked in one
//! parse state and shifted in another, and tree-sitter wants a name-first node's state to be the
//! one it is checked in. In a script written at module level nearly every line is parsed again
//! at every keystroke, its first name lexed anew. Such a line is given the state it is checked in
//! ([`meet_where_its_name_was_lexed`]), and the reparse then shares the statement in it whole and
//! builds only the line around it. A top-level `print(...)` line is left fragile by tree-sitter,
//! which weighs it as a call and as a Python 2 `print` statement; in a tree without a syntax error
//! it is marked reusable ([`share_a_print_line`]). On a 10,000-line script at module level the
//! reparse went from 66–69 ms to 4–5 ms (p90).
//!
//! Only nodes that this parse built are written: those reached from the new tree's root through
//! nodes that nothing else holds. A node shared with an older tree, which a lint may be reading
//! on another thread, is left as it is.
//!
//! This reads and writes tree-sitter's node records, whose layout is that of tree-sitter 0.27.1
//! and tree-sitter-python 0.25.0 (both pinned in `Cargo.toml`). The layout is checked once
//! against a parse whose answers are known; where it differs nothing is written, and reparses
//! only cost what they did. The reparse tests (`reparse_span`) compare every reparsed tree with a
//! fresh parse's, and the keystroke fuzz target does the same over random edits.

use std::sync::OnceLock;

use tree_sitter::Tree;

/// The grammar's internal symbol of the module's repetition (`aux_sym_module_repeat1`).
const MODULE_REPEAT: u16 = 240;
/// The grammar's `_simple_statements`: a line of simple statements and its line break.
const SIMPLE_STATEMENTS: u16 = 110;
/// The grammar's word token, whose keywords tree-sitter tells apart by the parse state.
const IDENTIFIER: u16 = 1;
/// The grammar's `print` and `exec` keywords, which also serve as names.
const PRINT: u16 = 12;
const EXEC: u16 = 42;
/// The parser's first state: where the module's first statement is parsed.
const FIRST_STATE: u16 = 1;

/// Byte offsets into tree-sitter's `SubtreeHeapData`.
const SIZE_BYTES: usize = 16;
const ERROR_COST: usize = 32;
const CHILD_COUNT: usize = 36;
const SYMBOL: usize = 40;
const PARSE_STATE: usize = 42;
const FLAGS: usize = 44;
const FIRST_LEAF_SYMBOL: usize = 68;
const FIRST_LEAF_STATE: usize = 70;

/// Bits of the flags byte: `extra`, `fragile_left` and `fragile_right`, `has_changes`.
const EXTRA: u8 = 1 << 2;
const FRAGILE: u8 = (1 << 3) | (1 << 4);
const HAS_CHANGES: u8 = 1 << 5;

/// Tree-sitter's `TSLexerMode` (ABI 15).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
struct LexerMode {
    lex_state: u16,
    external_lex_state: u16,
    reserved_word_set_id: u16,
}

unsafe extern "C" {
    /// Tree-sitter's own, which its parser checks a reused node's first token with.
    fn ts_language_lex_mode_for_state(language: *const (), state: u16) -> LexerMode;
}

/// Mark the spine nodes of a tree that was just parsed (before anything else holds it) reusable
/// where reusing them whole is what reusing their statements would give.
pub fn make_reusable(tree: &Tree) {
    let Some(states) = layout_checked() else { return };
    // SAFETY: the layout was checked ([`layout_checked`]); the slot of the root is the tree's own.
    unsafe {
        let Some(root) = heap_record(tree.root_node().id() as *const usize) else { return };
        let mut walk = Walk { states, previous_statement: None, error_free: read::<u32>(root, ERROR_COST) == 0 };
        walk.children(root, read::<u32>(root, 0) == 1);
    }
}

/// The states a reparse meets top-level statements in.
#[derive(Clone)]
struct States {
    language: tree_sitter::Language,
    /// After one or more statements, reduced to the spine: where every statement after the
    /// first is parsed.
    after_statements: u16,
    /// The lexer mode of the state after a spine node is shifted there, which a spine node's first
    /// token must have been lexed in for tree-sitter to reuse the node.
    after_spine_mode: LexerMode,
}

struct Walk<'s> {
    states: &'s States,
    /// The symbol of the last statement walked, if any came before the node being walked.
    previous_statement: Option<u16>,
    /// The tree holds no syntax error: its top-level statements after the first were each parsed
    /// in the state after the ones before them.
    error_free: bool,
}

impl Walk<'_> {
    /// Walk the children of `record`, marking its spine nodes reusable where they may be; whether
    /// every statement in it is reusable and was parsed where a reparse will meet it. `exclusive`:
    /// nothing but its parent in this tree holds `record`, and so on up to the root.
    unsafe fn children(&mut self, record: *mut u8, exclusive: bool) -> bool {
        // SAFETY: `record` is a live node record of the tree being walked.
        unsafe {
            let child_count = read::<u32>(record, CHILD_COUNT) as usize;
            let slots = (record as *const usize).sub(child_count);
            let mut all_reusable = true;
            for i in 0..child_count {
                // A token among statements: a comment, which tree-sitter keeps in its slot.
                let Some(child) = heap_record(slots.add(i)) else {
                    all_reusable = false;
                    continue;
                };
                let flags = read::<u8>(child, FLAGS);
                if flags & EXTRA != 0 {
                    continue;
                }
                let met_in = if self.previous_statement.is_some() { self.states.after_statements } else { FIRST_STATE };
                let symbol = read::<u16>(child, SYMBOL);
                if symbol != MODULE_REPEAT {
                    let parsed_where_met = read::<u16>(child, PARSE_STATE) == met_in
                        || starts_with_a_name(child) && first_child_parse_state(child) == Some(met_in);
                    all_reusable &= flags & FRAGILE == 0 && parsed_where_met;
                    if exclusive && read::<u32>(child, 0) == 1 {
                        meet_where_its_name_was_lexed(child, met_in);
                        if self.error_free && met_in == self.states.after_statements {
                            share_a_print_line(child, met_in);
                        }
                    }
                    self.previous_statement = Some(symbol);
                    continue;
                }
                let holds_first = self.previous_statement.is_none();
                let child_exclusive = exclusive && read::<u32>(child, 0) == 1;
                if !self.children(child, child_exclusive) {
                    all_reusable = false;
                    continue;
                }
                // Met after a spine node, the token that follows is checked in the state after the
                // spine, where tree-sitter alone checks it in the state after its last statement.
                let first_token_fits = lex_mode(read::<u16>(child, FIRST_LEAF_STATE)) == self.states.after_spine_mode;
                let next_token_fits = self.previous_statement.is_some_and(|last| {
                    lex_mode(self.states.language.next_state(self.states.after_statements, last))
                        == self.states.after_spine_mode
                });
                // A node that starts with a name is checked in the state after the statement
                // before it, and would have to have that state; but it is shifted, after that
                // statement is reduced, in the state before it, and is broken down unless it has
                // that one. Left fragile, tree-sitter looks into it and shares its first line
                // ([`meet_where_its_name_was_lexed`]); marked, it would be refused whole.
                let reusable = !holds_first
                    && !first_token_is_a_name(child)
                    && first_token_fits
                    && next_token_fits
                    && read::<u32>(child, ERROR_COST) == 0
                    && flags & HAS_CHANGES == 0;
                if reusable && child_exclusive && flags & FRAGILE != 0 {
                    write(child, PARSE_STATE, met_in);
                    write(child, FLAGS, flags & !FRAGILE);
                }
            }
            all_reusable
        }
    }
}

/// Whether a top-level statement is a line of simple statements (`x = f(y)`, `print(x)`) whose
/// first token is a name.
unsafe fn starts_with_a_name(statement: *const u8) -> bool {
    // SAFETY: the caller's record is live.
    unsafe { read::<u16>(statement, SYMBOL) == SIMPLE_STATEMENTS && first_token_is_a_name(statement) }
}

/// Whether the first token of a node with children is a name, which tree-sitter reuses only in the
/// node's own parse state.
unsafe fn first_token_is_a_name(record: *const u8) -> bool {
    // SAFETY: the caller's record is live and has children, so its first leaf is set.
    unsafe { read::<u16>(record, FIRST_LEAF_SYMBOL) == IDENTIFIER }
}

/// The parse state of a node's first child, which starts where the node starts; `None` for a
/// child stored inline.
unsafe fn first_child_parse_state(record: *const u8) -> Option<u16> {
    // SAFETY: the caller's record is live and has children, which lie just before it.
    unsafe {
        let child_count = read::<u32>(record, CHILD_COUNT) as usize;
        let first = heap_record((record as *const usize).sub(child_count))?;
        Some(read::<u16>(first, PARSE_STATE))
    }
}

/// Let a reparse share a top-level line of simple statements that starts with a name.
///
/// Tree-sitter reuses a node whose first token is a name only when it meets the node in the node's
/// own parse state: a name lexed in another state could have been a keyword there (`match`,
/// `print`). A top-level statement is met with the statement before it still on the stack, in the
/// state its first token was lexed in, and is shifted after that statement was reduced into the
/// module's repetition, in the state before it, its parse state: the two differ, and every such
/// line is refused and parsed again, its first name lexed anew. In a script written at module
/// level that is nearly every line.
///
/// Given the state its first token was lexed in as its parse state, the line passes tree-sitter's
/// check exactly where a fresh parse would lex that token the same way. When the parser then shifts
/// it, tree-sitter finds the line's parse state is not the state it is in, and takes its first
/// child instead, which starts in that state (it is checked here): the statement is shared whole,
/// and only the line around it, the statement and its line break, is built again. `met_in` is the
/// state a reparse shifts the line in; nothing is written to a line that was not parsed there, or
/// that is fragile, changed or holds an error.
unsafe fn meet_where_its_name_was_lexed(line: *mut u8, met_in: u16) {
    // SAFETY: the caller's record is live, and nothing but the tree being walked holds it.
    unsafe {
        let flags = read::<u8>(line, FLAGS);
        let lexed_in = read::<u16>(line, FIRST_LEAF_STATE);
        if starts_with_a_name(line)
            && flags & (FRAGILE | HAS_CHANGES) == 0
            && read::<u32>(line, ERROR_COST) == 0
            && read::<u16>(line, PARSE_STATE) == met_in
            && first_child_parse_state(line) == Some(met_in)
            && lexed_in != met_in
        {
            write(line, PARSE_STATE, lexed_in);
        }
    }
}

/// Let a reparse share a top-level `print(...)` or `exec(...)` line whole.
///
/// Python 2's `print x` and `exec code` statements make tree-sitter parse such a line two ways at
/// once, as a call and as that statement. It marks what it builds meanwhile fragile and never
/// reuses it, so every reparse parses every such line anew. Both ways end at the line's break,
/// where the two stacks meet in one state and tree-sitter keeps one tree (the call, by the
/// grammar's dynamic precedence), so the line's tree follows from its text and the state it starts
/// in. A line after the module's first statement, in a tree without a syntax error anywhere,
/// started in the state a reparse meets it in (the one after the statements before it): it is
/// given that state and no longer marked fragile. What is inside it stays as it is, so an edit in
/// the line is parsed as tree-sitter alone would.
unsafe fn share_a_print_line(line: *mut u8, met_in: u16) {
    // SAFETY: the caller's record is live, and nothing but the tree being walked holds it.
    unsafe {
        let flags = read::<u8>(line, FLAGS);
        if read::<u16>(line, SYMBOL) == SIMPLE_STATEMENTS
            && matches!(read::<u16>(line, FIRST_LEAF_SYMBOL), PRINT | EXEC)
            && flags & FRAGILE != 0
            && flags & HAS_CHANGES == 0
            && read::<u32>(line, ERROR_COST) == 0
        {
            write(line, PARSE_STATE, met_in);
            write(line, FLAGS, flags & !FRAGILE);
        }
    }
}

/// The node record a subtree slot points to; `None` for a subtree stored inline in its slot (a
/// token), which has no record.
unsafe fn heap_record(slot: *const usize) -> Option<*mut u8> {
    // SAFETY: the caller's slot is live; its lowest bit is set when the subtree is inline.
    let value = unsafe { std::ptr::read(slot) };
    (cfg!(target_endian = "little") && value & 1 == 0).then_some(value as *mut u8)
}

unsafe fn read<T: Copy>(record: *const u8, offset: usize) -> T {
    // SAFETY: the caller's offset is that of a field of type `T` in a live record.
    unsafe { std::ptr::read_unaligned(record.add(offset) as *const T) }
}

unsafe fn write<T: Copy>(record: *mut u8, offset: usize, value: T) {
    // SAFETY: as `read`, on a record that nothing but this tree holds.
    unsafe { std::ptr::write_unaligned(record.add(offset) as *mut T, value) }
}

fn lex_mode(state: u16) -> LexerMode {
    // SAFETY: the language is tree-sitter-python's static one, and the state one of its parser's.
    unsafe { ts_language_lex_mode_for_state(language_pointer(), state) }
}

fn language_pointer() -> *const () {
    // SAFETY: the grammar's language function returns a pointer to its static language.
    unsafe { (tree_sitter_python::LANGUAGE.into_raw())() }
}

/// The states to walk with, once the records of a parse with known answers read as expected;
/// `None` (nothing is ever written) when they do not.
fn layout_checked() -> Option<&'static States> {
    static CHECKED: OnceLock<Option<States>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let language = crate::parse::python();
            if language.abi_version() != 15
                || language.node_kind_for_id(MODULE_REPEAT) != Some("module_repeat1")
                || language.node_kind_for_id(SIMPLE_STATEMENTS) != Some("_simple_statements")
                || language.node_kind_for_id(IDENTIFIER) != Some("identifier")
                || language.node_kind_for_id(PRINT) != Some("print")
                || language.node_kind_for_id(EXEC) != Some("exec")
            {
                return None;
            }
            let text = "import os\n\n\ndef f():\n    pass\n\n\nx = 1\ny = 2\n";
            let tree = crate::parse::parse_as_tree_sitter_leaves_it(text, None);
            let root_node = tree.root_node();
            // SAFETY: reads of the root's record and its children's, each within the record's size
            // when the layout is as expected; a layout that is not would be caught below before any
            // pointer read from it is followed.
            let layout_holds = unsafe {
                let root = heap_record(root_node.id() as *const usize)?;
                let children = read::<u32>(root, CHILD_COUNT) as usize;
                read::<u16>(root, SYMBOL) == root_node.kind_id()
                    && read::<u16>(root, FIRST_LEAF_SYMBOL) == language.id_for_node_kind("import", false)
                    && read::<u32>(root, SIZE_BYTES) as usize == root_node.byte_range().len()
                    && read::<u32>(root, ERROR_COST) == 0
                    && read::<u32>(root, 0) == 1
                    && (1..=4).contains(&children)
                    && read::<u8>(root, FLAGS) & 0b11 == 0b11
                    && {
                        let first = heap_record((root as *const usize).sub(children))?;
                        matches!(read::<u16>(first, SYMBOL), MODULE_REPEAT)
                    }
            };
            layout_holds.then(|| {
                let after_statements = language.next_state(FIRST_STATE, MODULE_REPEAT);
                let after_spine = language.next_state(after_statements, MODULE_REPEAT);
                States { language, after_statements, after_spine_mode: lex_mode(after_spine) }
            })
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{layout, parse, parse_as_tree_sitter_leaves_it};
    use crate::test_support::told_edit;
    use crate::text::TextRange;
    use crate::tree_reuse::statements_not_shared;
    use std::sync::{Arc, Mutex};
    use tree_sitter::Parser;

    /// A module of definitions, as most training scripts' bulk is.
    fn definitions() -> String {
        let mut text = String::from("\"\"\"Docstring.\"\"\"\nimport torch\n\nDEVICE = 'cuda'\n\n");
        for n in 0..200 {
            text.push_str(&format!(
                "def step_{n}(model, batch):\n    loss = model(batch).sum()\n    loss.backward()\n    return loss\n\n\n\
                 class Block{n}(torch.nn.Module):\n    pass\n\n\n"
            ));
        }
        text
    }

    /// Definitions with simple statements and comments between them, whose first tokens are
    /// lexed in other states.
    fn interleaved() -> String {
        let mut text = String::from("import torch\n");
        for n in 0..150 {
            text.push_str(&format!(
                "RATE_{n} = 1e-3\ndef step_{n}(model):\n    return model\n# note\nclass Block{n}:\n    pass\nprint({n})\n\n"
            ));
        }
        text
    }

    /// A script written at module level: lines that start with names, soft keywords used as names
    /// (`match`, `type`), a Python 2 `print` statement, comments, and now and then a loop.
    fn module_level() -> String {
        let mut text = String::from("import torch\nmodel = torch.nn.Linear(4, 4)\n");
        for n in 0..200 {
            text.push_str(&format!(
                "x_{n} = torch.randn(4, 4)\nloss_{n} = model(x_{n}).sum()\nloss_{n}.backward()\n# note\n\
                 match = {n}\ntype = 'step'\nprint(f\"step {n}\")\nprint x_{n}\n"
            ));
            if n % 20 == 0 {
                text.push_str("for i in range(3):\n    total = i\nafter_loop = 1\n");
            }
        }
        text
    }

    /// Where the tests type in each script: after a statement that breaks off halfway through it.
    fn scripts() -> [(String, usize); 3] {
        let at = |text: &str, line_end: &str| {
            text.match_indices(line_end).nth(100).expect("the script holds the line").0 + line_end.len()
        };
        let (definitions, interleaved, module_level) = (definitions(), interleaved(), module_level());
        [
            (at(&definitions, "    return loss"), definitions),
            (at(&interleaved, "    return model"), interleaved),
            (at(&module_level, ".sum()"), module_level),
        ]
        .map(|(at, text)| (text, at))
    }

    /// Reparse `text` against `edited`, as [`parse`] does, and count tree-sitter's log messages
    /// that start with one of `messages`.
    fn reparse_counting(text: &str, edited: &Tree, messages: &'static [&'static str]) -> (Tree, usize) {
        let count = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&count);
        let mut parser = Parser::new();
        parser.set_language(&crate::parse::python()).expect("the grammar loads");
        parser.set_logger(Some(Box::new(move |_, logged: &str| {
            if messages.iter().any(|message| logged.starts_with(message)) {
                *counter.lock().expect("not poisoned") += 1;
            }
        })));
        let reparsed = parser.parse(text, Some(edited)).expect("parses");
        make_reusable(&reparsed);
        let count = *count.lock().expect("not poisoned");
        (reparsed, count)
    }

    /// `text` with `inserted` at `at`, and `tree` told of it.
    fn edit(text: &str, tree: &Tree, at: usize, inserted: &str) -> (String, Tree) {
        told_edit(text, tree, TextRange::empty(at), TextRange::empty(at), inserted)
    }

    /// The keystrokes the tests type: an expression broken halfway, whole again, then a comment.
    const KEYSTROKES: [&str; 4] = [" *", " 2", "  #", "x"];

    #[test]
    fn the_layout_reads_as_expected() {
        assert!(layout_checked().is_some(), "tree-sitter's node records are not laid out as this module reads them");
    }

    #[test]
    fn a_reparse_reuses_runs_of_definitions_whole_and_gives_a_fresh_parses_tree() {
        let [(text, at), ..] = scripts();
        // As the server opens a buffer: a fresh parse leaves many statements fragile too, which a
        // few reparses of the same text rebuild without ([`crate::tree_reuse::settled`]).
        let mut tree = crate::tree_reuse::settled(&text, parse(&text, None));
        let statements = tree.root_node().child_count() as usize;
        let (mut text, mut at) = (text, at);
        for inserted in KEYSTROKES {
            let (new_text, edited) = edit(&text, &tree, at, inserted);
            let (reparsed, refused) =
                reparse_counting(&new_text, &edited, &["cant_reuse_node_is_fragile tree:module_repeat1"]);
            assert_eq!(layout(&reparsed), layout(&parse(&new_text, None)), "after {inserted:?}");
            // Without the marks, every spine node is refused: about one per statement.
            assert!(refused * 10 < statements, "{refused} spine nodes refused, of {statements} statements");
            at += inserted.len();
            (text, tree) = (new_text, reparsed);
        }
    }

    #[test]
    fn a_reparse_shares_lines_that_start_with_a_name_or_print_and_gives_a_fresh_parses_tree() {
        let [.., (text, at)] = scripts();
        let mut tree = crate::tree_reuse::settled(&text, parse(&text, None));
        let lines = tree.root_node().child_count() as usize;
        let (mut text, mut at) = (text, at);
        for inserted in KEYSTROKES.iter().chain(&["\n", "match = 1", "\n"]) {
            let (new_text, edited) = edit(&text, &tree, at, inserted);
            let (reparsed, refused) = reparse_counting(
                &new_text,
                &edited,
                &[
                    "cant_reuse_node symbol:_simple_statements, first_leaf_symbol:identifier",
                    "cant_reuse_node_is_fragile tree:_simple_statements",
                ],
            );
            assert_eq!(layout(&reparsed), layout(&parse(&new_text, None)), "after {inserted:?}");
            // Without the states given and the `print` lines marked, every such line is refused:
            // nearly all of the script's.
            assert!(refused * 20 < lines, "{refused} lines refused, of {lines} statements");
            at += inserted.len();
            (text, tree) = (new_text, reparsed);
        }
    }

    #[test]
    fn no_statement_is_rebuilt_that_tree_sitter_alone_would_share() {
        for (text, at) in scripts() {
            let settle = |parse_text: fn(&str, Option<&Tree>) -> Tree| {
                (0..6).fold(parse_text(&text, None), |tree, _| parse_text(&text, Some(&tree)))
            };
            let (mut marked, mut unmarked) = (settle(parse), settle(parse_as_tree_sitter_leaves_it));
            let (mut current, mut at) = (text.clone(), at);
            for inserted in KEYSTROKES.iter().chain(&["\n", "y = 1", "\n\n"]) {
                let (next, edited_marked) = edit(&current, &marked, at, inserted);
                let (_, edited_unmarked) = edit(&current, &unmarked, at, inserted);
                let reparsed_marked = parse(&next, Some(&edited_marked));
                let reparsed_unmarked = parse_as_tree_sitter_leaves_it(&next, Some(&edited_unmarked));
                assert_eq!(layout(&reparsed_marked), layout(&parse(&next, None)), "after {inserted:?}");
                let rebuilt_marked = statements_not_shared(&marked, &reparsed_marked);
                let rebuilt_unmarked = statements_not_shared(&unmarked, &reparsed_unmarked);
                assert!(
                    rebuilt_marked <= rebuilt_unmarked,
                    "after {inserted:?}: {rebuilt_marked} statements rebuilt, tree-sitter alone {rebuilt_unmarked}"
                );
                at += inserted.len();
                (current, marked, unmarked) = (next, reparsed_marked, reparsed_unmarked);
            }
        }
    }
}
