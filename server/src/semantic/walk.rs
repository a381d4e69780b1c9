//! The model's one walk over the tree, which collects calls, imports, definitions, assignments,
//! loops and `with` statements, and a cache that carries what it noted from an edited buffer's
//! last lint into the next (see [`super::carry`]), so that only the statements the edit changed
//! are walked again.
//!
//! The walk of a top-level statement depends on that statement alone: the loops and scope
//! boundaries it tracks never reach above one (the module is neither).

use std::sync::{Mutex, PoisonError};

use foldhash::HashMap;
use smallvec::SmallVec;
use tree_sitter::{Node, Tree};

use super::carry::Carried;
use super::source_order::InSourceOrder;
use super::{Model, ast, names_cuda};
use crate::grammar_ids::{self, FieldChild};
use crate::tree_reuse::{TextKey, recall_key};

/// What the walks of a buffer's last lint noted, for the next.
#[derive(Default)]
pub struct WalkCache {
    carried: Mutex<Option<Carried>>,
}

impl WalkCache {
    /// Forget the last walk (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        *self.carried.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Keep what `model`'s walk noted for the next lint of the buffer.
    pub fn keep(&self, model: Model<'_>) {
        let Some(FinishedWalk { walked, tree, statements, notes }) = model.into_walked() else { return };
        let carried = Carried::keep(walked, tree, &statements, notes);
        *self.carried.lock().unwrap_or_else(PoisonError::into_inner) = Some(carried);
    }
}

/// A lint's walk as a [`WalkCache`] keeps it: what it noted, in which tree, the top-level
/// statements and what was noted of each (same index).
struct FinishedWalk<'a> {
    walked: Walked<'a>,
    tree: &'a Tree,
    statements: InSourceOrder<'a>,
    notes: Vec<StatementNotes>,
}

/// What a [`WalkCache`] keeps of a top-level statement beside the walk's lists.
#[derive(Clone, Copy)]
pub(super) struct StatementNotes {
    /// It names CUDA.
    pub names_cuda: bool,
    /// The key it is paired by when the next reparse builds it anew ([`recall_key`]): read when
    /// the statement is walked, and carried with it after that, as its text is.
    pub text: Option<TextKey>,
}

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
    /// For each call (same index): its callee's final name ([`ast::callee_name`]), as a span of
    /// the text, which stays right when the call is carried to the next text.
    pub call_names: Vec<Option<NameSpan>>,
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

/// A name as a byte range of the text it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NameSpan {
    start: u32,
    length: u32,
}

impl NameSpan {
    /// `name`, a slice of `text`.
    fn of(name: &str, text: &str) -> Self {
        Self { start: (name.as_ptr() as usize - text.as_ptr() as usize) as u32, length: name.len() as u32 }
    }

    pub fn in_text(self, text: &str) -> &str {
        &text[self.start as usize..(self.start + self.length) as usize]
    }

