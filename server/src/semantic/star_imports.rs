//! Names that come from `from module import *`.
//!
//! Training repositories often pull their helpers in with a star import (`from utils import *`,
//! then `init_distributed_mode(args)`). Such a name has no binding of its own, so it is resolved
//! through the star-imported modules: a project module that defines it gives its summary, and a
//! module the checker cannot see makes the call unseen, so the rules stay quiet about it.

use super::{CallTarget, Model, names};
use crate::project::ProjectLookup;

impl<'a> Model<'a> {
    /// What a call of the unbound name `name` refers to, through the file's star imports. The
    /// last star import that can provide the name wins, as in Python.
    pub(super) fn resolve_star_imported(&self, name: &str) -> CallTarget<'a> {
        let mut target = CallTarget::Dynamic;
        // Most files star-import nothing; the built-ins are then not worth looking through.
        if self.imports.wildcard_modules.is_empty() || is_builtin(name) {
            return target;
        }
        for module in &self.imports.wildcard_modules {
            let qualified = if module.ends_with('.') { format!("{module}{name}") } else { format!("{module}.{name}") };
            // A library's star import (`from torch.nn import *`) may or may not provide the
            // name; what it would be is not known, so it does not change the answer.
            if !module.starts_with('.') && names::is_known_library(module) {
                continue;
            }
            let found = self.context.project.map(|project| project.lookup(self.context.path, &qualified));
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

/// Python's built-in functions and exception types: a star import does not bring these in.
fn is_builtin(name: &str) -> bool {
    const BUILTINS: &str = "abs all any bool bytearray bytes callable chr classmethod compile dict dir divmod \
        enumerate eval exec filter float format frozenset getattr globals hasattr hash hex id input int isinstance \
        issubclass iter len list locals map max min next object oct open ord pow print property range repr \
        reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip";
    BUILTINS.split_whitespace().any(|builtin| builtin == name)
        || ["Error", "Exception", "Warning"].iter().any(|suffix| name.ends_with(suffix))
}
