//! The model's one walk over the tree, which collects calls, imports, definitions, assignments
//! and loops, and a cache that lets an edited buffer's next walk skip the top-level statements
//! whose text is unchanged.
//!
//! The walk of a top-level statement depends on that statement alone: the loops and scope
//! boundaries it tracks never reach above one (the module is neither). So a statement seen
//! before is replayed from what its walk found, each node located again by its child-index
//! path from the statement, as [`crate::candidates`] does for query matches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tree_sitter::Node;

use super::{Model, ast, names_cuda};
use crate::grammar_ids;

/// What the walks of a buffer's top-level statements found, keyed by each statement's text.
#[derive(Default)]
pub struct WalkCache {
    statements: Mutex<HashMap<Box<str>, Arc<WalkedStatement>>>,
}

impl WalkCache {
    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        self.statements.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// The walk of one top-level statement: each node it noted, in walk order, as the path from the
/// statement and the node's kind (to check that the path still leads to it).
struct WalkedStatement {
    found: Vec<(Found, Vec<u32>, u16)>,
    mentions_cuda: bool,
}

/// What the walk noted about a node. Scopes and loops are the node's ancestors at these depths
/// below the statement (0: the statement itself).
#[derive(Clone, Copy)]
enum Found {
    Call { scope: Option<u16>, in_loop: Option<u16> },
    Import,
    Function,
    Class,
    Assignment,
    Loop { outer: Option<u16> },
}

/// A noted node with its scope and loop nodes resolved.
enum Noted<'a> {
    Call { scope: Option<Node<'a>>, in_loop: Option<Node<'a>> },
    Import,
    Function,
    Class,
    Assignment,
    Loop { outer: Option<Node<'a>> },
}

impl<'a> Model<'a> {
    /// Walk the whole tree; with a cache, statement by statement, replaying those seen before.
    pub(super) fn walk(&mut self, cache: Option<&WalkCache>) {
        let root = self.tree.root_node();
        let mut statements = root.walk();
        self.top_level = root.children(&mut statements).collect();
        // A cache in use by another lint of the same buffer (an older version's) is not waited for.
        let Some(mut known) = cache.and_then(|cache| cache.statements.try_lock().ok()) else {
            self.mentions_cuda = self.walk_subtree(root, None);
            return;
        };
        let mut seen: HashMap<Box<str>, Arc<WalkedStatement>> = HashMap::with_capacity(known.len());
        for statement in self.top_level.clone() {
            if statement.has_error() {
                // Not kept: what the parser makes of broken text depends on what surrounds it.
                let mentions_cuda = self.walk_subtree(statement, None);
                self.mentions_cuda |= mentions_cuda;
                continue;
            }
            // The key moves from the last lint's map to this one's, so unchanged statements are
            // not copied on every keystroke.
            let source = &self.text[statement.byte_range()];
            let (key, walked) = match known.remove_entry(source) {
                Some((key, walked)) => (key, Some(walked)),
                None => (Box::from(source), seen.get(source).cloned()),
            };
            let walked = match walked.filter(|walked| self.replay(statement, walked)) {
                Some(walked) => walked,
                None => {
                    let mut found = Vec::new();
                    let mentions_cuda = self.walk_subtree(statement, Some(&mut found));
                    Arc::new(WalkedStatement { found, mentions_cuda })
                }
            };
            self.mentions_cuda |= walked.mentions_cuda;
            seen.insert(key, walked);
        }
        *known = seen;
    }

