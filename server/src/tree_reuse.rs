//! What a buffer's last lint found in each top-level statement, kept for the next lint in the
//! form of the nodes it found.
//!
//! The language server lints a buffer again after every keystroke. An edit changes one top-level
//! statement, and tree-sitter's incremental reparse shares every other statement's subtree with
//! the old tree: the very same subtree, only at another offset. The nodes found in such a
//! statement last time are this tree's nodes once moved by that offset. Moving them costs a few
//! additions, where finding them again from the statement (by child-index paths) walks the
//! tree down to each one, and on a ten-thousand-line file cost more than a third of a lint.
//!
//! tree-sitter's Rust API has no way to make a node of a subtree at a given place, so this module
//! builds one from the parts the C library gives a node: its start (byte, row, column), its alias,
//! its identity and its tree. The identity is the address of the slot that holds the node's
//! subtree in its parent; for the nodes inside a shared statement those slots are the same memory
//! in both trees. Safety rests on three facts of tree-sitter (pinned in Cargo.lock):
//!
//! - A statement is reused only when the slot of the new tree's statement holds the same subtree
//!   pointer as the kept statement's slot did. The memory keeps the tree the nodes came from alive
//!   (a clone holds its root), so that subtree cannot have been freed and its address taken by
//!   another: equal pointers are the same subtree, and every slot below it is memory it owns.
//! - Subtrees are shared by reference counts and copied before an edit changes them
//!   (`ts_subtree_make_mut`), so a subtree still held by the kept tree is never changed in place.
//! - A node's start is its statement's start plus the same offsets as before: sizes and the
//!   spaces between nodes are stored in the subtrees, so a shared subtree lays its nodes out as it
//!   did. (The parser shares a subtree only where the text under it is unchanged.)
//!
//! A test moves every node of every fixture and example across edits inside and before its
//! statement and compares it with the node found by walking the new tree, parent included.
//!
//! A statement the reparse built anew although its text is unchanged (the one after an edit, a
//! top-level `print(...)`: see [`StatementMemory`]) is recalled by its text instead, without a
//! [`Placer`]: what was kept of it holds, but its nodes cannot be placed.

use foldhash::{HashMap, HashMapExt};
use smallvec::SmallVec;
use std::collections::hash_map::Entry::{Occupied, Vacant};
use std::hash::BuildHasher;
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tree_sitter::{Node, Tree, ffi};

/// A node inside a top-level statement, as a memory keeps it: its start relative to the
/// statement's, its alias, its length and kind, its identity (0 for the statement itself, whose
/// slot lies in the module's node and so differs between trees) and its statement's subtree.
#[derive(Clone, Copy, Debug)]
pub struct KeptNode {
    bytes: u32,
    rows: u32,
    /// Relative to the statement's column on the statement's first row, absolute below it.
    column: u32,
    alias: u32,
    /// Its length in bytes and its kind (its alias, if it has one), by which it is found in a
    /// statement of the same text that the parser built anew ([`KeptNode::find_in`]).
    len: u32,
    kind: u16,
    id: usize,
    statement: usize,
}

impl KeptNode {
    /// `node`, which lies in `statement` (or is it): found by walking or querying the statement.
    pub fn of(statement: Node<'_>, node: Node<'_>) -> Self {
        let inside = statement.start_byte() <= node.start_byte() && node.end_byte() <= statement.end_byte();
        assert!(inside, "a node kept with a statement it does not lie in");
        let subtree = subtree_of(statement).unwrap_or(0);
        let (len, kind) = (node.byte_range().len() as u32, node.kind_id());
        if node == statement {
            return Self { bytes: 0, rows: 0, column: 0, alias: 0, len, kind, id: 0, statement: subtree };
        }
        // A node's context is its start byte, row and column, then its alias.
        let origin = statement.into_raw().context;
        let raw = node.into_raw();
        let rows = raw.context[1] - origin[1];
        let column = if rows == 0 { raw.context[2] - origin[2] } else { raw.context[2] };
        Self {
            bytes: raw.context[0] - origin[0],
            rows,
            column,
            alias: raw.context[3],
            len,
            kind,
            id: raw.id as usize,
            statement: subtree,
        }
    }

    /// This node in `statement`, which has the kind and text of the statement it was kept from
    /// but which the parser built anew (it was recalled without a [`Placer`]), found at its place
    /// with its length and kind ([`find_at`]).
    pub fn find_in<'a>(&self, statement: Node<'a>) -> Option<Node<'a>> {
        let start = statement.start_byte() + self.bytes as usize;
        find_at(statement, start..start + self.len as usize, self.kind)
    }
}

