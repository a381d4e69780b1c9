//! Names that come from `from module import *`.
//!
//! Training repositories often pull their helpers in with a star import (`from utils import *`,
//! then `init_distributed_mode(args)`). Such a name has no binding of its own, so it is resolved
//! through the star-imported modules: a project module that defines it gives its summary, and a
//! module the checker cannot see makes the call unseen, so the rules stay quiet about it.

use tree_sitter::Node;

use super::{CallTarget, Model, ast, names};
use crate::grammar_ids::FieldChild;
use crate::project::ProjectLookup;

impl<'a> Model<'a> {
    /// What a call of the unbound name `name` refers to, through the file's star imports. The
    /// last star import that can provide the name wins, as in Python.
    pub(super) fn resolve_star_imported(&self, name: &str, call: Node<'a>) -> CallTarget<'a> {
        let mut target = CallTarget::Dynamic;
        // Most files star-import nothing; the built-ins are then not worth looking through.
        if self.imports.wildcard_modules.is_empty() || is_builtin(name) || self.binds_itself(name, call) {
            return target;
        }
        for module in &self.imports.wildcard_modules {
            let qualified = if module.ends_with('.') { format!("{module}{name}") } else { format!("{module}.{name}") };
            let found = self.context.project.map(|project| project.lookup(self.context.path, &qualified));
            // A library's star import (`from torch.nn import *`) may or may not provide the
            // name; what it would be is not known, so it does not change the answer. A project
            // module that shares a library's name (a `datasets.py` next to the script, which
            // Python imports before Hugging Face's `datasets`) is the project's.
            let in_project = matches!(found, Some(ProjectLookup::Found(_) | ProjectLookup::Missing));
            if !in_project && !module.starts_with('.') && names::is_known_library(module) {
                continue;
            }
            match found {
                Some(ProjectLookup::Found(summary)) => target = CallTarget::Project(summary),
                // The module is there but does not define the name itself (it may star-import
                // it in turn): keep an earlier definite answer, else the call is unseen.
                Some(ProjectLookup::Missing) if matches!(target, CallTarget::Dynamic) => target = CallTarget::Unseen,
                Some(ProjectLookup::Missing) => {}
                Some(ProjectLookup::NotInProject) | None => {
                    if matches!(target, CallTarget::Dynamic) {
                        target = CallTarget::Unseen;
                    }
                }
            }
        }
        target
    }
}

impl<'a> Model<'a> {
    /// Whether the file binds `name` itself, where `call` reads it: an assignment
    /// (`model = Net().to(device)`), a class it defines, or a parameter of a function around the
    /// call (`def train(model, loader)`). Such a name is a value of this file, not something a star
    /// import provides; looking it up in the star-imported modules would find nothing there and
    /// make `model(x)` an unseen helper, silencing every rule that asks what the loop calls.
    fn binds_itself(&self, name: &str, call: Node<'a>) -> bool {
        !self.assignments_to(name).is_empty()
            || self.all_classes().iter().any(|class| class.field("name").is_some_and(|n| self.node_text(n) == name))
            || self
                .ancestors(call)
                .any(|scope| crate::grammar_ids::FUNCTION.contains(scope) && ast::is_parameter(scope, name, self.text))
    }
}

/// Python's built-in functions and exception types: a star import does not bring these in.
fn is_builtin(name: &str) -> bool {
    const BUILTINS: &str = "abs all any bool bytearray bytes callable chr classmethod compile dict dir divmod \
        enumerate eval exec filter float format frozenset getattr globals hasattr hash hex id input int isinstance \
        issubclass iter len list locals map max min next object oct open ord pow print property range repr \
        reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip";
    BUILTINS.split_whitespace().any(|builtin| builtin == name)
        || ["Error", "Exception", "Warning"].iter().any(|suffix| name.ends_with(suffix))
}
