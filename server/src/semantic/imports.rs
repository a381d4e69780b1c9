//! Imports and aliases, resolved to qualified names.
//!
//! `import torch as T` binds `T` to `torch`; `from torch.cuda import amp` binds `amp` to
//! `torch.cuda.amp`; `from .utils import setup` binds `setup` to `.utils.setup`. A name that no
//! import binds never resolves, so rules cannot match a bare spelling by accident.

use foldhash::HashMap;

use tree_sitter::Node;

use super::ast::text;
use crate::grammar_ids::FieldChild;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The qualified name the local name stands for.
    pub qualified: String,
    /// The import statement, for fixes that rewrite it.
    pub statement: tree_sitter::Range,
}

#[derive(Debug, Default)]
pub struct Imports {
    bindings: HashMap<String, Binding>,
    /// Every import statement, in order, with the modules it names.
    pub statements: Vec<ImportStatement>,
    /// Modules imported with `from module import *`, in order (`.utils` for a relative one).
    pub wildcard_modules: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct ImportStatement {
    pub range: tree_sitter::Range,
    /// `torch.cuda.amp` for `from torch.cuda.amp import X`, or each module of `import a, b`.
    pub modules: Vec<String>,
    pub is_from: bool,
    /// Imported at module level (not inside a function or a conditional block).
    pub top_level: bool,
}

impl Imports {
    pub fn add_statement(&mut self, node: Node<'_>, source: &str) {
        let top_level = node.parent().is_some_and(|p| p.kind() == "module");
        match node.kind() {
            "import_statement" => {
                let mut modules = Vec::new();
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    match name.kind() {
                        "dotted_name" => {
                            let module = text(name, source).to_owned();
                            let root = module.split('.').next().unwrap_or_default().to_owned();
                            self.bind(root.clone(), root, node);
                            modules.push(module);
                        }
                        "aliased_import" => {
                            let (Some(module), Some(alias)) = (name.field("name"), name.field("alias")) else {
                                continue;
                            };
                            let module = text(module, source).to_owned();
                            self.bind(text(alias, source).to_owned(), module.clone(), node);
                            modules.push(module);
                        }
                        _ => {}
                    }
                }
                self.statements.push(ImportStatement { range: node.range(), modules, is_from: false, top_level });
            }
            "import_from_statement" => {
                let Some(module_node) = node.field("module_name") else { return };
                let module = text(module_node, source).to_owned();
                let mut cursor = node.walk();
                if node.named_children(&mut cursor).any(|c| c.kind() == "wildcard_import") {
                    self.wildcard_modules.push(module.clone());
                }
                for name in node.children_by_field_name("name", &mut cursor) {
                    let (imported, local) = match name.kind() {
                        "dotted_name" => (text(name, source), text(name, source)),
                        "aliased_import" => match (name.field("name"), name.field("alias")) {
                            (Some(n), Some(a)) => (text(n, source), text(a, source)),
                            _ => continue,
                        },
                        _ => continue,
                    };
                    let qualified = if module.ends_with('.') {
                        format!("{module}{imported}")
                    } else {
                        format!("{module}.{imported}")
                    };
                    self.bind(local.to_owned(), qualified, node);
                }
                self.statements.push(ImportStatement {
                    range: node.range(),
                    modules: vec![module],
                    is_from: true,
                    top_level,
                });
            }
            _ => {}
        }
    }

    fn bind(&mut self, local: String, qualified: String, statement: Node<'_>) {
        // The first binding wins: scripts that re-import inside functions import the same thing.
        self.bindings.entry(local).or_insert(Binding { qualified, statement: statement.range() });
    }

    pub fn binding(&self, local: &str) -> Option<&Binding> {
        self.bindings.get(local)
    }

    /// Every binding, by local name: for tests that compare two sets of imports.
    #[cfg(test)]
    pub fn sorted_bindings(&self) -> Vec<(&String, &Binding)> {
        let mut bindings: Vec<_> = self.bindings.iter().collect();
        bindings.sort_unstable_by_key(|(name, _)| *name);
        bindings
    }

    /// Whether any import names this module or one of its submodules.
    pub fn imports_module(&self, module: &str) -> bool {
        self.statements
            .iter()
            .flat_map(|s| &s.modules)
            .any(|m| m == module || (m.starts_with(module) && m.as_bytes().get(module.len()) == Some(&b'.')))
    }

    /// The qualified name of an expression made of names and attributes: `T.cuda.empty_cache`
    /// gives `torch.cuda.empty_cache` after `import torch as T`.
    pub fn qualified_name(&self, node: Node<'_>, source: &str) -> Option<String> {
        // The chain's root name starts its text. Most chains (`model.train`, `loss.backward`) are
        // rooted at a name no import binds, which this settles without walking the chain.
        let chain = text(node, source);
        let root_end = chain.find(|c: char| matches!(c, '.' | '#' | '\\' | '(' | '[') || c.is_whitespace());
        let root_end = root_end.unwrap_or(chain.len());
        if !self.bindings.contains_key(&chain[..root_end]) {
            return None;
        }
        match node.kind() {
            "identifier" => self.binding(text(node, source)).map(|b| b.qualified.clone()),
            "attribute" => {
                let object = node.field("object")?;
                let attribute = node.field("attribute")?;
                let mut base = self.qualified_name(object, source)?;
                base.push('.');
                base.push_str(text(attribute, source));
                Some(base)
            }
            _ => None,
        }
    }
}
