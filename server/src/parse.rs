//! The one place that knows how to get a Python syntax tree.

use std::cell::RefCell;

use tree_sitter::{Language, Node, Parser, Point, Tree};

pub fn python() -> Language {
    tree_sitter_python::LANGUAGE.into()
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut parser = Parser::new();
        parser.set_language(&python()).expect("tree-sitter-python matches the tree-sitter ABI");
        parser
    });
}

/// Parse `text`, reusing `old` when it has been edited to match (tree-sitter's incremental
/// reparse: `Tree::edit`, then a parse given the old tree). Parsing Python never fails without a
/// timeout or cancellation flag, neither of which is set here.
pub fn parse(text: &str, old: Option<&Tree>) -> Tree {
    PARSER.with(|parser| parser.borrow_mut().parse(text, old)).expect("parse without timeout or cancellation")
}

/// How many ERROR or MISSING nodes a tree holds: fixes must never raise this number.
pub fn error_count(tree: &Tree) -> usize {
    let mut count = 0;
    visit_nodes(tree, |node| {
        count += usize::from(node.is_error() || node.is_missing());
        node.has_error()
    });
    count
}

/// A node's kind and place: its byte range and its start and end points.
pub type NodePlace = (u16, std::ops::Range<usize>, Point, Point);

/// Every node of `tree` in order, with its place. An incrementally reparsed tree is right when
/// its layout is a fresh parse's; an S-expression leaves out where the nodes are.
pub fn layout(tree: &Tree) -> Vec<NodePlace> {
    let mut nodes = Vec::new();
    visit_nodes(tree, |node| {
        nodes.push((node.kind_id(), node.byte_range(), node.start_position(), node.end_position()));
        true
    });
    nodes
}

/// Visit the nodes of `tree` in order, anonymous ones included, with a cursor (nothing is
/// allocated per node); `visit` says whether to go into the node's children.
pub fn visit_nodes(tree: &Tree, mut visit: impl FnMut(Node<'_>) -> bool) {
    let mut cursor = tree.walk();
    loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}