/// The node of `statement` that spans `range` and has the kind `kind` (its alias, if it has
/// one): the first, in the order a walk meets them, found from the statement down through the
/// nodes that hold the range. `None` where there is none.
pub fn find_at(statement: Node<'_>, range: std::ops::Range<usize>, kind: u16) -> Option<Node<'_>> {
    let (start, end) = (range.start, range.end);
    // Most often the smallest node that spans the range is the one: tree-sitter's own descent
    // finds it at a fraction of the cost of going through each level's children with a cursor.
    // A node of Python's grammar never has a child of its own kind with its own range, so the
    // smallest is also the first of that kind (debug builds check it). An empty node, or one
    // that holds a single child with its range (a call as an expression statement), is looked
    // for through the children.
    if let Some(smallest) = statement.descendant_for_byte_range(start, end)
        && smallest.start_byte() == start
        && smallest.end_byte() == end
        && smallest.kind_id() == kind
    {
        debug_assert_eq!(
            find_through_children(statement, range, kind),
            Some(smallest),
            "a node of the grammar has a child of its own kind and range, so the smallest node there is not the first"
        );
        return Some(smallest);
    }
    find_through_children(statement, range, kind)
}

/// [`find_at`] through each level's children, first to last.
fn find_through_children(statement: Node<'_>, range: std::ops::Range<usize>, kind: u16) -> Option<Node<'_>> {
    let (start, end) = (range.start, range.end);
    let mut cursor = statement.walk();
    // More than one child holds an empty node at the end of another (an empty block after a
    // colon): each is looked in, first to last.
    let mut holding: SmallVec<[Node<'_>; 8]> = smallvec::smallvec![statement];
    while let Some(node) = holding.pop() {
        if node.start_byte() == start && node.end_byte() == end && node.kind_id() == kind {
            return Some(node);
        }
        let first = holding.len();
        holding
            .extend(node.children(&mut cursor).filter(|child| child.start_byte() <= start && end <= child.end_byte()));
        holding[first..].reverse();
    }
    None
}

/// Places kept nodes of one statement in a tree that shares the statement's subtree. Plain data
/// (the statement's node and its subtree's address), so a lint may hand it to another thread
/// with the tree.
#[derive(Clone)]
pub struct Placer<'a> {
    statement: Node<'a>,
    subtree: usize,
}

impl<'a> Placer<'a> {
    /// The statement in this tree.
    pub fn statement(&self) -> Node<'a> {
        self.statement
    }

    /// `kept`, which must have been kept from this statement, in this tree.
    pub fn place(&self, kept: &KeptNode) -> Node<'a> {
        // Placing a node of another statement would make a node of memory this tree may not hold.
        assert_eq!(kept.statement, self.subtree, "a node kept from another statement");
        if kept.id == 0 {
            return self.statement;
        }
        // The statement's start and tree, as the C library keeps them.
        let statement = self.statement.into_raw();
        let [byte, row, column, _] = statement.context;
        let column = if kept.rows == 0 { column + kept.column } else { kept.column };
        let raw = ffi::TSNode {
            context: [byte + kept.bytes, row + kept.rows, column, kept.alias],
            id: kept.id as *const std::ffi::c_void,
            tree: statement.tree,
        };
        // SAFETY: `kept` was found in this statement's subtree (checked above), which
        // `Recall::recall` found shared with the tree the node came from, so its slot is memory of
        // that subtree, which this tree holds for `'a`; and its start is this statement's plus the
        // offsets it had in the same subtree before.
        unsafe { Node::from_raw(raw) }
    }
}

/// What the lints of one buffer keep per top-level statement, keyed by the statement's subtree,
/// and found by its text too.
///
/// tree-sitter does not share every unchanged statement with the next tree. The statement after
/// an edited line is told changed and built anew ([`crate::reparse_span`]); a top-level
/// `print(...)` is built anew by every reparse, because tree-sitter weighs it as a call and as a
/// Python 2 `print` statement and does not reuse what it built while it did. Left to itself it
/// would build anew every top-level statement that starts with a name; [`crate::module_spine`]
/// lets it share those. One built anew with the same text and no syntax error is recalled by its
/// text: what was kept of it holds, but its kept nodes are not this tree's, so it comes without a
/// [`Placer`].
pub struct StatementMemory<T> {
    inner: Mutex<Shelf<T>>,
}

/// Where a [`StatementMemory`] keeps its memory between lints. A lint takes the memory off the
/// shelf rather than holding the lock: what it recalls may then be recalled on one thread and
/// kept again on another (the kept checks are recalled beside the model's build).
struct Shelf<T> {
    memory: Memory<T>,
    /// A lint has the memory.
    lent: bool,
    /// The memory was cleared while lent: what the lint brings back is dropped.
    cleared_while_lent: bool,
}

struct Memory<T> {
    /// The tree every kept statement belongs to, held so that their subtrees stay alive.
    tree: Option<Tree>,
    statements: HashMap<usize, Entry<T>>,
    /// What the last lint let go of, freed by [`StatementMemory::sweep`] once its diagnostics are
    /// out: the tree before it, whose rebuilt nodes are freed with it (thousands in a large file,
    /// each a cache miss), and what was kept of the statements the edit changed. The map's room
    /// is reused by the next lint.
    retired: Retired<T>,
}

struct Retired<T> {
    tree: Option<Tree>,
    statements: HashMap<usize, Entry<T>>,
}

/// How many statements a lint looks for by their text by reading every entry of the memory
/// before it makes an index of their texts. A keystroke in a script written in functions misses
/// a handful of statements, and reading the entries of a thousand costs a tenth of indexing them.
const SEARCHES_BEFORE_AN_INDEX: usize = 8;

