//! The summaries of one project module: every top-level function and every method of a
//! top-level class, plus the imports that re-export names from other modules.

use std::collections::HashMap;
use std::path::Path;

use tree_sitter::Node;

use super::ProjectIndex;
use crate::lint::LintContext;
use crate::parse::parse;
use crate::semantic::imports::Imports;
use crate::semantic::{FunctionSummary, Model, ast};

#[derive(Debug, Default)]
pub(super) struct ModuleSummaries {
    /// Keyed by `function` or `Class.method`.
    pub functions: HashMap<String, FunctionSummary>,
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

    /// Parse `text` (the module at `path`) and summarise what it defines. Calls it makes into
    /// other project modules are looked up through `project`, which carries the chain of modules
    /// being summarised so that import cycles end.
    pub fn summarize(text: &str, path: &Path, project: &ProjectIndex) -> Self {
        let tree = parse(text, None);
        let mut model = Model::new(text, &tree, LintContext { path: Some(path), project: Some(project) });
        let mut functions: HashMap<String, FunctionSummary> = HashMap::new();
        for function in model.functions.clone() {
            let Some(key) = member_key(function, text) else { continue };
            let summary = model.function_summary(function);
            // A name defined in several branches (`if cuda: def setup() ... else: def setup()`)
            // may do what any of them does.
            functions.entry(key).and_modify(|known| known.merge(&summary)).or_insert(summary);
        }
        let classes = model
            .classes
            .iter()
            .filter(|class| is_module_level(**class))
            .filter_map(|class| {
                let name = ast::text(class.child_by_field_name("name")?, text).to_owned();
                let has_bases = class.child_by_field_name("superclasses").is_some_and(|bases| {
                    let mut cursor = bases.walk();
                    bases.named_children(&mut cursor).any(|base| ast::text(base, text) != "object")
                });
                Some((name, ClassShape { has_bases }))
            })
            .collect();
        let imports = std::mem::take(&mut model.imports);
        Self { functions, classes, imports, unavailable: false }
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
    let class_name = ast::text(class.child_by_field_name("name")?, source);
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