    /// The same name `bytes` further on.
    pub fn moved(self, bytes: i64) -> Self {
        Self { start: (i64::from(self.start) + bytes) as u32, ..self }
    }
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
    /// Walk the whole tree; with a cache, only the statements the last lint's walk did not see,
    /// carrying its notes of the others.
    pub(super) fn walk(&mut self, cache: Option<&WalkCache>, statements: &[Node<'a>]) {
        self.top_level = statements.iter().copied().collect();
        let Some(cache) = cache else {
            self.mentions_cuda = self.walk_subtree(self.tree.root_node());
            self.read_imports();
            return;
        };
        // A walk in use by another lint of the same buffer (an older version's) is not waited
        // for: this lint walks every statement.
        let carried = cache.carried.lock().unwrap_or_else(PoisonError::into_inner).take();
        let planned =
            carried.and_then(|carried| carried.plan(self.tree, self.text, statements).map(|plan| (carried, plan)));
        let mut notes = Vec::with_capacity(statements.len());
        match planned {
            Some((carried, plan)) => {
                for index in 0..statements.len() {
                    notes.push(match plan.carried_from(index) {
                        Some(from) => carried.notes(from),
                        None => self.walk_statement(statements, index),
                    });
                }
                let fresh = std::mem::take(&mut self.walked);
                match carried.carry(&plan, fresh) {
                    Some(walked) => self.walked = walked,
                    None => {
                        // A statement paired by its text did not lay out its nodes as the
                        // carried one did: the parse guarded against is not the only one.
                        debug_assert!(false, "a statement built anew with the same text differs");
                        notes.clear();
                        notes.extend((0..statements.len()).map(|index| self.walk_statement(statements, index)));
                    }
                }
            }
            None => notes.extend((0..statements.len()).map(|index| self.walk_statement(statements, index))),
        }
        self.mentions_cuda = notes.iter().any(|notes| notes.names_cuda);
        self.statement_notes = notes;
        self.read_imports();
    }

    /// Walk the top-level statement `index` of `statements`.
    fn walk_statement(&mut self, statements: &[Node<'a>], index: usize) -> StatementNotes {
        let statement = statements[index];
        let previous = index.checked_sub(1).map(|previous| statements[previous]);
        StatementNotes { names_cuda: self.walk_subtree(statement), text: recall_key(statement, previous, self.text) }
    }

    /// The model's imports, read from the import statements the walk noted.
    fn read_imports(&mut self) {
        for node in &self.walked.import_nodes {
            self.imports.add_statement(*node, self.text);
        }
    }

    /// What the walk noted, with what a [`WalkCache`] keeps beside it; `None` for a model walked
    /// without a cache, which took no notes per statement.
    fn into_walked(self) -> Option<FinishedWalk<'a>> {
        (self.statement_notes.len() == self.top_level.len()).then(|| FinishedWalk {
            statements: self.top_level,
            walked: self.walked,
            tree: self.tree,
            notes: self.statement_notes,
        })
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
                walked.call_names.push(name.map(|name| NameSpan::of(name, self.text)));
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

#[cfg(test)]
mod tests {
    use foldhash::HashMap;

    use super::*;
    use crate::document::Document;
    use crate::lint::LintContext;
    use crate::text::TextRange;

    fn ranges(nodes: &[Node<'_>]) -> String {
        format!("{:?}", nodes.iter().map(|n| (n.byte_range(), n.start_position(), n.kind())).collect::<Vec<_>>())
    }

    /// Everything the walk gives the model, as plain data.
    fn noted(model: &Model<'_>) -> Vec<String> {
        let walked = &model.walked;
        let maybe = |nodes: &[Option<Node<'_>>]| {
            format!("{:?}", nodes.iter().map(|n| n.map(|n| n.byte_range())).collect::<Vec<_>>())
        };
        fn by_name<'a, N: std::ops::Deref<Target = [Node<'a>]>>(map: &HashMap<Box<str>, N>) -> String {
            let mut names: Vec<_> = map.iter().map(|(name, nodes)| format!("{name}: {}", ranges(nodes))).collect();
            names.sort();
            names.join("; ")
        }
        // A node placed in the tree must be the tree's own: its parent is found from the root.
        let parents =
            |nodes: &[Node<'_>]| format!("{:?}", nodes.iter().map(|n| n.parent().map(|p| p.id())).collect::<Vec<_>>());
        vec![
            ranges(&walked.calls),
            parents(&walked.calls),
            maybe(&walked.call_scopes),
            maybe(&walked.call_loops),
            format!("{:?}", walked.call_names.iter().map(|n| n.map(|n| n.in_text(model.text))).collect::<Vec<_>>()),
            ranges(&walked.loop_nodes),
            maybe(&walked.outer_loops),
            ranges(&walked.with_statements),
            maybe(&walked.with_scopes),
            ranges(&walked.functions),
            parents(&walked.functions),
            ranges(&walked.classes),
            by_name(&walked.calls_by_name),
            by_name(&walked.functions_by_name),
            by_name(&walked.assignments),
            ranges(&walked.assignment_nodes),
            ranges(&walked.import_nodes),
            format!("{:?} {:?}", model.imports.statements, model.imports.wildcard_modules),
            bindings(&model.imports),
            model.mentions_cuda.to_string(),
        ]
    }

    /// The import bindings in name order (they are kept in a hash map).
    fn bindings(imports: &super::super::Imports) -> String {
        format!("{:?}", imports.sorted_bindings())
    }

    /// The walk of `document` through `cache`, compared with a walk of its tree without one; the
    /// walk is then kept for the next.
    fn assert_carried(document: &mut Document, cache: &WalkCache, what: &str) {
        let text = document.text().to_owned();
        let tree = document.tree().clone();
        let fresh = noted(&Model::new(&text, &tree, LintContext::default()));
        let model = Model::with_cache(&text, &tree, LintContext::default(), Some(cache));
        assert_eq!(noted(&model), fresh, "{what}:\n{text}");
        cache.keep(model);
    }

    /// Every fixture and example, and a script written at module level, typed through as an
    /// editor does (code that joins a statement, code that breaks it, a new statement, a line
    /// break, an indented line), and walked after every keystroke through one cache: the carried
    /// walk notes what a fresh one does.
    #[test]
    fn a_carried_walk_notes_what_a_fresh_walk_notes() {
        let files = crate::test_support::python_files().into_iter().filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            Some((path.display().to_string(), text))
        });
        let module_level = ("a script at module level".to_owned(), crate::test_support::MODULE_LEVEL.to_owned());
        for (path, text) in files.chain([module_level]) {
            let mut document = crate::test_support::edited_buffer(&text);
            let cache = WalkCache::default();
            let lines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
            for (n, &at) in lines.iter().enumerate().step_by(11) {
                let typed = [" * 2", "(", "\nimport torch", "\n    x = f(y)", "\n\ndef g():\n    h()"][n % 5];
                let mut offset = at;
                for c in typed.chars() {
                    document.edit(TextRange::empty(offset), &c.to_string());
                    offset += c.len_utf8();
                    assert_carried(&mut document, &cache, &format!("{path} typing"));
                }
                document.edit(TextRange::new(at, offset), "");
                assert_carried(&mut document, &cache, &format!("{path} deleting"));
            }
            assert_eq!(document.text(), text);
        }
    }

    /// The tests above would pass with a walk that is never carried; these fail then: the
    /// carried notes are poisoned, and the statements the edit left keep the poison.
    #[test]
    fn statements_the_edit_left_are_carried_not_walked_again() {
        let text = include_str!("../../../examples/train_resnet.py");
        let mut document = crate::test_support::edited_buffer(text);
        document.edit(TextRange::empty(text.len()), "\n");
        let calls = calls_noted(&mut document);
        assert!(calls > 10);
        // An edit in the last statement: only that statement is walked again.
        let cache = a_cache_without_calls(&mut document);
        document.edit(TextRange::empty(document.text().trim_end().len()), " ");
        let tree = document.tree().clone();
        let model = Model::with_cache(document.text(), &tree, LintContext::default(), Some(&cache));
        assert!(model.walked.calls.len() < calls / 2, "the statements were walked again");
    }

    /// A statement built anew with the same text is carried too, found by its text. A reparse
    /// builds some anew (the statement after an edited line, one tree-sitter built while it
    /// weighed two parses); here the text is parsed again from scratch, which builds them all.
    #[test]
    fn statements_built_anew_with_the_same_text_are_carried() {
        let text = crate::test_support::MODULE_LEVEL;
        let mut document = crate::test_support::edited_buffer(text);
        let calls = calls_noted(&mut document);
        assert!(calls > 20);
        let cache = a_cache_without_calls(&mut document);
        let before = document.tree().clone();
        document.drop_tree();
        let tree = document.settled_tree();
        let built_anew = crate::tree_reuse::statements_not_shared(&before, &tree);
        assert!(built_anew > 15, "the parse built {built_anew} statements anew");
        let model = Model::with_cache(document.text(), &tree, LintContext::default(), Some(&cache));
        assert!(model.walked.calls.is_empty(), "the statements built anew were walked again");
    }

    /// How many calls a walk of `document` notes.
    fn calls_noted(document: &mut Document) -> usize {
        let tree = document.tree().clone();
        Model::new(document.text(), &tree, LintContext::default()).walked.calls.len()
    }

    /// A cache that holds a walk of `document` that noted no call at all.
    fn a_cache_without_calls(document: &mut Document) -> WalkCache {
        let cache = WalkCache::default();
        let tree = document.tree().clone();
        let mut poisoned = Model::with_cache(document.text(), &tree, LintContext::default(), Some(&cache));
        poisoned.walked.calls = InSourceOrder::default();
        poisoned.walked.call_scopes.clear();
        poisoned.walked.call_loops.clear();
        poisoned.walked.call_names.clear();
        cache.keep(poisoned);
        cache
    }
}