/// What a memory keeps of one statement.
struct Entry<T> {
    value: Arc<T>,
    /// The statement's kind and text, hashed ([`text_key`]); `None` for a statement with a syntax
    /// error or after one, which is recalled only while the reparse shares it (see
    /// [`Recall::by_text`]).
    text: Option<TextKey>,
    /// Whether the nodes kept in `value` are of the subtree the entry is kept under. Not so for
    /// an entry recalled by its text into a statement built anew.
    placeable: bool,
}

/// The key a statement is recalled by when the parser built it anew: its kind and text, hashed
/// with a fixed seed (the text's length is part of what is hashed). Never zero, so that an entry
/// without one takes no room for it.
pub type TextKey = NonZeroU64;

fn text_key(statement: Node<'_>, text: &str) -> TextKey {
    let hash = foldhash::quality::FixedState::with_seed(0x7374_6174_656d_656e).hash_one((statement.kind_id(), text));
    TextKey::MIN | hash
}

/// The key `statement` of `text`, which follows `previous`, is recalled by when the parser
/// builds it anew: `None` when it or the statement before it has a syntax error.
///
/// The same text makes the same statement where the parser comes to it in its usual state,
/// after a whole statement. After a syntax error it may come to it in another: `main()` after a
/// broken `if` header was a bare call at the top level, where the same text had been an
/// expression statement. So a statement is found by its text only when neither it nor the
/// statement before it has an error, in the tree it was kept from and in the new one.
pub fn recall_key(statement: Node<'_>, previous: Option<Node<'_>>, text: &str) -> Option<TextKey> {
    let broken = statement.has_error() || previous.is_some_and(|previous| previous.has_error());
    (!broken).then(|| text_key(statement, &text[statement.byte_range()]))
}

impl<T> Default for Retired<T> {
    fn default() -> Self {
        Self { tree: None, statements: HashMap::new() }
    }
}

impl<T> Retired<T> {
    fn free(&mut self) {
        self.tree = None;
        self.statements.clear();
    }
}

impl<T> Default for Memory<T> {
    fn default() -> Self {
        Self { tree: None, statements: HashMap::new(), retired: Retired::default() }
    }
}

impl<T> Default for StatementMemory<T> {
    fn default() -> Self {
        Self { inner: Mutex::new(Shelf { memory: Memory::default(), lent: false, cleared_while_lent: false }) }
    }
}

impl<T> StatementMemory<T> {
    fn shelf(&self) -> MutexGuard<'_, Shelf<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        let mut shelf = self.shelf();
        shelf.cleared_while_lent = shelf.lent;
        let forgotten = std::mem::take(&mut shelf.memory);
        // Freed once the lock is let go: a lint that opens meanwhile does not wait for it.
        drop(shelf);
        drop(forgotten);
    }

    /// Free what the last lint let go of. A lint that finds it not swept frees it first.
    pub fn sweep(&self) {
        self.shelf().memory.retired.free();
    }

    /// Replace everything kept with what `value` makes of it (tests use it to see that the
    /// memory is read).
    #[cfg(test)]
    pub fn replace_all(&self, value: impl Fn(&T) -> T) {
        self.shelf().memory.statements.values_mut().for_each(|kept| kept.value = Arc::new(value(&kept.value)));
    }

    /// The memory for one lint of `tree`, whose text is `text`; `None` when another lint of the
    /// buffer has it (it is not waited for: that lint goes without).
    pub fn open<'m, 'a>(&'m self, tree: &'a Tree, text: &'a str) -> Option<Recall<'m, 'a, T>> {
        let mut memory = {
            let mut shelf = self.shelf();
            if shelf.lent {
                return None;
            }
            shelf.lent = true;
            std::mem::take(&mut shelf.memory)
        };
        memory.retired.free();
        let mut seen = std::mem::take(&mut memory.retired.statements);
        seen.reserve(memory.statements.len());
        Some(Recall {
            seen,
            memory,
            by_text: None,
            searched: 0,
            previous: None,
            #[cfg(debug_assertions)]
            unasked: crate::semantic::ast::top_level_statements(tree).into_iter(),
            missed: HashMap::new(),
            tree,
            text,
            shelf: self,
            kept_any: false,
            given_back: false,
        })
    }
}

/// One lint's use of a [`StatementMemory`]: what it recalls and what it keeps for the next.
pub struct Recall<'m, 'a, T> {
    memory: Memory<T>,
    seen: HashMap<usize, Entry<T>>,
    /// The subtrees of the memory's statements by their kind and text ([`recall_key`]), made
    /// when a statement is first missed: the entries a statement built anew may be recalled from.
    by_text: Option<HashMap<TextKey, SmallVec<[usize; 1]>>>,
    /// How many statements were looked for by their text so far.
    searched: usize,
    /// The statement asked for last: statements are asked for in order.
    previous: Option<Node<'a>>,
    /// The statements not yet asked for, which debug builds check each one asked for against:
    /// `previous` is the statement before only if none is left out.
    #[cfg(debug_assertions)]
    unasked: std::vec::IntoIter<Node<'a>>,
    /// The keys of the statements that were looked for by their text and not found, for
    /// [`Recall::keep`] to file them under.
    missed: HashMap<usize, TextKey>,
    tree: &'a Tree,
    text: &'a str,
    shelf: &'m StatementMemory<T>,
    /// Something was kept, or recalled into another subtree: what was seen is no longer only
    /// what the memory's own tree holds.
    kept_any: bool,
    /// The lint went no further than recalling: the memory goes back as it was.
    given_back: bool,
}

