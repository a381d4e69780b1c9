//! The model's one walk over the tree, which collects calls, imports, definitions, assignments,
//! loops and `with` statements, and a cache that lets an edited buffer's next walk skip the top-level statements
//! the edit left untouched.
//!
//! The walk of a top-level statement depends on that statement alone: the loops and scope
//! boundaries it tracks never reach above one (the module is neither). So a statement the
//! reparse shared with the last lint's tree is replayed from what its walk found, each node
//! placed in the new tree by [`crate::tree_reuse`], as [`crate::candidates`] does for query
//! matches.

use std::hash::BuildHasher;
use std::sync::PoisonError;

use foldhash::HashMap;
use tree_sitter::Node;

use super::source_order::InSourceOrder;
use super::{Model, ast, names_cuda};
use crate::grammar_ids::{self, FieldChild};
use crate::tree_reuse::{KeptNode, Placer, StatementMemory};

/// What the walks of a buffer's top-level statements found.
#[derive(Default)]
pub struct WalkCache {
    statements: StatementMemory<WalkedStatement>,
    /// How much the last walk noted: the next one, of nearly the same text, reserves as much
    /// rather than growing its lists step by step.
    last_walk: std::sync::Mutex<LastWalk>,
}

#[derive(Default)]
struct LastWalk {
    sizes: Sizes,
    lengths: ListLengths,
}

/// The lengths of what a walk notes.
#[derive(Clone, Copy, Default)]
struct Sizes {
    calls: usize,
    call_names: usize,
    loops: usize,
    with_statements: usize,
    functions: usize,
    function_names: usize,
    assignments: usize,
    assignment_names: usize,
}

/// How many calls and assignments each name had at the last walk, by the name's hash. A name
/// that a large script calls hundreds of times (`backward`, `to`) would otherwise grow its list
/// step by step, a copy each time, on every keystroke. A hash shared by two names only gives one
/// of them a list of the wrong size to start with.
#[derive(Default)]
struct ListLengths {
    calls: HashMap<u64, usize>,
    assignments: HashMap<u64, usize>,
}

/// Lists up to this long grow from nothing in a step or two: not worth remembering.
const SHORT_LIST: usize = 4;

impl ListLengths {
    fn of(model: &Model<'_>) -> Self {
        fn long(lists: &HashMap<&str, InSourceOrder<'_>>) -> HashMap<u64, usize> {
            lists
                .iter()
                .filter(|(_, list)| list.len() > SHORT_LIST)
                .map(|(name, list)| (name_hash(name), list.len()))
                .collect()
        }
        Self { calls: long(&model.calls_by_name), assignments: long(&model.assignments) }
    }

    /// A new list for `name`, with room for as many nodes as `lengths` had.
    fn list_for<'a>(lengths: &HashMap<u64, usize>, name: &str) -> InSourceOrder<'a> {
        let mut list = InSourceOrder::default();
        if !lengths.is_empty()
            && let Some(length) = lengths.get(&name_hash(name))
        {
            list.reserve(*length);
        }
        list
    }
}

/// A name's hash, the same from one lint to the next.
fn name_hash(name: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(name)
}

impl WalkCache {
    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        self.statements.clear();
        *self.last_walk.lock().unwrap_or_else(PoisonError::into_inner) = LastWalk::default();
    }
}

/// The walk of one top-level statement: each node it noted, in walk order.
struct WalkedStatement {
    found: Vec<FoundNode>,
    mentions_cuda: bool,
}

struct FoundNode {
    found: Found,
    node: KeptNode,
    /// The names the node is filed under (see [`Model::names_of`]), as byte ranges from the
    /// statement's start.
    names: Box<[(u32, u32)]>,
}

/// What the walk noted about a node, with the scope and loop nodes around it.
#[derive(Clone, Copy)]
enum Found {
    Call { scope: Option<KeptNode>, in_loop: Option<KeptNode> },
    Import,
    Function,
    Class,
    Assignment,
    Loop { outer: Option<KeptNode> },
    With { scope: Option<KeptNode> },
}

