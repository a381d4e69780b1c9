//! The model's one walk over the tree, which collects calls, imports, definitions, assignments,
//! loops and `with` statements, and the rules' candidates ([`crate::patterns`]).
//!
//! A large file is walked in parts, runs of consecutive top-level statements, one per thread:
//! nothing a walk notes reaches across a top-level statement (no scope or loop encloses one), so
//! the parts' notes, joined in order, are one walk's.

use foldhash::HashMap;
use rayon::prelude::*;
use smallvec::SmallVec;
use tree_sitter::Node;

use super::source_order::InSourceOrder;
use super::{Model, ast, names_cuda};
use crate::grammar_ids::{self, FieldChild};
use crate::patterns::{Candidate, PatternSet, Scratch};

/// A file this large or larger is walked in parts, one per this many bytes (at most one per
/// thread): below it a walk takes about a millisecond.
const SPLIT_ABOVE_BYTES: usize = 32 * 1024;

/// The kind id of tree-sitter's ERROR nodes.
const ERROR: u16 = u16::MAX;

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

/// What the walk makes of a node of each kind, by kind id: read once per node, where a
/// [`grammar_ids::KindSet`] test per category would read the kind again each time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Category {
    Other,
    Call,
    Import,
    Function,
    Class,
    Assignment,
    Loop,
    With,
    Lambda,
    NameOrString,
}

static CATEGORIES: std::sync::LazyLock<Vec<Category>> = std::sync::LazyLock::new(|| {
    // In this order: a function is also a scope boundary, and is filed as a function.
    let sets: [(&grammar_ids::KindSet, Category); 9] = [
        (&grammar_ids::CALL, Category::Call),
        (&grammar_ids::IMPORT, Category::Import),
        (&grammar_ids::FUNCTION, Category::Function),
        (&grammar_ids::CLASS, Category::Class),
        (&grammar_ids::ASSIGNMENT, Category::Assignment),
        (&grammar_ids::LOOP, Category::Loop),
        (&grammar_ids::WITH, Category::With),
        (&grammar_ids::FUNCTION_BOUNDARY, Category::Lambda),
        (&grammar_ids::NAME_OR_STRING, Category::NameOrString),
    ];
    (0..crate::parse::python().node_kind_count() as u16)
        .map(|id| sets.iter().find(|(set, _)| set.contains_kind(id)).map_or(Category::Other, |(_, category)| *category))
        .collect()
});

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
    /// Walk the whole tree, whose module holds `statements`; returns the matches of `patterns`,
    /// with their slots, in the walk's order (outer nodes first), leaving out those inside a
    /// region the parser could not make sense of.
    pub(super) fn walk(&mut self, statements: &[Node<'a>], patterns: &PatternSet) -> Vec<(usize, Candidate<'a>)> {
        self.top_level = statements.iter().copied().collect();
        let parts = parts_of(statements, self.text.len());
        let text = self.text;
        // A tree whose root is an ERROR node is all the parser's guess: no candidates in it.
        let none = PatternSet::new([]);
        let patterns = if self.tree.root_node().is_error() { &none } else { patterns };
        let mut walks: Vec<Walk<'a>> = parts.par_iter().map(|part| Walk::of(text, part, patterns)).collect::<Vec<_>>();
        let mut whole = if walks.is_empty() { Walk::default() } else { walks.remove(0) };
        for part in walks {
            whole.append(part);
        }
        self.walked = whole.walked;
        self.mentions_cuda = whole.mentions_cuda;
        for node in &self.walked.import_nodes {
            self.imports.add_statement(*node, self.text);
        }
        whole.candidates
    }
}

/// `statements` in runs of about equal size, one per thread for a large file.
fn parts_of<'s, 'a>(statements: &'s [Node<'a>], text_len: usize) -> Vec<&'s [Node<'a>]> {
    let parts = text_len.div_ceil(SPLIT_ABOVE_BYTES).clamp(1, rayon::current_num_threads());
    if parts == 1 {
        return vec![statements];
    }
    let mut runs = Vec::with_capacity(parts);
    let mut from = 0;
    for (i, statement) in statements.iter().enumerate() {
        if i > from && statement.start_byte() * parts >= text_len * (runs.len() + 1) {
            runs.push(&statements[from..i]);
            from = i;
        }
    }
    runs.push(&statements[from..]);
    runs
}

/// What the walk of some top-level statements noted.
#[derive(Default)]
struct Walk<'a> {
    walked: Walked<'a>,
    mentions_cuda: bool,
    candidates: Vec<(usize, Candidate<'a>)>,
}

