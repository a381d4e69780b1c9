//! Nodes kept in source order, with their start bytes alongside.
//!
//! The model answers "which call is this", "which loops lie inside this function" and "which
//! statement holds this node" by binary searches over such lists, hundreds of thousands of times
//! per lint of a large file. Asking the C library for a node's start on every probe cost more than
//! the searches themselves; the starts are read once, when a node joins the list.

use std::ops::Deref;

use tree_sitter::Node;

#[derive(Default)]
pub struct InSourceOrder<'a> {
    nodes: Vec<Node<'a>>,
    starts: Vec<usize>,
}

impl<'a> InSourceOrder<'a> {
    /// Room for `additional` more nodes.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
        self.starts.reserve(additional);
    }

    /// Add `node`, which starts at or after every node already in the list.
    pub fn push(&mut self, node: Node<'a>) {
        let start = node.start_byte();
        debug_assert!(self.starts.last().is_none_or(|last| *last <= start), "nodes out of source order");
        self.nodes.push(node);
        self.starts.push(start);
    }

    /// Add `later`'s nodes, which all start at or after every node already in the list.
    pub fn append(&mut self, mut later: Self) {
        debug_assert!(
            self.starts.last().zip(later.starts.first()).is_none_or(|(last, first)| last <= first),
            "lists out of source order"
        );
        self.nodes.append(&mut later.nodes);
        self.starts.append(&mut later.starts);
    }

    /// Where `node` is in the list: among the nodes that start where it does (a call and the call
    /// that is its callee share a start), the one that is it.
    pub fn position(&self, node: Node<'_>) -> Option<usize> {
        let start = node.start_byte();
        let first = self.starts.partition_point(|s| *s < start);
        (first..self.nodes.len()).take_while(|i| self.starts[*i] == start).find(|i| self.nodes[*i].id() == node.id())
    }

    /// The indices of the nodes inside `node` (the node itself included), for lists whose nodes
    /// never overlap without nesting: a binary search to the first, then a scan while they start
    /// inside it.
    pub fn indices_within(&self, node: Node<'_>) -> impl Iterator<Item = usize> + '_ {
        let (start, end) = (node.start_byte(), node.end_byte());
        let first = self.starts.partition_point(|s| *s < start);
        (first..self.nodes.len())
            .take_while(move |i| self.starts[*i] < end)
            .filter(move |i| self.nodes[*i].end_byte() <= end)
    }

    /// The nodes that start in `start..end`.
    pub fn starting_in(&self, start: usize, end: usize) -> &[Node<'a>] {
        let from = self.starts.partition_point(|s| *s < start);
        let to = self.starts.partition_point(|s| *s < end).max(from);
        &self.nodes[from..to]
    }

    /// The last node that starts at or before `byte`.
    pub fn last_starting_by(&self, byte: usize) -> Option<Node<'a>> {
        self.index_of_last_starting_by(byte).map(|i| self.nodes[i])
    }

    /// Where [`InSourceOrder::last_starting_by`]'s node is in the list.
    pub fn index_of_last_starting_by(&self, byte: usize) -> Option<usize> {
        self.starts.partition_point(|s| *s <= byte).checked_sub(1)
    }
}

impl<'a> Deref for InSourceOrder<'a> {
    type Target = [Node<'a>];

    fn deref(&self) -> &[Node<'a>] {
        &self.nodes
    }
}

impl<'a> FromIterator<Node<'a>> for InSourceOrder<'a> {
    fn from_iter<I: IntoIterator<Item = Node<'a>>>(nodes: I) -> Self {
        let mut list = Self::default();
        nodes.into_iter().for_each(|node| list.push(node));
        list
    }
}

impl<'s, 'a> IntoIterator for &'s InSourceOrder<'a> {
    type Item = &'s Node<'a>;
    type IntoIter = std::slice::Iter<'s, Node<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.nodes.iter()
    }
}
