//! What the model's walk noted in an edited buffer's last lint, carried into the next lint's tree.
//!
//! An edit changes one top-level statement, and tree-sitter's reparse shares every other
//! statement's subtree with the last tree (see [`crate::tree_reuse`]). The walk of a statement
//! depends on that statement alone, so what it noted there last time still holds: the same nodes,
//! moved by the statement's shift in bytes and rows. Rebuilding the model's lists and name indices
//! from each statement's notes cost a large script's keystroke millions of instructions, and an
//! editor waits for the model before any rule runs. Here the last lint's lists are kept whole:
//! each node is moved into the new tree in place, the notes of changed and removed statements are
//! dropped, and the walk of the new statements is merged in by position. The name indices keep
//! their keys and their lists.
//!
//! Moving a node rests on the facts [`crate::tree_reuse`] states: a carried statement's subtree is
//! the very subtree of a statement in the new tree (equal pointers, with the last tree held alive
//! until the move is done, so the address cannot have been reused), and a node of a shared subtree
//! lies at the same offsets from its statement's start as before. A statement whose start moved to
//! another column is walked again: the columns on its first row would move with it. The
//! statement's own node is the one exception to "the same node": its slot lies in the module's
//! node, which the reparse rebuilds, so it is replaced by the new tree's statement.
//!
//! The reparse also builds anew, with the same text, every top-level statement that starts with
//! a name (see [`crate::tree_reuse`]): in a script written at module level, nearly all of them.
//! Such a statement is paired with the carried one by its kind and text, under the guard
//! [`tree_reuse::recall_key`] states, and its nodes are found in the new statement by their
//! places, lengths and kinds ([`tree_reuse::find_at`]): the same text parsed in the same state
//! lays out the same nodes. Going down to each noted node costs a fraction of walking the whole
//! statement again.

use foldhash::{HashMap, HashMapExt};
use tree_sitter::{Node, Tree, ffi};

use super::source_order::{InSourceOrder, insert_column, start_of};
use super::walk::{StatementNotes, Walked};
use crate::grammar_ids;
use crate::tree_reuse::{self, TextKey, recall_key, subtree_of};

/// The last lint's walk, kept for the next lint of the same buffer.
pub(super) struct Carried {
    /// The nodes are those of the last tree; nothing reads them until [`Carried::carry`] has
    /// moved them.
    walked: Walked<'static>,
    statements: Vec<CarriedStatement>,
    /// Held so that the carried statements' subtrees stay alive: an address the new tree shares
    /// is then the same subtree, never a new one allocated where a freed one was. The nodes of a
    /// statement built anew are read in it, to be found in the new one.
    tree: Tree,
}

/// A top-level statement of the last lint's tree.
struct CarriedStatement {
    subtree: Option<usize>,
    /// Its node's identity: the statement's own node is replaced, not moved.
    id: usize,
    start: usize,
    row: u32,
    column: u32,
    /// Whether it names CUDA, and the key it is paired by with a statement the reparse built
    /// anew.
    notes: StatementNotes,
}

/// How far a carried statement moved, in bytes and rows.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Shift {
    bytes: i64,
    rows: i64,
}

/// How the nodes of a carried statement come into the new tree.
#[derive(Clone, Copy)]
struct Move<'a> {
    shift: Shift,
    /// The statement the reparse built anew in its place, with its text, in which each node is
    /// found; `None` when the new tree shares the statement's subtree and each node is moved.
    found_in: Option<Node<'a>>,
}

impl Move<'_> {
    fn is_shift(&self, shift: Shift) -> bool {
        self.found_in.is_none() && self.shift == shift
    }
}

/// The carried statements from one byte of the last text up to `end`: all moved by one shift
/// (a statement found in one the reparse built anew makes a run of its own), or (`None`) all
/// changed or removed by the edit.
#[derive(Clone, Copy)]
struct Run<'a> {
    end: usize,
    how: Option<Move<'a>>,
}

/// How the last lint's statements map onto this lint's.
pub(super) struct Plan<'a> {
    /// Runs of carried statements, in order, covering the whole of the last text: an edit makes
    /// three (before it, the statements it changed, after it), and one more for each statement
    /// the reparse built anew with the same text.
    runs: Vec<Run<'a>>,
    /// The new node of each carried statement's node, by the old node's identity.
    statements: HashMap<usize, Node<'a>>,
    /// For each statement of the new tree: the carried statement it is, if any.
    carried_from: Vec<Option<usize>>,
    tree: *const ffi::TSTree,
}