impl<'a, T> Recall<'_, 'a, T> {
    /// What the last lint kept of `statement`, with how to place its kept nodes in this tree
    /// where they are this tree's: `None` for a statement the last lint did not have (new or
    /// changed text), and no placer for one the parser built anew with the same text.
    /// Every statement of the tree is asked for, in order (debug builds check it).
    pub fn recall(&mut self, statement: Node<'a>) -> Option<(Arc<T>, Option<Placer<'a>>)> {
        #[cfg(debug_assertions)]
        assert_eq!(self.unasked.next(), Some(statement), "every top-level statement is asked for, in order");
        let previous = self.previous.replace(statement);
        let subtree = subtree_of(statement)?;
        let Some(entry) = self.memory.statements.remove(&subtree) else {
            return self.recall_by_text(statement, subtree, previous);
        };
        let value = Arc::clone(&entry.value);
        let placer = entry.placeable.then_some(Placer { statement, subtree });
        self.seen.insert(subtree, entry);
        Some((value, placer))
    }

    /// What the last lint kept of a statement with the text of `statement`, which the parser
    /// built anew as `subtree` after `previous`, when neither has a syntax error.
    fn recall_by_text(
        &mut self,
        statement: Node<'a>,
        subtree: usize,
        previous: Option<Node<'a>>,
    ) -> Option<(Arc<T>, Option<Placer<'a>>)> {
        let text = recall_key(statement, previous, self.text)?;
        let Some(entry) = self.take_by_text(text) else {
            // For `keep` to file the statement under.
            self.missed.insert(subtree, text);
            return None;
        };
        self.kept_any = true;
        let value = Arc::clone(&entry.value);
        self.seen.insert(subtree, Entry { value: entry.value, text: Some(text), placeable: false });
        Some((value, None))
    }

    /// An entry of the memory kept under the key `text`, taken out of it. Statements of the same
    /// text are alike: any of them will do.
    fn take_by_text(&mut self, text: TextKey) -> Option<Entry<T>> {
        self.searched += 1;
        let statements = &mut self.memory.statements;
        let kept = if self.by_text.is_none() && self.searched <= SEARCHES_BEFORE_AN_INDEX {
            statements.iter().find(|(_, entry)| entry.text == Some(text)).map(|(kept, _)| *kept)?
        } else {
            let by_text = self.by_text.get_or_insert_with(|| {
                let mut by_text: HashMap<TextKey, SmallVec<[usize; 1]>> = HashMap::with_capacity(statements.len());
                for (subtree, entry) in statements.iter() {
                    if let Some(text) = entry.text {
                        by_text.entry(text).or_default().push(*subtree);
                    }
                }
                by_text
            });
            // One recalled since the index was made is gone from the memory.
            let alike = by_text.get_mut(&text)?;
            std::iter::from_fn(|| alike.pop()).find(|kept| statements.contains_key(kept))?
        };
        statements.remove(&kept)
    }

    /// What the last lint kept of the statements not recalled so far: after every statement of
    /// this tree was asked for, those the edit changed or removed.
    pub fn forgotten(&self) -> impl Iterator<Item = &T> {
        self.memory.statements.values().map(|entry| &*entry.value)
    }

    /// Keep `value`, whose nodes were found in `statement` of this tree, for the next lint. A
    /// statement recalled is kept as it was without this: `value` replaces what it was.
    pub fn keep(&mut self, statement: Node<'a>, value: T) {
        self.kept_any = true;
        if let Some(subtree) = subtree_of(statement) {
            // Filed under the key it was recalled by, or looked for by; one not looked for by
            // its text (it or the statement before it has an error) is not found by it.
            let value = Arc::new(value);
            match self.seen.entry(subtree) {
                Occupied(mut recalled) => {
                    let text = recalled.get().text;
                    recalled.insert(Entry { value, text, placeable: true });
                }
                Vacant(new) => {
                    new.insert(Entry { value, text: self.missed.get(&subtree).copied(), placeable: true });
                }
            }
        }
    }

    /// Put the memory back as it was, for a lint that recalled but keeps nothing (it found no
    /// rule to run). Were it kept as recalled, what the statements this edit changed had kept
    /// would be gone, and with it the next lint's knowledge that they changed. A recall that kept
    /// something cannot be given back: the memory is emptied instead.
    pub fn give_back(mut self) {
        self.given_back = true;
    }
}

impl<T> Drop for Recall<'_, '_, T> {
    /// What this lint recalled or kept replaces the memory, with this lint's tree to keep it
    /// alive: every statement in it belongs to that tree. What it replaces is retired. The memory
    /// goes back on the shelf, unless it was cleared meanwhile.
    /// A lint that panicked leaves nothing: what it recalled and kept is of a lint that did not
    /// finish, and what it let go of is gone with it.
    fn drop(&mut self) {
        let memory = &mut self.memory;
        if self.given_back && !self.kept_any {
            // Every entry seen was recalled: all of them are of the memory's own tree.
            memory.statements.extend(self.seen.drain());
        } else if self.given_back || std::thread::panicking() {
            *memory = Memory::default();
        } else {
            let statements = std::mem::replace(&mut memory.statements, std::mem::take(&mut self.seen));
            let tree = memory.tree.replace(self.tree.clone());
            memory.retired = Retired { tree, statements };
        }
        let mut shelf = self.shelf.shelf();
        shelf.lent = false;
        if std::mem::take(&mut shelf.cleared_while_lent) {
            return;
        }
        shelf.memory = std::mem::take(memory);
    }
}

