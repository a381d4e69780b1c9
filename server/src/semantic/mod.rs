//! The semantic model of one file: what the rules know beyond the syntax tree.
//!
//! One walk over the tree (`walk.rs`) collects imports, calls (indexed by callee name), function
//! and class definitions, loops and assignments. Loops are then classified (step, epoch, eval),
//! framework configuration is read, and calls can be resolved to local functions, project
//! helpers or libraries. Every rule shares one model per lint run.

pub mod ast;
pub mod code_kind;
mod contexts;
mod cuda_init;
pub mod environ;
mod facts;
mod frameworks;
pub mod imports;
mod loops;
pub mod model_size;
pub mod names;
mod source_order;
mod star_imports;
pub mod summary;
pub mod torch_floor;
pub mod training;
mod walk;

use foldhash::HashMap;
use smallvec::SmallVec;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tree_sitter::{Node, Tree};

use crate::grammar_ids::FieldChild;
use crate::patterns::{Candidate, PatternSet};
use crate::project::ProjectLookup;
pub use code_kind::{CodeKind, Judgement};
pub use contexts::with_items as contexts_with_items;
pub use frameworks::Frameworks;
use imports::Imports;
pub use loops::{LoopInfo, LoopKind, is_eval_function_name};
pub use summary::FunctionSummary;

use ast::text;
use source_order::InSourceOrder;

/// Where the text came from: its path, and the project it belongs to for cross-file summaries.
#[derive(Clone, Copy, Default)]
pub struct LintContext<'a> {
    pub path: Option<&'a std::path::Path>,
    pub project: Option<&'a crate::project::ProjectIndex>,
    /// What the file is, when the caller knows: the configuration's `code-kind`, or a judgement
    /// already made of it. `None`: the model judges the file itself.
    pub code_kind: Option<CodeKind>,
    /// Report preview findings too: those that rest on an assumption
    /// ([`crate::diagnostic::Diagnostic::is_preview`]). It travels with the text because
    /// `--fix` re-lints through the same context, and must not apply what it would not show.
    pub preview: bool,
}

pub struct Model<'a> {
    pub text: &'a str,
    pub tree: &'a Tree,
    pub context: LintContext<'a>,
    pub imports: Imports,
    /// The module's statements, in source order: where [`Model::ancestors`] starts its descent.
    top_level: InSourceOrder<'a>,
    /// What the walk noted: calls, loops, definitions, assignments and imports, and indices of
    /// them by name.
    walked: walk::Walked<'a>,
    /// The file names CUDA in code (strings, attributes, names), not only in comments, or NCCL,
    /// which runs only on CUDA devices (`init_process_group("nccl")` with `.to(rank)`).
    pub mentions_cuda: bool,
    loops: OnceLock<Vec<LoopInfo<'a>>>,
    /// What the file is ([`Model::file_code_kind`]).
    file_kind: OnceLock<CodeKind>,
    /// The outermost test functions and classes ([`Model::is_test_code`]).
    test_spans: OnceLock<Vec<(usize, usize, usize)>>,
    /// The functions, by node id, that [`Model::runs_one_step`] holds true of.
    functions_stepping_outside_loops: OnceLock<std::collections::HashSet<usize>>,
    frameworks: OnceLock<Frameworks>,
    /// Function summaries by node id: each function's own, with its local callees, and the
    /// merged ones [`Model::function_summary`] answers with.
    own_summaries: Mutex<HashMap<usize, OwnSummary<'a>>>,
    summaries: Mutex<HashMap<usize, FunctionSummary>>,
    /// `resolve_call` answers by call node id: rules ask about the same calls many times.
    resolved: Mutex<HashMap<usize, CallTarget<'a>>>,
    /// [`Model::file_fact`] answers by the fact's address.
    file_facts: Mutex<HashMap<usize, bool>>,
    /// [`Model::ancestors`] answers by node id, innermost first: rules walk up from the same
    /// calls and statements again and again (a step loop's calls are checked by several rules).
    ancestor_chains: Mutex<HashMap<usize, Arc<[Node<'a>]>>>,
    /// [`Model::call_qualified_name`] answers by call node id.
    callee_qualified_names: Mutex<HashMap<usize, Option<Arc<str>>>>,
}