impl Plan<'_> {
    /// The carried statement that `statement` (an index into the new tree's statements) is.
    pub fn carried_from(&self, statement: usize) -> Option<usize> {
        self.carried_from[statement]
    }
}

/// The statements of the new tree that share no carried statement's subtree, by their kind and
/// text ([`recall_key`]): those a carried statement of the same text may be paired with.
struct BuiltAnew {
    /// Sorted, so that the statements of one text come in order.
    by_text: Vec<(TextKey, usize)>,
}

impl BuiltAnew {
    fn of(statements: &[Node<'_>], shared: &[Option<usize>], text: &str) -> Self {
        let mut is_shared = vec![false; statements.len()];
        for new_index in shared.iter().flatten() {
            is_shared[*new_index] = true;
        }
        let mut by_text: Vec<(TextKey, usize)> = (0..statements.len())
            .filter(|index| !is_shared[*index])
            .filter_map(|index| {
                let previous = index.checked_sub(1).map(|previous| statements[previous]);
                recall_key(statements[index], previous, text).map(|key| (key, index))
            })
            .collect();
        by_text.sort_unstable();
        Self { by_text }
    }

    /// The first statement within `within` whose key is `key`. Each is taken once: `within`
    /// starts after the last one taken.
    fn take(&self, key: TextKey, within: std::ops::Range<usize>) -> Option<usize> {
        let at = self.by_text.partition_point(|entry| *entry < (key, within.start));
        self.by_text.get(at).filter(|(found, index)| *found == key && within.contains(index)).map(|(_, index)| *index)
    }
}

impl Carried {
    /// Keep what a lint's walk noted in `statements` of `tree` for the next lint, with `notes`
    /// on each statement.
    pub fn keep<'a>(walked: Walked<'a>, tree: &'a Tree, statements: &[Node<'a>], notes: Vec<StatementNotes>) -> Self {
        let statements = statements
            .iter()
            .zip(notes)
            .map(|(statement, notes)| {
                let raw = statement.into_raw();
                CarriedStatement {
                    subtree: subtree_of(*statement),
                    id: raw.id as usize,
                    start: raw.context[0] as usize,
                    row: raw.context[1],
                    column: raw.context[2],
                    notes,
                }
            })
            .collect();
        // SAFETY: only the lifetime changes. The nodes are raw parts (pointers and offsets, no
        // references), and nothing calls into them until `carry` has moved them into a tree that
        // holds their subtrees; `tree` keeps those subtrees alive until then.
        let walked = unsafe { std::mem::transmute::<Walked<'a>, Walked<'static>>(walked) };
        Self { walked, statements, tree: tree.clone() }
    }

    /// How the carried statements map onto `statements`, those of `tree` with the text `text`;
    /// `None` when they do not map in order (then every statement is walked anew).
    pub fn plan<'a>(&self, tree: &'a Tree, text: &str, statements: &[Node<'a>]) -> Option<Plan<'a>> {
        let shared = self.shared_with(statements);
        let built_anew = BuiltAnew::of(statements, &shared, text);
        // For each carried statement, the next one after it that the new tree shares: a statement
        // built anew is paired before it, or the order would break.
        let mut next_shared = vec![usize::MAX; shared.len()];
        for index in (1..shared.len()).rev() {
            next_shared[index - 1] = shared[index].unwrap_or(next_shared[index]);
        }
        let mut runs: Vec<Run<'a>> = Vec::new();
        let mut moved = HashMap::with_capacity(self.statements.len());
        let mut carried_from = vec![None; statements.len()];
        let (mut last_new, mut previous_start) = (None, None);
        for (index, old) in self.statements.iter().enumerate() {
            let after = last_new.map_or(0, |last| last + 1);
            let found = match shared[index] {
                Some(new_index) => Some((new_index, false)),
                None => {
                    old.notes.text.and_then(|key| built_anew.take(key, after..next_shared[index])).map(|at| (at, true))
                }
            };
            let how = match found {
                Some((new_index, by_text)) => {
                    let statement = statements[new_index];
                    // A call or an assignment is always inside a statement, never one: only the
                    // nodes of the lists that can hold a statement are looked up by identity.
                    // (One paired by its text has no syntax error, and is never one.)
                    if grammar_ids::CALL.contains(statement) || grammar_ids::ASSIGNMENT.contains(statement) {
                        return None;
                    }
                    // Shared subtrees keep their order; anything else is not a reparse of the last tree.
                    if new_index < after {
                        return None;
                    }
                    last_new = Some(new_index);
                    carried_from[new_index] = Some(index);
                    moved.insert(old.id, statement);
                    let start = statement.into_raw().context;
                    let shift = Shift {
                        bytes: i64::from(start[0]) - old.start as i64,
                        rows: i64::from(start[1]) - i64::from(old.row),
                    };
                    Some(Move { shift, found_in: by_text.then_some(statement) })
                }
                None => None,
            };
            // Statements that share a start would leave a node's statement unclear.
            if previous_start.is_some_and(|previous| previous >= old.start) {
                return None;
            }
            previous_start = Some(old.start);
            // A run ends where the first statement moved otherwise starts.
            let continues = |last: &Run<'a>| match (last.how, how) {
                (None, None) => true,
                (Some(last), Some(this)) => this.found_in.is_none() && last.is_shift(this.shift),
                _ => false,
            };
            match runs.last_mut() {
                Some(last) if continues(last) => {}
                Some(last) => {
                    last.end = old.start;
                    runs.push(Run { end: usize::MAX, how });
                }
                None => runs.push(Run { end: usize::MAX, how }),
            }
        }
        if runs.is_empty() {
            runs.push(Run { end: usize::MAX, how: None });
        }
        let tree = tree.root_node().into_raw().tree;
        Some(Plan { runs, statements: moved, carried_from, tree })
    }

    /// For each carried statement, the index of the statement of `statements` that shares its
    /// subtree and starts at the same column (the columns of a statement's first row move with
    /// its start), if any.
    fn shared_with(&self, statements: &[Node<'_>]) -> Vec<Option<usize>> {
        let mut by_subtree: HashMap<usize, usize> = HashMap::with_capacity(statements.len());
        for (index, statement) in statements.iter().enumerate() {
            if let Some(subtree) = subtree_of(*statement) {
                by_subtree.insert(subtree, index);
            }
        }
        self.statements
            .iter()
            .map(|old| {
                let new_index = by_subtree.get(&old.subtree?).copied()?;
                (statements[new_index].into_raw().context[2] == old.column).then_some(new_index)
            })
            .collect()
    }

    /// What was noted of the carried statement `index`.
    pub fn notes(&self, index: usize) -> StatementNotes {
        self.statements[index].notes
    }

    /// The carried notes moved into the plan's tree, with `fresh`, the walk of the statements not
    /// carried, merged in by position; `None` where a node of a statement built anew was not
    /// found in it (the statements are not alike after all: they are walked anew).
    pub fn carry<'a>(self, plan: &Plan<'a>, fresh: Walked<'a>) -> Option<Walked<'a>> {
        // The last tree stays alive until the nodes found anew have been read.
        let Self { walked, tree, .. } = self;
        // SAFETY: only the lifetime changes (see `keep`). From here on the carried nodes are
        // typed as this tree's but are still the last tree's: each one is read only through a
        // mover, which places it in this tree before anything calls into it.
        let mut walked = unsafe { std::mem::transmute::<Walked<'static>, Walked<'a>>(walked) };
        let mut mover = Mover::new(plan, &tree);
        carry_calls(&mut mover, &mut walked);
        let inside = Placing::InsideStatements;
        let anywhere = Placing::Anywhere;
        carry_with_column(&mut mover, &mut walked.loop_nodes, &mut walked.outer_loops);
        carry_with_column(&mut mover, &mut walked.with_statements, &mut walked.with_scopes);
        mover.carry_ordered(&mut walked.assignment_nodes, inside, |_, _, _, _| {});
        for list in [&mut walked.functions, &mut walked.classes, &mut walked.import_nodes] {
            let kept = mover.carry_all(list, anywhere);
            list.truncate(kept);
        }
        for index in [&mut walked.calls_by_name, &mut walked.assignments] {
            index.retain(|_, nodes| mover.carry_ordered(nodes, inside, |_, _, _, _| {}) > 0);
        }
        walked.functions_by_name.retain(|_, functions| {
            let kept = mover.carry_all(functions, anywhere);
            functions.truncate(kept);
            kept > 0
        });
        if mover.lost {
            return None;
        }
        merge_fresh(&mut walked, fresh);
        Some(walked)
    }
}