/// The most reparses [`settled`] makes.
const SETTLING_ROUNDS: usize = 16;

/// A tree of `text` whose top-level statements the next incremental reparse will share.
///
/// A fresh parse leaves many statements that a reparse does not share even where their text is
/// unchanged: tree-sitter does not reuse a subtree it built while weighing several parses of the
/// text at once (a "fragile" one), and Python's grammar makes it weigh several often. A reparse
/// builds many of them again without, and each reparse fewer: on a 10,000-line script of 982
/// statements, 654, 387, 152, 184, 75, ... Until then each keystroke would miss the
/// statements the last lint kept and lint them anew. This reparses the unchanged text until a
/// reparse builds at most one statement in a hundred anew, or the number stops falling.
pub fn settled(text: &str, tree: Tree) -> Tree {
    let mut tree = tree;
    let (mut fewest, mut rounds_without_fewer) = (usize::MAX, 0);
    for _ in 0..SETTLING_ROUNDS {
        let again = crate::parse::parse(text, Some(&tree));
        let rebuilt = statements_not_shared(&tree, &again);
        tree = again;
        // A round costs about a millisecond on a large file, and a statement rebuilt costs the next
        // keystroke tens of microseconds: the last few are not worth the rounds they take. Some
        // shapes are rebuilt by every reparse, so a count that stops falling ends the rounds too.
        if rebuilt * 100 <= tree.root_node().child_count() as usize {
            break;
        }
        if rebuilt < fewest {
            (fewest, rounds_without_fewer) = (rebuilt, 0);
        } else {
            rounds_without_fewer += 1;
            if rounds_without_fewer == 3 {
                break;
            }
        }
    }
    tree
}

/// How many top-level statements of `new` hold a subtree that no statement of `old` holds.
pub(crate) fn statements_not_shared(old: &Tree, new: &Tree) -> usize {
    let subtrees = |tree: &Tree| {
        let root = tree.root_node();
        let mut cursor = root.walk();
        root.children(&mut cursor).filter_map(|statement| subtree_of(statement)).collect::<Vec<_>>()
    };
    let before: std::collections::HashSet<usize> = subtrees(old).into_iter().collect();
    subtrees(new).into_iter().filter(|subtree| !before.contains(subtree)).count()
}

