//! The model's one walk over the tree, which collects calls, imports, definitions, assignments,
//! loops and `with` statements.

use foldhash::HashMap;
use smallvec::SmallVec;
use tree_sitter::Node;

use super::source_order::InSourceOrder;
use super::{Model, ast, names_cuda};
use crate::grammar_ids::{self, FieldChild};

/// What the walk notes: the model's lists and name indices.
#[derive(Default)]
pub(super) struct Walked<'a> {
    /// Every call, in source order.
    pub calls: InSourceOrder<'a>,
    /// For each call (same index): the innermost function, class or lambda around it, and the
    /// innermost loop around it within that scope. Rules ask these of many calls, and walking up
    /// `parent()` links costs a descent from the root each time.
    pub call_scopes: Vec<Option<Node<'a>>>,
    pub call_loops: Vec<Option<Node<'a>>>,
    /// For each call (same index): its callee's final name ([`ast::callee_name`]).
    pub call_names: Vec<Option<&'a str>>,
    /// Every `for` and `while` loop, in source order, and (same index) the innermost loop
    /// around it within its scope.
    pub loop_nodes: InSourceOrder<'a>,
    pub outer_loops: Vec<Option<Node<'a>>>,
    /// Every `with` statement, in source order, and (same index) the innermost function, class or
    /// lambda around it.
    pub with_statements: InSourceOrder<'a>,
    pub with_scopes: Vec<Option<Node<'a>>>,
    /// Calls by their callee's final name, in source order.
    pub calls_by_name: HashMap<Box<str>, InSourceOrder<'a>>,
    /// Every function definition, in source order.
    pub functions: Vec<Node<'a>>,
    /// Functions by name: nearly every name has one definition, held in place rather than in
    /// an allocation of its own (a large script defines hundreds).
    pub functions_by_name: HashMap<Box<str>, SmallVec<[Node<'a>; 1]>>,
    /// Every class definition, in source order.
    pub classes: Vec<Node<'a>>,
    /// Assignments (`x = ...`, `x: T = ...`), keyed by the target's text (`x`, `self.x`), in
    /// source order.
    pub assignments: HashMap<Box<str>, InSourceOrder<'a>>,
    /// Every assignment, in source order.
    pub assignment_nodes: InSourceOrder<'a>,
    /// Every import statement, in source order (the model's [`super::Imports`] are read from them).
    pub import_nodes: Vec<Node<'a>>,
}

/// What a walk notes about a node, with the scope and loop nodes around it.
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
    /// Walk the whole tree, whose module holds `statements`.
    pub(super) fn walk(&mut self, statements: &[Node<'a>]) {
        self.top_level = statements.iter().copied().collect();
        self.mentions_cuda = self.walk_subtree(self.tree.root_node());
        for node in &self.walked.import_nodes {
            self.imports.add_statement(*node, self.text);
        }
    }

    /// Walk the subtree of `top`, noting what the model needs. Returns whether the subtree names
    /// CUDA.
    fn walk_subtree(&mut self, top: Node<'a>) -> bool {
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
            let scope_at = || enclosing.iter().rposition(|(_, n)| ast::is_function_boundary(*n));
            let noted = if grammar_ids::CALL.contains(node) {
                let scope_at = scope_at();
                let in_loop = enclosing[scope_at.map_or(0, |i| i + 1)..].last().map(|(_, n)| *n);
                let scope = scope_at.map(|i| enclosing[i].1);
                Some(Noted::Call { scope, in_loop })
            } else if grammar_ids::IMPORT.contains(node) {
                Some(Noted::Import)
            } else if grammar_ids::FUNCTION.contains(node) {
                Some(Noted::Function)
            } else if grammar_ids::CLASS.contains(node) {
                Some(Noted::Class)
            } else if grammar_ids::ASSIGNMENT.contains(node) {
                Some(Noted::Assignment)
            } else if ast::is_loop(node) {
                let outer = enclosing.last().filter(|(_, n)| ast::is_loop(*n)).map(|(_, n)| *n);
                Some(Noted::Loop { outer })
            } else if grammar_ids::WITH.contains(node) {
                let scope = scope_at().map(|i| enclosing[i].1);
                Some(Noted::With { scope })
            } else {
                if !mentions_cuda && grammar_ids::NAME_OR_STRING.contains(node) {
                    mentions_cuda = names_cuda(ast::text(node, source));
                }
                None
            };
            if let Some(noted) = noted {
                let names = self.names_of(node, &noted);
                self.note(node, noted, names);
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

    fn note(&mut self, node: Node<'a>, noted: Noted<'a>, names: impl IntoIterator<Item = &'a str>) {
        let walked = &mut self.walked;
        match noted {
            Noted::Call { scope, in_loop } => {
                walked.call_scopes.push(scope);
                walked.call_loops.push(in_loop);
                walked.calls.push(node);
                let name = names.into_iter().next();
                walked.call_names.push(name);
                if let Some(name) = name {
                    list_for(&mut walked.calls_by_name, name).push(node);
                }
            }
            Noted::Import => walked.import_nodes.push(node),
            Noted::Function => {
                walked.functions.push(node);
                for name in names {
                    list_for(&mut walked.functions_by_name, name).push(node);
                }
            }
            Noted::Class => walked.classes.push(node),
            Noted::Assignment => {
                walked.assignment_nodes.push(node);
                for name in names {
                    list_for(&mut walked.assignments, name).push(node);
                }
            }
            Noted::Loop { outer } => {
                walked.loop_nodes.push(node);
                walked.outer_loops.push(outer);
            }
            Noted::With { scope } => {
                walked.with_statements.push(node);
                walked.with_scopes.push(scope);
            }
        }
    }
}

/// The list of `name` in a name index, made when the name is new.
fn list_for<'i, L: Default>(index: &'i mut HashMap<Box<str>, L>, name: &str) -> &'i mut L {
    // Looked up by `&str` first: a name seen before (most of them) needs no key of its own.
    if !index.contains_key(name) {
        index.insert(name.into(), L::default());
    }
    index.get_mut(name).expect("just made")
}