/// A noted node with its scope and loop nodes placed in the current tree.
enum Noted<'a> {
    Call { scope: Option<Node<'a>>, in_loop: Option<Node<'a>> },
    Import,
    Function,
    Class,
    Assignment,
    Loop { outer: Option<Node<'a>> },
    With { scope: Option<Node<'a>> },
}

impl<'a> Model<'a> {
    /// Walk the whole tree; with a cache, statement by statement, replaying those seen before.
    pub(super) fn walk(&mut self, cache: Option<&WalkCache>, statements: &[Node<'a>]) {
        let root = self.tree.root_node();
        self.top_level = statements.iter().copied().collect();
        // A cache in use by another lint of the same buffer (an older version's) is not waited for.
        let Some((cache, mut memory)) = cache.and_then(|cache| Some((cache, cache.statements.open(self.tree)?))) else {
            self.mentions_cuda = self.walk_subtree(root, None, &ListLengths::default());
            return;
        };
        let LastWalk { sizes, lengths } =
            std::mem::take(&mut *cache.last_walk.lock().unwrap_or_else(PoisonError::into_inner));
        self.reserve(sizes);
        for &statement in statements {
            let mentions_cuda = if let Some((walked, placer)) = memory.recall(statement) {
                self.replay(&walked, &placer, &lengths);
                walked.mentions_cuda
            } else if statement.has_error() {
                // Not kept: what the parser makes of broken text depends on what surrounds it.
                self.walk_subtree(statement, None, &lengths)
            } else {
                let mut found = Vec::new();
                let mentions_cuda = self.walk_subtree(statement, Some(&mut found), &lengths);
                memory.keep(statement, WalkedStatement { found, mentions_cuda });
                mentions_cuda
            };
            self.mentions_cuda |= mentions_cuda;
        }
        *cache.last_walk.lock().unwrap_or_else(PoisonError::into_inner) =
            LastWalk { sizes: self.sizes(), lengths: ListLengths::of(self) };
    }

    fn reserve(&mut self, sizes: Sizes) {
        self.calls.reserve(sizes.calls);
        self.call_scopes.reserve(sizes.calls);
        self.call_loops.reserve(sizes.calls);
        self.call_names.reserve(sizes.calls);
        self.calls_by_name.reserve(sizes.call_names);
        self.loop_nodes.reserve(sizes.loops);
        self.outer_loops.reserve(sizes.loops);
        self.with_statements.reserve(sizes.with_statements);
        self.with_scopes.reserve(sizes.with_statements);
        self.functions.reserve(sizes.functions);
        self.functions_by_name.reserve(sizes.function_names);
        self.assignment_nodes.reserve(sizes.assignments);
        self.assignments.reserve(sizes.assignment_names);
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            calls: self.calls.len(),
            call_names: self.calls_by_name.len(),
            loops: self.loop_nodes.len(),
            with_statements: self.with_statements.len(),
            functions: self.functions.len(),
            function_names: self.functions_by_name.len(),
            assignments: self.assignment_nodes.len(),
            assignment_names: self.assignments.len(),
        }
    }

    /// Walk the subtree of `top`, noting what the model needs, and with `record` keeping each
    /// noted node. Returns whether the subtree names CUDA.
    fn walk_subtree(&mut self, top: Node<'a>, mut record: Option<&mut Vec<FoundNode>>, lengths: &ListLengths) -> bool {
        let source = self.text;
        let mut cursor = top.walk();
        let mut mentions_cuda = false;
        // The loops and scope boundaries around the current node, with their depths.
        let mut enclosing: Vec<(usize, Node<'a>)> = Vec::new();
        let mut depth = 0;
        'outer: loop {
            let node = cursor.node();
            while enclosing.last().is_some_and(|(d, _)| *d >= depth) {
                enclosing.pop();
            }
            let keep = |n: Node<'a>| KeptNode::of(top, n);
            let scope_at = || enclosing.iter().rposition(|(_, n)| ast::is_function_boundary(*n));
            let noted = if grammar_ids::CALL.contains(node) {
                let scope_at = scope_at();
                let in_loop = enclosing[scope_at.map_or(0, |i| i + 1)..].last().map(|(_, n)| *n);
                let scope = scope_at.map(|i| enclosing[i].1);
                Some((
                    Noted::Call { scope, in_loop },
                    Found::Call { scope: scope.map(keep), in_loop: in_loop.map(keep) },
                ))
            } else if grammar_ids::IMPORT.contains(node) {
                Some((Noted::Import, Found::Import))
            } else if grammar_ids::FUNCTION.contains(node) {
                Some((Noted::Function, Found::Function))
            } else if grammar_ids::CLASS.contains(node) {
                Some((Noted::Class, Found::Class))
            } else if grammar_ids::ASSIGNMENT.contains(node) {
                Some((Noted::Assignment, Found::Assignment))
            } else if ast::is_loop(node) {
                let outer = enclosing.last().filter(|(_, n)| ast::is_loop(*n)).map(|(_, n)| *n);
                Some((Noted::Loop { outer }, Found::Loop { outer: outer.map(keep) }))
            } else if grammar_ids::WITH.contains(node) {
                let scope = scope_at().map(|i| enclosing[i].1);
                Some((Noted::With { scope }, Found::With { scope: scope.map(keep) }))
            } else {
                if !mentions_cuda && grammar_ids::NAME_OR_STRING.contains(node) {
                    mentions_cuda = names_cuda(ast::text(node, source));
                }
                None
            };
            if let Some((noted, found)) = noted {
                let names = self.names_of(node, &noted);
                if let Some(record) = record.as_deref_mut() {
                    let start = top.start_byte();
                    // Each name is a slice of `source` (`ast::text`), so its offset in it is where
                    // the two pointers part.
                    let span = |name: &&str| {
                        let at = name.as_ptr() as usize - source.as_ptr() as usize - start;
                        (at as u32, (at + name.len()) as u32)
                    };
                    record.push(FoundNode { found, node: keep(node), names: names.iter().map(span).collect() });
                }
                self.note(node, noted, names, lengths);
            }
            if ast::is_loop(node) || ast::is_function_boundary(node) {
                enclosing.push((depth, node));
            }
            if cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'outer;
                }
                if !cursor.goto_parent() {
                    break 'outer;
                }
                depth -= 1;
            }
        }
        mentions_cuda
    }

    /// Note what a statement's earlier walk found, placed in the current tree.
    fn replay(&mut self, walked: &WalkedStatement, placer: &Placer<'a>, lengths: &ListLengths) {
        let place = |kept: Option<KeptNode>| kept.map(|k| placer.place(&k));
        let start = placer.statement().start_byte();
        let text = self.text;
        for FoundNode { found, node, names } in &walked.found {
            let noted = match *found {
                Found::Call { scope, in_loop } => Noted::Call { scope: place(scope), in_loop: place(in_loop) },
                Found::Import => Noted::Import,
                Found::Function => Noted::Function,
                Found::Class => Noted::Class,
                Found::Assignment => Noted::Assignment,
                Found::Loop { outer } => Noted::Loop { outer: place(outer) },
                Found::With { scope } => Noted::With { scope: place(scope) },
            };
            let names = names.iter().map(|&(from, to)| &text[start + from as usize..start + to as usize]);
            self.note(placer.place(node), noted, names, lengths);
        }
    }

    /// The names a noted node is filed under: a call's callee name, a function's name, an
    /// assignment's targets.
    fn names_of(&self, node: Node<'a>, noted: &Noted<'a>) -> Vec<&'a str> {
        let source = self.text;
        match noted {
            Noted::Call { .. } => ast::callee_name(node, source).into_iter().collect(),
            Noted::Function => ast::function_name(node, source).into_iter().collect(),
            Noted::Assignment => node.field("left").map(|left| ast::target_names(left, source)).unwrap_or_default(),
            Noted::Import | Noted::Class | Noted::Loop { .. } | Noted::With { .. } => Vec::new(),
        }
    }

    fn note(
        &mut self,
        node: Node<'a>,
        noted: Noted<'a>,
        names: impl IntoIterator<Item = &'a str>,
        lengths: &ListLengths,
    ) {
        match noted {
            Noted::Call { scope, in_loop } => {
                self.call_scopes.push(scope);
                self.call_loops.push(in_loop);
                self.calls.push(node);
                let name = names.into_iter().next();
                self.call_names.push(name);
                if let Some(name) = name {
                    self.calls_by_name
                        .entry(name)
                        .or_insert_with(|| ListLengths::list_for(&lengths.calls, name))
                        .push(node);
                }
            }
            Noted::Import => self.imports.add_statement(node, self.text),
            Noted::Function => {
                self.functions.push(node);
                for name in names {
                    self.functions_by_name.entry(name).or_default().push(node);
                }
            }
            Noted::Class => self.classes.push(node),
            Noted::Assignment => {
                self.assignment_nodes.push(node);
                for name in names {
                    self.assignments
                        .entry(name)
                        .or_insert_with(|| ListLengths::list_for(&lengths.assignments, name))
                        .push(node);
                }
            }
            Noted::Loop { outer } => {
                self.loop_nodes.push(node);
                self.outer_loops.push(outer);
            }
            Noted::With { scope } => {
                self.with_statements.push(node);
                self.with_scopes.push(scope);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use foldhash::HashMap;

    use super::*;
    use crate::lint::LintContext;
    use crate::parse::parse;

    fn ranges(nodes: &[Node<'_>]) -> String {
        format!("{:?}", nodes.iter().map(Node::byte_range).collect::<Vec<_>>())
    }

    /// Everything the walk gives the model, as plain data.
    fn noted(model: &Model<'_>) -> Vec<String> {
        let maybe = |nodes: &[Option<Node<'_>>]| {
            format!("{:?}", nodes.iter().map(|n| n.map(|n| n.byte_range())).collect::<Vec<_>>())
        };
        fn by_name<'a, N: std::ops::Deref<Target = [Node<'a>]>>(map: &HashMap<&str, N>) -> String {
            let mut names: Vec<_> = map.iter().map(|(name, nodes)| format!("{name}: {}", ranges(nodes))).collect();
            names.sort();
            names.join("; ")
        }
        vec![
            ranges(&model.calls),
            maybe(&model.call_scopes),
            maybe(&model.call_loops),
            ranges(&model.loop_nodes),
            maybe(&model.outer_loops),
            ranges(&model.with_statements),
            maybe(&model.with_scopes),
            ranges(&model.functions),
            ranges(&model.classes),
            by_name(&model.calls_by_name),
            by_name(&model.functions_by_name),
            by_name(&model.assignments),
            format!("{:?} {:?}", model.imports.statements, model.imports.wildcard_modules),
            bindings(&model.imports),
            model.mentions_cuda.to_string(),
        ]
    }

    /// The import bindings in name order (they are kept in a hash map).
    fn bindings(imports: &super::super::Imports) -> String {
        format!("{:?}", imports.sorted_bindings())
    }

    /// Every fixture and example, walked whole and statement by statement, cold and warm.
    #[test]
    fn a_replayed_walk_notes_what_a_fresh_walk_notes() {
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let tree = parse(&text, None);
            let fresh = noted(&Model::new(&text, &tree, LintContext::default()));
            let cache = WalkCache::default();
            for pass in ["cold", "warm"] {
                let cached = noted(&Model::with_cache(&text, &tree, LintContext::default(), Some(&cache)));
                assert_eq!(cached, fresh, "{} ({pass} cache)", path.display());
            }
        }
    }

    /// The test above would pass with a cache that is never read; this one fails then.
    #[test]
    fn statements_seen_before_are_replayed() {
        let text = include_str!("../../../examples/train_resnet.py");
        let tree = parse(text, None);
        let cache = WalkCache::default();
        assert!(!Model::with_cache(text, &tree, LintContext::default(), Some(&cache)).calls.is_empty());
        cache.statements.replace_all(|_| WalkedStatement { found: Vec::new(), mentions_cuda: false });
        let replayed = Model::with_cache(text, &tree, LintContext::default(), Some(&cache));
        assert!(replayed.calls.is_empty(), "statements were walked again");
    }
}