impl<'a> Walk<'a> {
    fn of(text: &'a str, statements: &[Node<'a>], patterns: &PatternSet) -> Self {
        let mut walk = Self::default();
        for statement in statements {
            walk.subtree(*statement, text, patterns);
        }
        walk
    }

    /// Notes of the statements after this walk's.
    fn append(&mut self, later: Self) {
        self.walked.append(later.walked);
        self.mentions_cuda |= later.mentions_cuda;
        self.candidates.extend(later.candidates);
    }

    /// Walk the subtree of `top`, noting what the model needs and matching `patterns`.
    fn subtree(&mut self, top: Node<'a>, source: &'a str, patterns: &PatternSet) {
        let mut cursor = top.walk();
        let mut scratch = Scratch::default();
        let mut mentions_cuda = self.mentions_cuda;
        // The loops and scope boundaries around the current node, with their depths and whether
        // each is a scope boundary (a function, class or lambda) rather than a loop.
        let mut enclosing: Vec<(usize, Node<'a>, bool)> = Vec::new();
        // The depth of the outermost ERROR node around the current one: what lies inside is the
        // parser's guess, where no rule looks.
        let mut error_at: Option<usize> = None;
        let mut depth = 0;
        'outer: loop {
            let node = cursor.node();
            let kind = node.kind_id();
            while enclosing.last().is_some_and(|(d, _, _)| *d >= depth) {
                enclosing.pop();
            }
            if error_at.is_some_and(|d| d >= depth) {
                error_at = None;
            }
            if error_at.is_none() && kind == ERROR {
                error_at = Some(depth);
            }
            if error_at.is_none() {
                patterns.match_at(node, kind, source, &mut scratch, &mut self.candidates);
            }
            let category = CATEGORIES.get(usize::from(kind)).copied().unwrap_or(Category::Other);
            let scope_at = || enclosing.iter().rposition(|(_, _, boundary)| *boundary);
            let noted = match category {
                Category::Call => {
                    let scope_at = scope_at();
                    let in_loop = enclosing[scope_at.map_or(0, |i| i + 1)..].last().map(|(_, n, _)| *n);
                    let scope = scope_at.map(|i| enclosing[i].1);
                    Some(Noted::Call { scope, in_loop })
                }
                Category::Import => Some(Noted::Import),
                Category::Function => Some(Noted::Function),
                Category::Class => Some(Noted::Class),
                Category::Assignment => Some(Noted::Assignment),
                Category::Loop => {
                    let outer = enclosing.last().filter(|(_, _, boundary)| !boundary).map(|(_, n, _)| *n);
                    Some(Noted::Loop { outer })
                }
                Category::With => Some(Noted::With { scope: scope_at().map(|i| enclosing[i].1) }),
                Category::NameOrString => {
                    if !mentions_cuda {
                        mentions_cuda = names_cuda(ast::text(node, source));
                    }
                    None
                }
                Category::Lambda | Category::Other => None,
            };
            if let Some(noted) = noted {
                let names = names_of(node, &noted, source);
                self.walked.note(node, noted, names);
            }
            match category {
                Category::Loop => enclosing.push((depth, node, false)),
                Category::Function | Category::Class | Category::Lambda => enclosing.push((depth, node, true)),
                _ => {}
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
        self.mentions_cuda = mentions_cuda;
    }
}

/// The names a noted node is filed under: a call's callee name, a function's name, an
/// assignment's targets.
fn names_of<'a>(node: Node<'a>, noted: &Noted<'a>, source: &'a str) -> Vec<&'a str> {
    match noted {
        Noted::Call { .. } => ast::callee_name(node, source).into_iter().collect(),
        Noted::Function => ast::function_name(node, source).into_iter().collect(),
        Noted::Assignment => node.field("left").map(|left| ast::target_names(left, source)).unwrap_or_default(),
        Noted::Import | Noted::Class | Noted::Loop { .. } | Noted::With { .. } => Vec::new(),
    }
}

impl<'a> Walked<'a> {
    fn note(&mut self, node: Node<'a>, noted: Noted<'a>, names: impl IntoIterator<Item = &'a str>) {
        let walked = self;
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

impl<'a> Walked<'a> {
    /// Notes of nodes that come after this walk's.
    fn append(&mut self, later: Self) {
        self.calls.append(later.calls);
        self.call_scopes.extend(later.call_scopes);
        self.call_loops.extend(later.call_loops);
        self.call_names.extend(later.call_names);
        self.loop_nodes.append(later.loop_nodes);
        self.outer_loops.extend(later.outer_loops);
        self.with_statements.append(later.with_statements);
        self.with_scopes.extend(later.with_scopes);
        for (name, calls) in later.calls_by_name {
            list_for(&mut self.calls_by_name, &name).append(calls);
        }
        self.functions.extend(later.functions);
        for (name, functions) in later.functions_by_name {
            list_for(&mut self.functions_by_name, &name).extend(functions);
        }
        self.classes.extend(later.classes);
        for (name, assignments) in later.assignments {
            list_for(&mut self.assignments, &name).append(assignments);
        }
        self.assignment_nodes.append(later.assignment_nodes);
        self.import_nodes.extend(later.import_nodes);
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
