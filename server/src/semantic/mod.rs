//! The semantic model of one file: what the rules know beyond the syntax tree.

use tree_sitter::Tree;

use crate::lint::LintContext;

pub struct Model<'a> {
    pub text: &'a str,
    pub tree: &'a Tree,
    pub context: LintContext<'a>,
}

impl<'a> Model<'a> {
    pub fn new(text: &'a str, tree: &'a Tree, context: LintContext<'a>) -> Self {
        Self { text, tree, context }
    }
}