    /// Walk the subtree of `top`, noting what the model needs, and with `record` the path of
    /// each noted node. Returns whether the subtree names CUDA.
    fn walk_subtree(&mut self, top: Node<'a>, mut record: Option<&mut Vec<(Found, Vec<u32>, u16)>>) -> bool {
        let source = self.text;
        let mut cursor = top.walk();
        let mut mentions_cuda = false;
        // The loops and scope boundaries around the current node, with their depths.
        let mut enclosing: Vec<(usize, Node<'a>)> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        'outer: loop {
            let node = cursor.node();
            let depth = path.len();
            while enclosing.last().is_some_and(|(d, _)| *d >= depth) {
                enclosing.pop();
            }
            let depth_of = |n: Node<'a>| enclosing.iter().find(|(_, e)| *e == n).map(|(d, _)| *d as u16);
            let noted = if grammar_ids::CALL.contains(node) {
                let scope_at = enclosing.iter().rposition(|(_, n)| ast::is_function_boundary(*n));
                let in_loop = enclosing[scope_at.map_or(0, |i| i + 1)..].last().map(|(_, n)| *n);
                let scope = scope_at.map(|i| enclosing[i].1);
                Some((
                    Noted::Call { scope, in_loop },
                    Found::Call { scope: scope.and_then(depth_of), in_loop: in_loop.and_then(depth_of) },
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
                Some((Noted::Loop { outer }, Found::Loop { outer: outer.and_then(depth_of) }))
            } else {
                if !mentions_cuda && grammar_ids::NAME_OR_STRING.contains(node) {
                    mentions_cuda = names_cuda(ast::text(node, source));
                }
                None
            };
            if let Some((noted, found)) = noted {
                self.note(node, noted);
                if let Some(record) = record.as_deref_mut() {
                    record.push((found, path.clone(), node.kind_id()));
                }
            }
            if ast::is_loop(node) || ast::is_function_boundary(node) {
                enclosing.push((depth, node));
            }
            if cursor.goto_first_child() {
                path.push(0);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    *path.last_mut().expect("a sibling below the top") += 1;
                    continue 'outer;
                }
                if !cursor.goto_parent() {
                    break 'outer;
                }
                path.pop();
            }
        }
        mentions_cuda
    }

    /// Note what a statement's earlier walk found, located in the current tree. Returns false,
    /// having noted nothing, when a path no longer leads to a node of the recorded kind.
    fn replay(&mut self, statement: Node<'a>, walked: &WalkedStatement) -> bool {
        // The nodes along the current path, reused while consecutive paths share a prefix.
        let mut along: Vec<Node<'a>> = vec![statement];
        let mut previous: &[u32] = &[];
        let mut located = Vec::with_capacity(walked.found.len());
        for (found, path, kind) in &walked.found {
            let shared = previous.iter().zip(path).take_while(|(a, b)| a == b).count();
            along.truncate(shared + 1);
            for &index in &path[shared..] {
                let Some(child) = along.last().and_then(|node| node.child(index)) else { return false };
                along.push(child);
            }
            previous = path;
            let node = *along.last().expect("the statement at least");
            if node.kind_id() != *kind {
                return false;
            }
            let at = |depth: Option<u16>| depth.and_then(|d| along.get(usize::from(d)).copied());
            let noted = match *found {
                Found::Call { scope, in_loop } => Noted::Call { scope: at(scope), in_loop: at(in_loop) },
                Found::Import => Noted::Import,
                Found::Function => Noted::Function,
                Found::Class => Noted::Class,
                Found::Assignment => Noted::Assignment,
                Found::Loop { outer } => Noted::Loop { outer: at(outer) },
            };
            located.push((node, noted));
        }
        for (node, noted) in located {
            self.note(node, noted);
        }
        true
    }

    fn note(&mut self, node: Node<'a>, noted: Noted<'a>) {
        let source = self.text;
        match noted {
            Noted::Call { scope, in_loop } => {
                self.call_scopes.push(scope);
                self.call_loops.push(in_loop);
                self.calls.push(node);
                if let Some(name) = ast::callee_name(node, source) {
                    self.calls_by_name.entry(name).or_default().push(node);
                }
            }
            Noted::Import => self.imports.add_statement(node, source),
            Noted::Function => {
                self.functions.push(node);
                if let Some(name) = ast::function_name(node, source) {
                    self.functions_by_name.entry(name).or_default().push(node);
                }
            }
            Noted::Class => self.classes.push(node),
            Noted::Assignment => {
                if let Some(left) = node.child_by_field_name("left") {
                    for name in ast::target_names(left, source) {
                        self.assignments.entry(name).or_default().push(node);
                    }
                }
            }
            Noted::Loop { outer } => {
                self.loop_nodes.push(node);
                self.outer_loops.push(outer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::LintContext;
    use crate::parse::parse;

    /// Everything the walk gives the model, as plain data.
    fn noted(model: &Model<'_>) -> Vec<String> {
        let ranges = |nodes: &[Node<'_>]| format!("{:?}", nodes.iter().map(Node::byte_range).collect::<Vec<_>>());
        let maybe = |nodes: &[Option<Node<'_>>]| {
            format!("{:?}", nodes.iter().map(|n| n.map(|n| n.byte_range())).collect::<Vec<_>>())
        };
        let by_name = |map: &HashMap<&str, Vec<Node<'_>>>| {
            let mut names: Vec<_> = map.iter().map(|(name, nodes)| format!("{name}: {}", ranges(nodes))).collect();
            names.sort();
            names.join("; ")
        };
        vec![
            ranges(&model.calls),
            maybe(&model.call_scopes),
            maybe(&model.call_loops),
            ranges(&model.loop_nodes),
            maybe(&model.outer_loops),
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
        for walked in cache.statements.lock().unwrap().values_mut() {
            *walked = Arc::new(WalkedStatement { found: Vec::new(), mentions_cuda: false });
        }
        let replayed = Model::with_cache(text, &tree, LintContext::default(), Some(&cache));
        assert!(replayed.calls.is_empty(), "statements were walked again");
    }
}
