//! The rules' candidate patterns (`queries/python/*.scm`), matched node by node during the
//! model's one walk over the tree.
//!
//! The patterns are written in tree-sitter's query language and keep its meaning; a test checks
//! that they find what tree-sitter's own query cursor finds, on every fixture and example. They
//! are not run through that cursor because of what it costs: compiling a query analyses the
//! whole grammar (about a millisecond even for `(call) @v`, tens for the rules' set), once per
//! set of rules a file admits; and a cursor's pass walks the tree a second time, at about twice
//! a plain walk's cost. The rules use a small part of the language, which [`parse`] reads and
//! rejects with a clear error beyond: node patterns with fields and captures, alternations,
//! anonymous nodes, the `.` anchor, and the `#eq?`, `#any-of?` and `#match?` predicates.

mod matcher;
mod parse;

use smallvec::SmallVec;
use tree_sitter::Node;

pub use matcher::{PatternSet, Scratch};
pub use parse::{Pattern, PatternError, parse_patterns};

/// A node a rule's pattern matched: the `@violation` capture plus its helper captures.
pub struct Candidate<'t> {
    pub node: Node<'t>,
    /// Held in place: nearly every match has two captures, and a large file's lint finds
    /// thousands of matches.
    pub captures: SmallVec<[(&'t str, Node<'t>); 2]>,
}

impl<'t> Candidate<'t> {
    /// The node bound to `@name` in this match, if any.
    pub fn capture(&self, name: &str) -> Option<Node<'t>> {
        self.captures.iter().find(|(n, _)| *n == name).map(|(_, node)| *node)
    }
}