/// A function's own summary and the functions of this file it calls.
type OwnSummary<'a> = (FunctionSummary, Vec<Node<'a>>);

/// A fact of the whole file that a rule computes once per model ([`Model::file_fact`]).
pub type FileFact = for<'m, 'a> fn(&'m Model<'a>) -> bool;

/// What a call refers to, as far as the checker can see.
#[derive(Debug, Clone)]
pub enum CallTarget<'a> {
    /// A function defined in this file.
    Local(Node<'a>),
    /// A function in another file of the project, known through its summary.
    Project(FunctionSummary),
    /// A library function, by qualified name.
    Library(Arc<str>),
    /// A project-local helper the checker cannot see: rules that depend on it stay quiet.
    Unseen,
    /// A method of an object or anything else not resolvable by name.
    Dynamic,
}

impl<'a> Model<'a> {
    pub fn new(text: &'a str, tree: &'a Tree, context: LintContext<'a>) -> Self {
        Self::with_candidates(text, tree, context, &PatternSet::new([])).0
    }

    /// [`Model::new`], and the candidates of `patterns`, found in the same walk: each set's list
    /// (by slot) in source order, outer nodes before the nodes they hold.
    pub fn with_candidates(
        text: &'a str,
        tree: &'a Tree,
        context: LintContext<'a>,
        patterns: &PatternSet,
    ) -> (Self, Vec<Vec<Candidate<'a>>>) {
        let mut model = Self {
            text,
            tree,
            context,
            imports: Imports::default(),
            top_level: InSourceOrder::default(),
            walked: walk::Walked::default(),
            mentions_cuda: false,
            loops: OnceLock::new(),
            file_kind: OnceLock::new(),
            test_spans: OnceLock::new(),
            functions_stepping_outside_loops: OnceLock::new(),
            frameworks: OnceLock::new(),
            own_summaries: Default::default(),
            summaries: Default::default(),
            resolved: Default::default(),
            ancestor_chains: Default::default(),
            file_facts: Default::default(),
            callee_qualified_names: Default::default(),
        };
        let found = model.walk(&ast::top_level_statements(tree), patterns);
        let mut by_slot: Vec<Vec<Candidate<'a>>> = (0..patterns.slots()).map(|_| Vec::new()).collect();
        for (slot, candidate) in found {
            by_slot[slot].push(candidate);
        }
        // The walk meets a match's root first; its @violation may lie further in. A stable sort,
        // so that the matches of one node keep their order.
        for candidates in &mut by_slot {
            candidates.sort_by_cached_key(|c| (c.node.start_byte(), std::cmp::Reverse(c.node.end_byte())));
        }
        (model, by_slot)
    }

    /// The ancestors of `node`, innermost first, the module last. `Node::parent` descends from
    /// the root on every call, which at module level scans every statement before the node: in a
    /// large script that is most of the cost of walking up. This descends once, from the
    /// statement that holds the node.
    pub fn ancestors(&self, node: Node<'a>) -> impl Iterator<Item = Node<'a>> + use<'a> {
        let chain = self.ancestor_chain(node);
        (0..chain.len()).map(move |i| chain[i])
    }

    fn ancestor_chain(&self, node: Node<'a>) -> Arc<[Node<'a>]> {
        if let Some(chain) = lock(&self.ancestor_chains).get(&node.id()) {
            return Arc::clone(chain);
        }
        let mut chain = vec![self.tree.root_node()];
        let chain: Arc<[Node<'a>]> = if self.descend(node, |n| chain.push(n)) {
            chain.into_iter().rev().collect()
        } else {
            Self::ancestors_by_parent(node).into()
        };
        lock(&self.ancestor_chains).insert(node.id(), Arc::clone(&chain));
        chain
    }