/// Whether a list's nodes can be top-level statements themselves (definitions, loops, `with`
/// and import statements), which are replaced rather than moved.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placing {
    InsideStatements,
    Anywhere,
}

/// Moves carried nodes into the plan's tree. A list's nodes come in source order, so each run of
/// statements holds a stretch of them, found by a binary search, and moved by one shift (or found
/// in the statement built anew).
struct Mover<'p, 'a> {
    plan: &'p Plan<'a>,
    /// The last two nodes looked up by identity, and what that found, the older first: the calls
    /// of one function share their scope, those of one loop their loop, and a call's scope and
    /// loop are looked up in turn. A lookup costs a hash.
    last_lookups: [(usize, Option<Node<'a>>); 2],
    /// The last tree, which the carried nodes are of.
    carried_tree: *const ffi::TSTree,
    /// A node of a statement built anew was not found in it.
    lost: bool,
}

impl<'p, 'a> Mover<'p, 'a> {
    fn new(plan: &'p Plan<'a>, carried_tree: &Tree) -> Self {
        let carried_tree = carried_tree.root_node().into_raw().tree;
        Self { plan, last_lookups: [(0, None); 2], carried_tree, lost: false }
    }

    /// The new tree's statement that the carried node `id` is, if it is a top-level statement.
    #[inline]
    fn statement(&mut self, id: usize) -> Option<Node<'a>> {
        if let Some((_, statement)) = self.last_lookups.iter().find(|(looked_up, _)| *looked_up == id) {
            return *statement;
        }
        let statement = self.plan.statements.get(&id).copied();
        self.last_lookups = [self.last_lookups[1], (id, statement)];
        statement
    }

    /// `node`, a carried node, in the new tree: moved by the shift, or found in the statement
    /// built anew.
    #[inline]
    fn place(&mut self, node: Node<'a>, how: Move<'a>, placing: Placing) -> Node<'a> {
        let mut raw = node.into_raw();
        if placing == Placing::Anywhere
            && let Some(statement) = self.statement(raw.id as usize)
        {
            return statement;
        }
        let shift = how.shift;
        if let Some(statement) = how.found_in {
            return self.find(node, shift, statement);
        }
        raw.context[0] = (i64::from(raw.context[0]) + shift.bytes) as u32;
        raw.context[1] = (i64::from(raw.context[1]) + shift.rows) as u32;
        raw.tree = self.plan.tree;
        // SAFETY: the node lies in a carried statement whose subtree the new tree shares (see the
        // module's comment), and it is not that statement's own node (those are replaced above,
        // and a list placed as lying inside statements never holds one: see `Carried::plan`), so
        // its slot is memory of that subtree; its start is the statement's new start plus the
        // offsets it had, in bytes and rows, and in columns, since the statement starts at the
        // same column.
        unsafe { Node::from_raw(raw) }
    }

