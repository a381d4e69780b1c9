//! One project module: parsed once, with what it defines indexed, and each function summarised
//! when first asked for. Summarising every function up front would follow every call of every
//! function into further modules, and on a large project that reads most of it for the few
//! functions a lint run asks about.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use tree_sitter::{Node, Tree};

use super::ProjectIndex;
use crate::grammar_ids::FieldChild;
use crate::parse::parse;
use crate::semantic::LintContext;
use crate::semantic::imports::Imports;
use crate::semantic::{FunctionSummary, Model, ast};

#[derive(Debug, Default)]
pub(super) struct ModuleSummaries {
    /// The text and its tree, kept for the functions not summarised yet; `None` when the file
    /// could not be read.
    source: Option<(String, Tree)>,
    /// Each top-level function (`function`) and method of a top-level class (`Class.method`),
    /// as the positions of its definitions in the model's list of functions.
    members: HashMap<String, Vec<usize>>,
    /// Summaries computed so far; only complete ones (see [`ProjectIndex`] on cycles).
    summaries: Mutex<HashMap<String, FunctionSummary>>,
    /// Top-level classes, keyed by name: whether they derive from anything, which decides
    /// whether a constructor without `__init__` is known to do nothing.
    pub classes: HashMap<String, ClassShape>,
    /// The module's imports, for names it re-exports (`from .engine import train_one_epoch` in a
    /// package's `__init__.py`).
    pub imports: Imports,
    /// The file could not be read or is too large: nothing in it is known.
    pub unavailable: bool,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct ClassShape {
    pub has_bases: bool,
}

impl ModuleSummaries {
    pub fn unavailable() -> Self {
        Self { unavailable: true, ..Self::default() }
    }

    /// Parse `text` and index what it defines; nothing is summarised yet.
    pub fn parse(text: String, path: &Path) -> Self {
        let tree = parse(&text, None);
        let (members, classes, imports) = {
            let mut model = Model::new(
                &text,
                &tree,
                LintContext { path: Some(path), project: None, code_kind: None, preview: false },
            );
            let mut members: HashMap<String, Vec<usize>> = HashMap::new();
            for (position, function) in model.all_functions().iter().enumerate() {
                if let Some(key) = member_key(*function, &text) {
                    members.entry(key).or_default().push(position);
                }
            }
            let classes = model
                .all_classes()
                .iter()
                .filter(|class| is_module_level(**class))
                .filter_map(|class| {
                    let name = ast::text(class.field("name")?, &text).to_owned();
                    let has_bases = class.field("superclasses").is_some_and(|bases| {
                        let mut cursor = bases.walk();
                        bases.named_children(&mut cursor).any(|base| ast::text(base, &text) != "object")
                    });
                    Some((name, ClassShape { has_bases }))
                })
                .collect();
            (members, classes, std::mem::take(&mut model.imports))
        };
        Self { source: Some((text, tree)), members, classes, imports, ..Self::default() }
    }

    pub fn defines(&self, member: &str) -> bool {
        self.members.contains_key(member)
    }

    /// The summary of `member` computed before, if it was complete.
    pub fn known(&self, member: &str) -> Option<FunctionSummary> {
        self.summaries.lock().unwrap_or_else(PoisonError::into_inner).get(member).cloned()
    }

    pub fn remember(&self, member: &str, summary: &FunctionSummary) {
        self.summaries.lock().unwrap_or_else(PoisonError::into_inner).insert(member.to_owned(), summary.clone());
    }

    /// Summarise `member` of this module (at `path`); `None` when the module does not define it.
    /// Calls into other project modules are looked up through `project`, which carries the chain
    /// of modules being summarised so that import cycles end.
    pub fn summarize(&self, member: &str, path: &Path, project: &ProjectIndex) -> Option<FunctionSummary> {
        let positions = self.members.get(member)?;
        let (text, tree) = self.source.as_ref()?;
        let model = Model::new(
            text,
            tree,
            LintContext { path: Some(path), project: Some(project), code_kind: None, preview: false },
        );
        // A name defined in several branches (`if cuda: def setup() ... else: def setup()`) may
        // do what any of them does.
        let mut summaries = positions.iter().map(|&position| model.function_summary(model.all_functions()[position]));
        let mut merged = summaries.next()?;
        summaries.for_each(|other| merged.merge(&other));
        Some(merged)
    }
}

/// `name` for a module-level function, `Class.name` for a method of a module-level class; nested
/// functions and methods of nested classes are not reachable by an import.
fn member_key(function: Node<'_>, source: &str) -> Option<String> {
    let name = ast::function_name(function, source)?;
    if is_module_level(function) {
        return Some(name.to_owned());
    }
    let class = ast::method_class(function)?;
    if !is_module_level(class) {
        return None;
    }
    let class_name = ast::text(class.field("name")?, source);
    Some(format!("{class_name}.{name}"))
}

/// Whether a definition binds a module attribute: no function or class lies between it and the
/// module (definitions under `if`/`try` at module level count).
fn is_module_level(definition: Node<'_>) -> bool {
    let mut current = definition.parent();
    while let Some(node) = current {
        if ast::is_function_boundary(node) {
            return false;
        }
        current = node.parent();
    }
    true
}