    /// The parent of `node` ([`Node::parent`], faster: see [`Model::ancestors`]).
    pub fn parent(&self, node: Node<'a>) -> Option<Node<'a>> {
        match lock(&self.ancestor_chains).get(&node.id()) {
            Some(chain) => chain.first().copied(),
            None => {
                // A top-level statement's parent is the module.
                let mut parent = self.tree.root_node();
                if self.descend(node, |n| parent = n) { Some(parent) } else { node.parent() }
            }
        }
    }

    /// Walk down from the top-level statement that holds `node` to the node, calling `visit` with
    /// each node on the way: the statement first, the node's parent last, the node itself not.
    /// False for a node the descent cannot place (the module itself, a node of another tree).
    fn descend(&self, node: Node<'a>, mut visit: impl FnMut(Node<'a>)) -> bool {
        let Some(statement) = self.statement_holding(node).filter(|_| node != self.tree.root_node()) else {
            return false;
        };
        let mut current = statement;
        while current != node {
            visit(current);
            match current.child_with_descendant(node) {
                Some(child) => current = child,
                None => return false,
            }
        }
        true
    }

    /// The class a function is a method of ([`ast::method_class`], faster). The walks up in
    /// these three go through one ancestor chain, which is memoised: rules ask them of the same
    /// functions and statements again and again.
    pub fn method_class(&self, function: Node<'a>) -> Option<Node<'a>> {
        ast::method_class_among(self.ancestors(function))
    }

    /// Decorator expressions of a function or class (`torch.no_grad()` in `@torch.no_grad()`).
    pub fn decorators(&self, definition: Node<'a>) -> Vec<Node<'a>> {
        ast::decorators_under(self.ancestors(definition).next())
    }

    /// The statement that holds a node ([`ast::statement_of`], faster).
    pub fn statement_of(&self, node: Node<'a>) -> Node<'a> {
        ast::statement_of_among(node, self.ancestors(node))
    }

    /// The smallest node that spans `start..end` ([`Node::descendant_for_byte_range`] of the root,
    /// faster: that one scans the top-level statements before the range, this one starts from the
    /// statement a binary search finds).
    pub fn descendant_for_byte_range(&self, start: usize, end: usize) -> Option<Node<'a>> {
        let root = self.tree.root_node();
        // The statement is where the root's descent would go: one that ends past the range's start
        // (a range at its very end belongs to what follows) and no earlier than the range's end.
        let statement = self
            .top_level
            .last_starting_by(start)
            .filter(|s| start < s.end_byte() && end <= s.end_byte())
            .unwrap_or(root);
        statement.descendant_for_byte_range(start, end)
    }

    /// The module's children (statements and comments), in source order.
    pub fn top_level(&self) -> &[Node<'a>] {
        &self.top_level
    }

    /// Where the top-level statement that holds `node` (or is it) is in [`Model::top_level`].
    pub fn top_level_index(&self, node: Node<'a>) -> Option<usize> {
        self.statement_holding(node).and_then(|s| self.top_level.position(s))
    }

    /// [`Model::top_level_index`] of a node the walk noted, which lies in the statement it was
    /// walked from: the last to start at or before it. Its end is not read, nor the statement's
    /// (a cache miss each, in a large file).
    pub fn top_level_index_of_noted(&self, node: Node<'a>) -> Option<usize> {
        self.top_level.index_of_last_starting_by(node.start_byte())
    }

    /// The top-level statement that holds `node` (or is it), found by a binary search.
    fn statement_holding(&self, node: Node<'a>) -> Option<Node<'a>> {
        self.top_level.last_starting_by(node.start_byte()).filter(|s| ast::contains(*s, node))
    }

    /// The ancestors as `Node::parent` finds them, for a node the descent cannot place.
    fn ancestors_by_parent(node: Node<'a>) -> Vec<Node<'a>> {
        std::iter::successors(node.parent(), Node::parent).collect()
    }

    /// The innermost function definition around `node` ([`ast::enclosing_function`], faster).
    pub fn enclosing_function(&self, node: Node<'a>) -> Option<Node<'a>> {
        // A call knows the innermost function, class or lambda around it from the walk: when that
        // is a function, or there is none, no walk up is needed.
        if crate::grammar_ids::CALL.contains(node)
            && let Some(i) = self.call_index(node)
        {
            match self.walked.call_scopes[i] {
                None => return None,
                Some(scope) if crate::grammar_ids::FUNCTION.contains(scope) => return Some(scope),
                Some(_) => {}
            }
        }
        self.ancestors(node).find(|n| crate::grammar_ids::FUNCTION.contains(*n))
    }

    /// The innermost function around `node`, or else the module.
    pub fn scope_of(&self, node: Node<'a>) -> Node<'a> {
        self.enclosing_function(node).unwrap_or_else(|| self.tree.root_node())
    }

    fn call_index(&self, call: Node<'_>) -> Option<usize> {
        self.walked.calls.position(call)
    }

    /// The model's own handle on a call node of its tree.
    pub fn call_node(&self, call: Node<'_>) -> Option<Node<'a>> {
        self.call_index(call).map(|i| self.walked.calls[i])
    }

    /// The final name of a call's callee ([`ast::callee_name`], answered from the walk).
    pub fn callee_name(&self, call: Node<'_>) -> Option<&'a str> {
        match self.call_index(call) {
            Some(i) => self.walked.call_names[i],
            None => ast::callee_name(call, self.text),
        }
    }

    /// The innermost loop around a call, not crossing a function, class or lambda boundary.
    pub fn loop_around_call(&self, call: Node<'a>) -> Option<Node<'a>> {
        match self.call_index(call) {
            Some(i) => self.walked.call_loops[i],
            None => ast::innermost_loop(call),
        }
    }

    /// The loops around a call, innermost first, not crossing a function, class or lambda
    /// boundary.
    pub fn loops_around_call(&self, call: Node<'a>) -> impl Iterator<Item = Node<'a>> + '_ {
        std::iter::successors(self.loop_around_call(call), |l| self.outer_loop(*l))
    }

    fn outer_loop(&self, loop_node: Node<'a>) -> Option<Node<'a>> {
        self.loop_index(loop_node).map_or_else(|| ast::innermost_loop(loop_node), |i| self.walked.outer_loops[i])
    }

    /// Where a loop node is in `loop_nodes` (and in the classified loops, which follow it).
    fn loop_index(&self, loop_node: Node<'_>) -> Option<usize> {
        self.walked.loop_nodes.position(loop_node)
    }

    /// Every `for` and `while` loop, in source order.
    pub fn loop_nodes(&self) -> &[Node<'a>] {
        &self.walked.loop_nodes
    }

    /// Every call, in source order.
    pub fn all_calls(&self) -> &[Node<'a>] {
        &self.walked.calls
    }

    /// Every function definition, in source order.
    pub fn all_functions(&self) -> &[Node<'a>] {
        &self.walked.functions
    }

    /// Every class definition, in source order.
    pub fn all_classes(&self) -> &[Node<'a>] {
        &self.walked.classes
    }

    pub fn node_text(&self, node: Node<'_>) -> &'a str {
        text(node, self.text)
    }

    /// Calls whose callee's final name is `name` (`backward` finds `loss.backward()`).
    pub fn calls_named(&self, name: &str) -> &[Node<'a>] {
        self.walked.calls_by_name.get(name).map_or(&[], |calls| calls)
    }

    /// Calls whose callee's final name passes `wanted`, grouped by name. One test per distinct name rather than per call: a large script has thousands of
    /// calls and a few hundred names.
    pub fn calls_named_like<'s>(&'s self, wanted: impl Fn(&str) -> bool + 's) -> impl Iterator<Item = Node<'a>> + 's {
        self.walked
            .calls_by_name
            .iter()
            .filter(move |(name, _)| wanted(name))
            .flat_map(|(_, calls)| calls.iter().copied())
    }

    /// The calls with callee name `name` inside `node` (the node itself included), in source order.
    pub fn calls_named_within(&self, name: &str, node: Node<'_>) -> impl Iterator<Item = Node<'a>> + '_ {
        let end = node.end_byte();
        let starting =
            self.walked.calls_by_name.get(name).map_or(&[][..], |calls| calls.starting_in(node.start_byte(), end));
        starting.iter().copied().filter(move |call| call.end_byte() <= end)
    }

    /// The calls with callee name `name` that start in `start..end`, in source order.
    pub fn calls_named_starting_in(&self, name: &str, start: usize, end: usize) -> &[Node<'a>] {
        self.walked.calls_by_name.get(name).map_or(&[], |calls| calls.starting_in(start, end))
    }

    /// Calls whose callee resolves to one of `qualified` names.
    pub fn calls_to<'s>(&'s self, qualified: &'s [&str]) -> impl Iterator<Item = Node<'a>> + 's {
        qualified
            .iter()
            .filter_map(|q| q.rsplit('.').next())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .flat_map(|name| self.calls_named(name).iter().copied())
            .filter(|call| self.call_resolves_to(*call, qualified))
    }

    pub fn functions_named(&self, name: &str) -> &[Node<'a>] {
        self.walked.functions_by_name.get(name).map_or(&[], SmallVec::as_slice)
    }

    pub fn assignments_to(&self, target: &str) -> &[Node<'a>] {
        self.walked.assignments.get(target).map_or(&[], |assignments| assignments)
    }

    /// Where a plain name read in `function` (`None`: at module level) is bound: its assignments
    /// in that very function, or, when it has none there, those at module level.
    pub fn assignments_seen_from(&self, name: &str, function: Option<Node<'a>>) -> Vec<Node<'a>> {
        let in_function = |scope: Option<Node<'a>>| {
            move |assignment: &&Node<'a>| self.enclosing_function(**assignment).map(|f| f.id()) == scope.map(|f| f.id())
        };
        let local: Vec<Node<'a>> = self.assignments_to(name).iter().filter(in_function(function)).copied().collect();
        if !local.is_empty() || function.is_none() {
            return local;
        }
        self.assignments_to(name).iter().filter(in_function(None)).copied().collect()
    }

    /// The assignments to `target` inside `node`, in source order: a common name (`loss`) is
    /// assigned all over a long script, and a rule asks about one function or loop of it.
    pub fn assignments_to_within(&self, target: &str, node: Node<'_>) -> impl Iterator<Item = Node<'a>> + '_ {
        let end = node.end_byte();
        let starting = self.walked.assignments.get(target).map_or(&[][..], |a| a.starting_in(node.start_byte(), end));
        starting.iter().copied().filter(move |assignment| assignment.end_byte() <= end)
    }

    /// The qualified name of a name or attribute chain, through imports.
    pub fn qualified_name(&self, node: Node<'_>) -> Option<String> {
        self.imports.qualified_name(node, self.text)
    }

    /// The qualified name of a call's callee, memoised per call: the rules ask whether the same
    /// calls resolve to one API or another many times, and each answer builds a string.
    pub fn call_qualified_name(&self, call: Node<'_>) -> Option<Arc<str>> {
        if let Some(known) = lock(&self.callee_qualified_names).get(&call.id()) {
            return known.clone();
        }
        let qualified: Option<Arc<str>> = ast::callee(call).and_then(|f| self.qualified_name(f)).map(Arc::from);
        lock(&self.callee_qualified_names).insert(call.id(), qualified.clone());
        qualified
    }

    pub fn call_resolves_to(&self, call: Node<'_>, qualified: &[&str]) -> bool {
        self.call_qualified_name(call).is_some_and(|q| qualified.contains(&&*q))
    }

    pub fn resolves_to(&self, node: Node<'_>, qualified: &[&str]) -> bool {
        self.qualified_name(node).is_some_and(|q| qualified.contains(&q.as_str()))
    }

    /// The frameworks the file configures.
    pub fn frameworks(&self) -> &Frameworks {
        self.frameworks.get_or_init(|| Frameworks::read(self))
    }

    /// A fact of the whole file that a rule computes, once per model rather than once per
    /// candidate.
    pub fn file_fact(&self, fact: FileFact) -> bool {
        let known = lock(&self.file_facts).get(&(fact as usize)).copied();
        known.unwrap_or_else(|| {
            let value = fact(self);
            lock(&self.file_facts).insert(fact as usize, value);
            value
        })
    }

    /// What a call refers to.
    pub fn resolve_call(&self, call: Node<'a>) -> CallTarget<'a> {
        if let Some(target) = lock(&self.resolved).get(&call.id()) {
            return target.clone();
        }
        let target = self.resolve_call_uncached(call);
        lock(&self.resolved).insert(call.id(), target.clone());
        target
    }

    fn resolve_call_uncached(&self, call: Node<'a>) -> CallTarget<'a> {
        let Some(function) = ast::callee(call) else { return CallTarget::Dynamic };
        let source = self.text;
        match function.kind() {
            "identifier" => {
                let name = text(function, source);
                if let Some(binding) = self.imports.binding(name) {
                    return self.resolve_imported(&binding.qualified);
                }
                self.local_function(name).map_or_else(|| self.resolve_star_imported(name, call), CallTarget::Local)
            }
            "attribute" => {
                let object = function.field("object");
                // `self.helper()` inside a class: a method of the same class.
                if object.is_some_and(|o| text(o, source) == "self")
                    && let Some(name) = function.field("attribute").map(|a| text(a, source))
                    && let Some(class) = self.enclosing_function(call).and_then(|f| self.method_class(f))
                {
                    return self
                        .functions_named(name)
                        .iter()
                        .copied()
                        .find(|f| self.method_class(*f).is_some_and(|c| c.id() == class.id()))
                        .map_or(CallTarget::Dynamic, CallTarget::Local);
                }
                // The callee's qualified name is memoised per call; rules ask for it too.
                match self.call_qualified_name(call) {
                    Some(qualified) => self.resolve_imported(&qualified),
                    None => CallTarget::Dynamic,
                }
            }
            _ => CallTarget::Dynamic,
        }
    }

    fn local_function(&self, name: &str) -> Option<Node<'a>> {
        // Prefer a module-level function over a method of the same name.
        let candidates = self.functions_named(name);
        candidates.iter().copied().find(|f| self.method_class(*f).is_none()).or_else(|| candidates.first().copied())
    }

    fn resolve_imported(&self, qualified: &str) -> CallTarget<'a> {
        if let Some(project) = self.context.project {
            match project.lookup(self.context.path, qualified) {
                ProjectLookup::Found(summary) => return CallTarget::Project(summary),
                ProjectLookup::Missing => return CallTarget::Unseen,
                ProjectLookup::NotInProject => {}
            }
        }
        if qualified.starts_with('.') || !names::is_known_library(qualified) {
            CallTarget::Unseen
        } else {
            CallTarget::Library(Arc::from(qualified))
        }
    }

    /// The summary of what a called function does, when the checker can see it.
    pub fn callee_summary(&self, call: Node<'a>) -> Option<FunctionSummary> {
        match self.resolve_call(call) {
            CallTarget::Local(function) => Some(self.function_summary(function)),
            CallTarget::Project(summary) => Some(summary),
            _ => None,
        }
    }

    /// The summary of a function defined in this file: what its own body does, merged with what
    /// every function of this file it reaches through calls does. Mutually recursive functions
    /// reach each other, so the answer does not depend on which was asked first.
    pub fn function_summary(&self, function: Node<'a>) -> FunctionSummary {
        if let Some(summary) = lock(&self.summaries).get(&function.id()) {
            return summary.clone();
        }
        let (mut summary, callees) = self.own_summary(function);
        let mut reached = std::collections::HashSet::from([function.id()]);
        let mut pending = callees;
        while let Some(callee) = pending.pop() {
            if reached.insert(callee.id()) {
                let (own, further) = self.own_summary(callee);
                summary.merge(&own);
                pending.extend(further);
            }
        }
        lock(&self.summaries).insert(function.id(), summary.clone());
        summary
    }

    fn own_summary(&self, function: Node<'a>) -> (FunctionSummary, Vec<Node<'a>>) {
        if let Some((summary, callees)) = lock(&self.own_summaries).get(&function.id()) {
            return (summary.clone(), callees.clone());
        }
        // Computed outside the lock: it resolves calls and classifies loops, which other threads
        // linting the same model may be waiting to do.
        let (summary, callees) = summary::own_summary(self, function);
        let mut known = lock(&self.own_summaries);
        let (summary, callees) = known.entry(function.id()).or_insert((summary, callees));
        (summary.clone(), callees.clone())
    }

    /// Whether a call goes to a helper the checker cannot see.
    pub fn is_unseen_call(&self, call: Node<'a>) -> bool {
        matches!(self.resolve_call(call), CallTarget::Unseen)
    }

    /// The indices in `loop_nodes` of the loops inside `node` (the node itself included).
    fn loop_indices_within(&self, node: Node<'_>) -> impl Iterator<Item = usize> + '_ {
        self.walked.loop_nodes.indices_within(node)
    }

    /// Whether `function` calls `.backward()` in its own body outside any loop: it runs one
    /// training step.
    pub fn runs_one_step(&self, function: Node<'_>) -> bool {
        let stepping = self.functions_stepping_outside_loops.get_or_init(|| {
            self.calls_named("backward")
                .iter()
                .filter_map(|call| self.call_index(*call))
                .filter(|i| self.walked.call_loops[*i].is_none())
                .filter_map(|i| self.walked.call_scopes[i].filter(|s| crate::grammar_ids::FUNCTION.contains(*s)))
                .map(|scope| scope.id())
                .collect()
        });
        stepping.contains(&function.id())
    }

    /// Indices into `calls` of the calls inside `node` (the node itself included).
    fn call_indices_within(&self, node: Node<'_>) -> impl Iterator<Item = usize> + '_ {
        self.walked.calls.indices_within(node)
    }

    /// Calls inside `node` (the node itself included), in source order.
    pub fn calls_within(&self, node: Node<'_>) -> impl Iterator<Item = Node<'a>> + '_ {
        self.call_indices_within(node).map(|i| self.walked.calls[i])
    }

    /// Calls inside `node` but not inside a nested function, class or lambda.
    pub fn own_calls_within(&self, node: Node<'a>) -> impl Iterator<Item = Node<'a>> + '_ {
        self.call_indices_within(node)
            .filter(move |i| !scope_lies_within(self.walked.call_scopes[*i], node))
            .map(|i| self.walked.calls[i])
    }

    /// `with` statements inside `node` (the node itself included) but not inside a nested
    /// function, class or lambda, in source order.
    pub fn own_with_statements_within(&self, node: Node<'a>) -> impl Iterator<Item = Node<'a>> + '_ {
        self.walked
            .with_statements
            .indices_within(node)
            .filter(move |i| !scope_lies_within(self.walked.with_scopes[*i], node))
            .map(|i| self.walked.with_statements[i])
    }
}

/// A model's caches hold answers, never half-made state, so one left by a panicking thread is
/// still good.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a name or string names CUDA or NCCL, in any case. Asked of every identifier of a file
/// that names neither, on every keystroke, so it compares in place rather than lowercasing a copy.
fn names_cuda(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"cuda") || w.eq_ignore_ascii_case(b"nccl"))
        // `torch.accelerator.current_accelerator()` picks the device at run time: on a GPU
        // machine, the one a training job is launched on, that is CUDA.
        || text == "current_accelerator"
}

/// Whether `scope`, the innermost boundary around a node inside `top`, lies between that node and
/// `top`: it does when it is a descendant of `top`. A scope with `top`'s range is one (a function,
/// class or lambda never shares its range with a child).
fn scope_lies_within(scope: Option<Node<'_>>, top: Node<'_>) -> bool {
    scope.is_some_and(|s| s.id() != top.id() && ast::contains(top, s))
}

impl<'a> Model<'a> {
    /// Whether a plain name is bound where `at` runs: a parameter of the enclosing function, an
    /// assignment earlier in that function, or a module-level assignment or import.
    pub fn is_visible_at(&self, name: &str, at: Node<'a>) -> bool {
        let function = self.enclosing_function(at);
        if function.is_some_and(|function| ast::is_parameter(function, name, self.text)) {
            return true;
        }
        if self.imports.binding(name).is_some() {
            return true;
        }
        self.assignments_to(name).iter().any(|assignment| {
            let scope = self.enclosing_function(*assignment);
            match (scope, function) {
                (None, _) => true,
                (Some(s), Some(f)) => s.id() == f.id() && ast::precedes(*assignment, at),
                (Some(_), None) => false,
            }
        })
    }
}

impl<'a> Model<'a> {
    /// Every assignment target with its assignments, in a stable order.
    pub fn assignment_targets(&self) -> Vec<(&str, &[Node<'a>])> {
        let mut targets: Vec<_> = self.walked.assignments.iter().map(|(k, v)| (&**k, &v[..])).collect();
        targets.sort_by_key(|(_, v)| v.first().map(|n| n.start_byte()));
        targets
    }
}

#[cfg(test)]
mod tests {
    /// Mutually recursive helpers reach each other: each one's summary holds what the other does,
    /// whichever is asked first.
    #[test]
    fn summaries_of_mutually_recursive_functions_do_not_depend_on_order() {
        let text = "def a(opt):\n    opt.zero_grad()\n    b(opt)\n\ndef b(opt):\n    a(opt)\n";
        let tree = crate::parse::parse(text, None);
        for order in [["a", "b"], ["b", "a"]] {
            let model = Model::new(text, &tree, LintContext::default());
            for name in order {
                let function = model.functions_named(name)[0];
                assert!(model.function_summary(function).zeroes_grads, "{name} asked in the order {order:?}");
            }
        }
    }

    /// The descent from the top-level statement finds the parent and the ancestors that
    /// `Node::parent` finds, and the smallest node around a range that the root's descent finds,
    /// for every node of every fixture and example.
    #[test]
    fn ancestors_are_the_parent_chain() {
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let tree = crate::parse::parse(&text, None);
            let model = Model::new(&text, &tree, LintContext::default());
            let mut cursor = tree.walk();
            let mut stack = vec![tree.root_node()];
            while let Some(node) = stack.pop() {
                let expected: Vec<Node<'_>> = std::iter::successors(node.parent(), Node::parent).collect();
                // Asked twice: the second answer comes from the memo.
                for _ in 0..2 {
                    assert_eq!(model.ancestors(node).collect::<Vec<_>>(), expected, "{} at {:?}", path.display(), node);
                }
                assert_eq!(model.parent(node), node.parent(), "{} at {:?}", path.display(), node);
                for (start, end) in [(node.start_byte(), node.end_byte()), (node.start_byte(), node.start_byte())] {
                    let expected = tree.root_node().descendant_for_byte_range(start, end);
                    assert_eq!(
                        model.descendant_for_byte_range(start, end),
                        expected,
                        "{} at {start}..{end}",
                        path.display()
                    );
                }
                let function = expected.iter().copied().find(|n| n.kind() == "function_definition");
                assert_eq!(model.enclosing_function(node), function);
                stack.extend(node.children(&mut cursor));
            }
        }
    }

    use super::*;

    #[test]
    fn cuda_and_nccl_are_named_in_any_case_and_short_texts_are_not() {
        for named in ["cuda", "torch.cuda", "CUDA_VISIBLE_DEVICES", "use_Cuda", "nccl", "NCCL_DEBUG"] {
            assert!(names_cuda(named), "{named}");
        }
        for not_named in ["", "cud", "gloo", "nc_cl", "model"] {
            assert!(!names_cuda(not_named), "{not_named}");
        }
    }
}