    /// `node`, a carried node of a statement that the reparse built anew as `statement` with the
    /// same text, `shift` further on: the node of `statement` at its place with its length and
    /// kind. Where there is none, the mover notes it lost and gives back `node` as it was, which
    /// nothing may read.
    fn find(&mut self, node: Node<'a>, shift: Shift, statement: Node<'a>) -> Node<'a> {
        let mut raw = node.into_raw();
        raw.tree = self.carried_tree;
        // SAFETY: the node is of the last tree, whose subtrees that tree's clone, held by the
        // carry until it ends, keeps alive; with the clone as its tree it is a node of the clone.
        let carried = unsafe { Node::from_raw(raw) };
        let start = (i64::from(raw.context[0]) + shift.bytes) as usize;
        let range = start..start + carried.byte_range().len();
        tree_reuse::find_at(statement, range, carried.kind_id()).unwrap_or_else(|| {
            self.lost = true;
            node
        })
    }

    /// Move the carried nodes of a source-ordered list in place, dropping those of statements the
    /// edit changed or removed; `beside(mover, from, to, how)` moves the entry `from` of the
    /// columns beside the list to `to`. Returns how many nodes are kept.
    fn carry(
        &mut self,
        nodes: &mut [Node<'a>],
        placing: Placing,
        mut beside: impl FnMut(&mut Self, usize, usize, Move<'a>),
    ) -> usize {
        // A script written at module level makes a run of each statement, and a name index holds
        // many short lists: each list goes from run to run by a search, not through them all.
        let runs = &self.plan.runs;
        let (mut kept, mut from, mut run) = (0, 0, 0);
        while from < nodes.len() {
            // The run of the next node, the first to end past its start; the last run ends at
            // `usize::MAX`.
            let start = start_of(nodes[from]);
            run += runs[run..].partition_point(|run| run.end <= start);
            let Run { end, how } = runs[run];
            let to = from + nodes[from..].partition_point(|node| start_of(*node) < end);
            if let Some(how) = how {
                for at in from..to {
                    nodes[kept] = self.place(nodes[at], how, placing);
                    beside(self, at, kept, how);
                    kept += 1;
                }
            }
            from = to;
        }
        kept
    }

    /// [`Mover::carry`] for a source-ordered list, whose starts move with its nodes; returns how
    /// many nodes are kept, for the caller to cut the columns beside the list to.
    fn carry_ordered(
        &mut self,
        list: &mut InSourceOrder<'a>,
        placing: Placing,
        mut beside: impl FnMut(&mut Self, usize, usize, Move<'a>),
    ) -> usize {
        let (nodes, starts) = list.parts_mut();
        let kept = self.carry(nodes, placing, |mover, from, to, how| {
            starts[to] = (starts[from] as i64 + how.shift.bytes) as usize;
            beside(mover, from, to, how);
        });
        nodes.truncate(kept);
        starts.truncate(kept);
        kept
    }

    /// [`Mover::carry`] for a plain list of nodes.
    fn carry_all(&mut self, nodes: &mut [Node<'a>], placing: Placing) -> usize {
        self.carry(nodes, placing, |_, _, _, _| {})
    }
}

/// The calls, with their scopes, loops and callee names beside them.
fn carry_calls<'a>(mover: &mut Mover<'_, 'a>, walked: &mut Walked<'a>) {
    let Walked { calls, call_scopes: scopes, call_loops: loops, call_names: names, .. } = walked;
    let kept = mover.carry_ordered(calls, Placing::InsideStatements, |mover, from, to, how| {
        scopes[to] = scopes[from].map(|scope| mover.place(scope, how, Placing::Anywhere));
        loops[to] = loops[from].map(|in_loop| mover.place(in_loop, how, Placing::Anywhere));
        names[to] = names[from].map(|name| name.moved(how.shift.bytes));
    });
    scopes.truncate(kept);
    loops.truncate(kept);
    names.truncate(kept);
}

/// A source-ordered list with a column of optional nodes beside it (a loop's outer loop).
fn carry_with_column<'a>(mover: &mut Mover<'_, 'a>, list: &mut InSourceOrder<'a>, column: &mut Vec<Option<Node<'a>>>) {
    let kept = mover.carry_ordered(list, Placing::Anywhere, |mover, from, to, how| {
        column[to] = column[from].map(|other| mover.place(other, how, Placing::Anywhere));
    });
    column.truncate(kept);
}

/// Merge the walk of the statements not carried into the carried notes, by position: their
/// nodes lie between the carried statements'.
fn merge_fresh<'a>(walked: &mut Walked<'a>, fresh: Walked<'a>) {
    let points = walked.calls.insertion_points(&fresh.calls);
    walked.calls.insert_at(&points, &fresh.calls);
    insert_column(&mut walked.call_scopes, &points, &fresh.call_scopes);
    insert_column(&mut walked.call_loops, &points, &fresh.call_loops);
    insert_column(&mut walked.call_names, &points, &fresh.call_names);
    let points = walked.loop_nodes.insertion_points(&fresh.loop_nodes);
    walked.loop_nodes.insert_at(&points, &fresh.loop_nodes);
    insert_column(&mut walked.outer_loops, &points, &fresh.outer_loops);
    let points = walked.with_statements.insertion_points(&fresh.with_statements);
    walked.with_statements.insert_at(&points, &fresh.with_statements);
    insert_column(&mut walked.with_scopes, &points, &fresh.with_scopes);
    let points = walked.assignment_nodes.insertion_points(&fresh.assignment_nodes);
    walked.assignment_nodes.insert_at(&points, &fresh.assignment_nodes);
    insert_nodes(&mut walked.functions, &fresh.functions);
    insert_nodes(&mut walked.classes, &fresh.classes);
    insert_nodes(&mut walked.import_nodes, &fresh.import_nodes);
    merge_index(&mut walked.calls_by_name, fresh.calls_by_name);
    merge_index(&mut walked.assignments, fresh.assignments);
    for (name, functions) in fresh.functions_by_name {
        let list = walked.functions_by_name.entry(name).or_default();
        for function in functions {
            let at = list.partition_point(|f| start_of(*f) < start_of(function));
            list.insert(at, function);
        }
    }
}

/// Merge a fresh name index into a carried one, name by name.
fn merge_index<'a>(index: &mut HashMap<Box<str>, InSourceOrder<'a>>, fresh: HashMap<Box<str>, InSourceOrder<'a>>) {
    for (name, nodes) in fresh {
        let list = index.entry(name).or_default();
        let points = list.insertion_points(&nodes);
        list.insert_at(&points, &nodes);
    }
}

/// Insert `fresh` into a source-ordered vector of nodes by position.
fn insert_nodes<'a>(nodes: &mut Vec<Node<'a>>, fresh: &[Node<'a>]) {
    let points: Vec<usize> = fresh.iter().map(|f| nodes.partition_point(|n| start_of(*n) < start_of(*f))).collect();
    insert_column(nodes, &points, fresh);
}