/// The subtree that the slot of a top-level statement holds, as an address; `None` for a
/// subtree stored inline in its slot (a leaf), which has no address of its own.
pub fn subtree_of(statement: Node<'_>) -> Option<usize> {
    // SAFETY: a node's id is the address of the slot holding its subtree in the parent's child
    // array (tree-sitter's `ts_node_new`), alive with the tree. The slot is a union of a pointer
    // to the subtree's heap data and inline data whose lowest bit, `is_inline`, is set (on
    // little-endian targets, the only ones this reads on).
    let slot = unsafe { std::ptr::read(statement.id() as *const usize) };
    (cfg!(target_endian = "little") && slot & 1 == 0).then_some(slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use crate::text::TextRange;

    /// Every node of each statement, in walk order.
    fn nodes_of(statement: Node<'_>) -> Vec<Node<'_>> {
        let mut nodes = Vec::new();
        let mut stack = vec![statement];
        let mut cursor = statement.walk();
        while let Some(node) = stack.pop() {
            nodes.push(node);
            stack.extend(node.children(&mut cursor).collect::<Vec<_>>().into_iter().rev());
        }
        nodes
    }

    fn describe(node: Node<'_>) -> String {
        format!(
            "{} {:?} {:?} {:?}",
            node.kind(),
            node.byte_range(),
            node.start_position(),
            node.parent().map(|p| p.id())
        )
    }

    /// How many statements of a tree were shared with the last, and how many recalled by text.
    #[derive(Default, Clone, Copy)]
    struct Reused {
        shared: usize,
        by_text: usize,
    }

    impl std::ops::Add for Reused {
        type Output = Self;
        fn add(self, other: Self) -> Self {
            Self { shared: self.shared + other.shared, by_text: self.by_text + other.by_text }
        }
    }

    /// Moves what `memory` kept into the document's current tree and checks every node against
    /// the tree's own, then keeps this tree's statements (those recalled by their text anew, so
    /// that the next round places their nodes). Returns how many statements were shared.
    fn check_placed(document: &mut Document, memory: &StatementMemory<Vec<KeptNode>>, name: &str) -> usize {
        check_recalled(document, memory, name).shared
    }

    /// [`check_placed`], counting the statements recalled by their text too, whose kept nodes
    /// are checked to lie where the new statement's do.
    fn check_recalled(document: &mut Document, memory: &StatementMemory<Vec<KeptNode>>, name: &str) -> Reused {
        let mut reused = Reused::default();
        let tree = document.tree().clone();
        let text = document.text().to_owned();
        let mut recall = memory.open(&tree, &text).expect("not in use");
        let mut statements = tree.root_node().walk();
        for statement in tree.root_node().children(&mut statements) {
            let expected = nodes_of(statement);
            match recall.recall(statement) {
                Some((kept, Some(placer))) => {
                    let placed: Vec<String> = kept.iter().map(|k| describe(placer.place(k))).collect();
                    let found: Vec<String> = expected.iter().map(|n| describe(*n)).collect();
                    assert_eq!(placed, found, "{name}:\n{text}");
                    reused.shared += 1;
                }
                Some((kept, None)) => {
                    // Recalled by its text: the nodes kept lie where this statement's do, and each
                    // is found in it as the very node.
                    let placed: Vec<String> =
                        kept.iter().map(|k| k.find_in(statement).map_or_else(|| "none".into(), describe)).collect();
                    let want: Vec<String> = expected.iter().map(|n| describe(*n)).collect();
                    assert_eq!(placed, want, "{name}: {}", &text[statement.byte_range()]);
                    let found: Vec<KeptNode> = expected.iter().map(|n| KeptNode::of(statement, *n)).collect();
                    let offsets = |nodes: &[KeptNode]| {
                        nodes.iter().map(|n| (n.bytes, n.rows, n.column, n.alias)).collect::<Vec<_>>()
                    };
                    assert_eq!(offsets(&kept), offsets(&found), "{name}: {}", &text[statement.byte_range()]);
                    recall.keep(statement, found);
                    reused.by_text += 1;
                }
                None if !statement.has_error() => {
                    recall.keep(statement, expected.iter().map(|n| KeptNode::of(statement, *n)).collect());
                }
                None => {}
            }
        }
        reused
    }

    /// Each statement of `tree` (whose text is `text`): whether it was recalled, and with a
    /// placer.
    fn recall_all<T>(memory: &StatementMemory<T>, tree: &Tree, text: &str) -> Vec<(bool, bool)> {
        let mut recall = memory.open(tree, text).expect("not in use");
        let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
        statements
            .iter()
            .map(|s| recall.recall(*s).map_or((false, false), |(_, placer)| (true, placer.is_some())))
            .collect()
    }

    /// A memory that kept each statement of `before` with its index, and a fresh parse of
    /// `after`, whose statements the memory's tree does not share.
    fn kept_then_parsed(before: &str, after: &str) -> (StatementMemory<usize>, Tree) {
        let memory = StatementMemory::default();
        keep_all(&memory, &crate::parse::parse(before, None), before);
        (memory, crate::parse::parse(after, None))
    }

    /// Ask for every statement of `tree`, then keep each with its index, as a first lint does.
    fn keep_all(memory: &StatementMemory<usize>, tree: &Tree, text: &str) {
        let mut recall = memory.open(tree, text).expect("not in use");
        let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
        assert!(statements.iter().all(|statement| recall.recall(*statement).is_none()), "the memory is empty");
        for (index, statement) in statements.into_iter().enumerate() {
            recall.keep(statement, index);
        }
    }

    #[test]
    fn what_a_lint_lets_go_of_is_held_until_swept() {
        let mut document = Document::new("import torch\nx = 1\ny = 2\n", 1);
        let memory = StatementMemory::default();
        check_placed(&mut document, &memory, "first");
        document.edit(TextRange::empty(0), "# a\n");
        check_placed(&mut document, &memory, "second");
        assert!(memory.shelf().memory.retired.tree.is_some(), "the tree before is held");
        memory.sweep();
        let shelf = memory.shelf();
        assert!(shelf.memory.retired.tree.is_none() && shelf.memory.retired.statements.is_empty());
        assert!(shelf.memory.tree.is_some() && shelf.memory.statements.len() == 3, "what is kept stays");
    }

    /// A lint has the memory to itself, on whichever thread it recalls and keeps; one that asks
    /// meanwhile goes without, and a clear meanwhile is not undone when the lint brings it back.
    #[test]
    fn a_lint_has_the_memory_to_itself_until_it_is_done() {
        fn is_send<T: Send>(_: &T) {}
        let mut document = Document::new("import torch\nx = 1\ny = 2\n", 1);
        let memory = StatementMemory::default();
        check_placed(&mut document, &memory, "first");
        let tree = document.tree().clone();
        let text = document.text().to_owned();
        let recall = memory.open(&tree, &text).expect("not in use");
        is_send(&recall);
        assert!(memory.open(&tree, &text).is_none(), "a second lint meanwhile goes without");
        let tree = &tree;
        let (recall, recalled) = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let mut recall = recall;
                    let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
                    let recalled = statements.iter().filter(|s| recall.recall(**s).is_some()).count();
                    (recall, recalled)
                })
                .join()
                .unwrap()
        });
        assert_eq!(recalled, 3, "recalled on another thread");
        drop(recall);
        assert_eq!(memory.shelf().memory.statements.len(), 3, "back on the shelf");

        let mut recall = memory.open(tree, &text).expect("not in use");
        for statement in tree.root_node().children(&mut tree.walk()) {
            assert!(recall.recall(statement).is_some());
        }
        memory.clear();
        drop(recall);
        assert!(memory.shelf().memory.statements.is_empty(), "cleared while lent");
        assert!(memory.open(tree, &text).is_some(), "and free again");
    }

    /// A lint that only recalled gives the memory back as it was: what the statements its edit
    /// changed had kept is still there for the next lint to find forgotten. One that kept
    /// something and gives back, or panics, leaves nothing.
    #[test]
    fn a_memory_given_back_is_as_it_was_and_a_panicking_lint_leaves_nothing() {
        let mut document = Document::new("def f():\n    return 1\n\n\ndef g():\n    return 2\n", 1);
        let memory = StatementMemory::default();
        check_placed(&mut document, &memory, "first");
        let kept = memory.shelf().memory.statements.len();
        let kept_tree = memory.shelf().memory.tree.clone().expect("kept");
        document.edit(TextRange::empty(44), "10");
        let tree = document.tree().clone();
        let text = document.text().to_owned();
        let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
        let mut recall = memory.open(&tree, &text).expect("not in use");
        let recalled: Vec<_> = statements.iter().filter_map(|s| recall.recall(*s)).collect();
        assert!(
            recalled.iter().all(|(_, placer)| placer.is_some()),
            "only statements the reparse shared: {:?}",
            recalled.iter().map(|(_, p)| p.is_some()).collect::<Vec<_>>()
        );
        let recalled = recalled.len();
        let forgotten = recall.forgotten().count();
        assert!(recalled > 0 && forgotten > 0 && recalled + forgotten == kept);
        recall.give_back();
        {
            let shelf = memory.shelf();
            assert_eq!(shelf.memory.statements.len(), kept, "the edited statements' entries are back");
            // A node's identity is the slot that holds it, and a statement's slot lies in the
            // module's node: the same in a tree and its clones, another in the reparsed tree.
            let first_statement = |tree: &Tree| tree.root_node().child(0).map(|n| n.id());
            let kept_now = shelf.memory.tree.as_ref().and_then(first_statement);
            assert_eq!(kept_now, first_statement(&kept_tree), "the tree kept is the one before");
            assert_ne!(kept_now, first_statement(&tree));
        }
        let mut recall = memory.open(&tree, &text).expect("not in use");
        assert_eq!(statements.iter().filter(|s| recall.recall(**s).is_some()).count(), recalled);
        assert_eq!(recall.forgotten().count(), forgotten, "and are found forgotten again");
        recall.keep(statements[1], Vec::new());
        recall.give_back();
        assert!(memory.shelf().memory.statements.is_empty(), "kept, then given back");

        check_placed(&mut document, &memory, "third");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _recall = memory.open(&tree, &text).expect("not in use");
            panic!("a rule's check");
        }));
        assert!(panicked.is_err());
        let shelf = memory.shelf();
        assert!(shelf.memory.statements.is_empty() && shelf.memory.tree.is_none() && !shelf.lent);
    }

    /// Each fixture and example, edited inside and before its statements (a character typed at
    /// the end of every fifth line, from the last up, then two lines added at the top): every
    /// node kept from the last tree and placed in the new one is the node the new tree has
    /// there, with the same parent.
    #[test]
    fn kept_nodes_are_placed_where_the_new_tree_has_them() {
        let mut reused = Reused::default();
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let name = path.display().to_string();
            let mut document = Document::new(&text, 1);
            let memory = StatementMemory::default();
            let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).step_by(5).collect();
            let edits = ends.iter().rev().map(|&at| (at, "(")).chain([(0, "\n# a new first line\n")]);
            for (i, (at, typed)) in edits.enumerate() {
                reused = reused + check_recalled(&mut document, &memory, &name);
                // What a lint lets go of is swept after some lints and freed by the next one
                // after others, as a server does.
                if i % 2 == 0 {
                    memory.sweep();
                }
                document.edit(TextRange::empty(at), typed);
            }
            reused = reused + check_recalled(&mut document, &memory, &name);
        }
        assert!(reused.shared > 1000, "only {} statements were shared between trees", reused.shared);
        assert!(reused.by_text > 100, "only {} statements were recalled by their text", reused.by_text);
    }

    /// Statements on one line: typing in the first leaves the row's second statement and the
    /// next line's shared, and each placed where the new tree has it.
    #[test]
    fn typing_early_in_a_row_keeps_the_next_rows() {
        let mut document = Document::new("x = 1; y = f(2, [3])\nz = y\n", 1);
        let memory = StatementMemory::default();
        assert_eq!(check_placed(&mut document, &memory, "first"), 0);
        document.edit(TextRange::empty(4), "10");
        assert_eq!(check_placed(&mut document, &memory, "typed"), 2);
        let fresh = crate::parse::parse(document.text(), None);
        assert_eq!(crate::parse::layout(document.tree()), crate::parse::layout(&fresh));
    }

    #[test]
    #[should_panic(expected = "a node kept from another statement")]
    fn a_node_of_another_statement_is_not_placed() {
        let text = "x = f(1)\ny = g(2)\n";
        let tree = crate::parse::parse(text, None);
        let first = tree.root_node().child(0).unwrap();
        let second = tree.root_node().child(1).unwrap();
        let memory: StatementMemory<()> = StatementMemory::default();
        memory.open(&tree, text).unwrap().keep(first, ());
        let (_, placer) = memory.open(&tree, text).unwrap().recall(first).expect("the same tree shares it");
        let _ = placer.expect("a placer").place(&KeptNode::of(second, second.child(0).unwrap()));
    }

    /// A statement left out would make the next one's `previous` wrong, and with it the guard
    /// against recalling by text after a syntax error.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "every top-level statement is asked for, in order")]
    fn a_statement_left_out_of_a_recall_is_caught() {
        let text = "x = (1,\ny = g(2)\nz = h(3)\n";
        let tree = crate::parse::parse(text, None);
        let memory: StatementMemory<()> = StatementMemory::default();
        let mut recall = memory.open(&tree, text).unwrap();
        let _ = recall.recall(tree.root_node().child(1).unwrap());
    }

    /// A statement whose text is the same but whose subtree the parser built anew is recalled by
    /// its text, without a placer: its kept nodes are not of this tree. One with a syntax error
    /// is not, nor one whose text changed, which is forgotten.
    #[test]
    fn a_statement_parsed_anew_is_recalled_by_its_text_without_a_placer() {
        let after = "import torch\nx = torch.ones(3)\nx = torch.ones(3)\ny = 2\nz = (1,\n";
        let (memory, tree) =
            kept_then_parsed("import torch\nx = torch.ones(3)\nx = torch.ones(3)\ny = 1\nz = (1,\n", after);
        let mut recall = memory.open(&tree, after).expect("not in use");
        let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
        let recalled: Vec<_> =
            statements.iter().map(|s| recall.recall(*s).map(|(kept, placer)| (*kept, placer.is_some()))).collect();
        assert!(statements.last().is_some_and(|s| s.has_error()), "the last statement is broken");
        // Both of the statements alike are recalled, from either of the two kept.
        assert!(
            matches!(recalled[..], [Some((0, false)), Some((1 | 2, false)), Some((1 | 2, false)), None, None]),
            "{recalled:?}"
        );
        assert_eq!(recall.forgotten().copied().collect::<std::collections::HashSet<_>>(), [3, 4].into());
        drop(recall);
        // Kept under the new subtrees, still without a placer.
        assert_eq!(
            recall_all(&memory, &tree, after),
            [(true, false), (true, false), (true, false), (false, false), (false, false)]
        );
    }

    /// After a statement with a syntax error, the parser may make of a statement's text what a
    /// clean parse would not: such a statement is not found by its text.
    #[test]
    fn a_statement_after_a_syntax_error_is_not_recalled_by_its_text() {
        let after = "import torch\nx = 1\n$\ny = 2\n";
        let (memory, tree) = kept_then_parsed("import torch\nx = 1\ny = 2\n", after);
        let statements: Vec<_> = tree.root_node().children(&mut tree.walk()).collect();
        let kinds: Vec<_> = statements.iter().map(|s| (s.kind(), s.has_error())).collect();
        assert_eq!(
            kinds,
            [
                ("import_statement", false),
                ("expression_statement", false),
                ("ERROR", true),
                ("expression_statement", false)
            ]
        );
        assert_eq!(recall_all(&memory, &tree, after), [(true, false), (true, false), (false, false), (false, false)]);
    }

    /// A lint that recalled a statement by its text and gives the memory back leaves nothing:
    /// what it recalled is filed under this tree's subtrees, which the memory's tree does not
    /// hold.
    #[test]
    fn a_memory_given_back_after_a_recall_by_text_is_emptied() {
        let text = "x = f(1)\ny = g(2)\n";
        let (memory, tree) = kept_then_parsed(text, text);
        let mut recall = memory.open(&tree, text).expect("not in use");
        assert!(recall.recall(tree.root_node().child(0).unwrap()).is_some_and(|(_, placer)| placer.is_none()));
        recall.give_back();
        assert!(memory.shelf().memory.statements.is_empty() && memory.shelf().memory.tree.is_none());
    }

    /// The examples, one after another, many times: a script large enough that a fresh parse
    /// leaves statements the next reparse does not share.
    fn large_script() -> String {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut text = String::new();
        for _ in 0..20 {
            for name in ["train_resnet.py", "finetune_llm_ddp.py", "gan_legacy_amp.py"] {
                text.push_str(&std::fs::read_to_string(examples.join(name)).expect("example"));
            }
        }
        text
    }

    #[test]
    fn a_settled_tree_shares_its_statements_with_the_next_reparse() {
        let text = large_script();
        let fresh = crate::parse::parse(&text, None);
        let statements = fresh.root_node().child_count() as usize;
        // Without settling, the next reparse would build many statements anew.
        let unsettled = statements_not_shared(&fresh, &crate::parse::parse(&text, Some(&fresh)));
        assert!(unsettled * 100 > statements, "{unsettled} of {statements} rebuilt: nothing to settle");
        let tree = settled(&text, fresh);
        assert_eq!(tree.root_node().to_sexp(), crate::parse::parse(&text, None).root_node().to_sexp());
        let rebuilt = statements_not_shared(&tree, &crate::parse::parse(&text, Some(&tree)));
        assert!(
            rebuilt * 4 <= unsettled,
            "{rebuilt} of {statements} statements rebuilt after settling, {unsettled} before"
        );
    }
}
