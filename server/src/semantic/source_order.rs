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
        let start = start_of(node);
        debug_assert!(self.starts.last().is_none_or(|last| *last <= start), "nodes out of source order");
        self.nodes.push(node);
        self.starts.push(start);
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

    /// The nodes and their starts, to move in place: they must stay in source order and in step.
    pub(super) fn parts_mut(&mut self) -> (&mut Vec<Node<'a>>, &mut Vec<usize>) {
        (&mut self.nodes, &mut self.starts)
    }

    /// Where each of `fresh` (in source order, none starting where a node of the list does) goes
    /// in the list: the number of the list's nodes before it.
    pub fn insertion_points(&self, fresh: &[Node<'_>]) -> Vec<usize> {
        fresh.iter().map(|node| self.starts.partition_point(|s| *s < start_of(*node))).collect()
    }

    /// Insert `fresh` at the `points` that [`InSourceOrder::insertion_points`] gave.
    pub fn insert_at(&mut self, points: &[usize], fresh: &[Node<'a>]) {
        let starts: Vec<usize> = fresh.iter().map(|node| start_of(*node)).collect();
        insert_column(&mut self.nodes, points, fresh);
        insert_column(&mut self.starts, points, &starts);
    }
}

/// Insert `fresh[i]` before `column[points[i]]`, for every `i` (`points` ascending): a list's
/// nodes, or a column of values kept beside them.
pub fn insert_column<T: Copy>(column: &mut Vec<T>, points: &[usize], fresh: &[T]) {
    match (points.first(), points.last()) {
        (None, _) | (_, None) => {}
        // The usual edit: one place, where the new statement's nodes go in one piece.
        (Some(first), Some(last)) if first == last => {
            column.splice(*first..*first, fresh.iter().copied());
        }
        _ => {
            let mut merged = Vec::with_capacity(column.len() + fresh.len());
            let mut from = 0;
            for (point, value) in points.iter().zip(fresh) {
                merged.extend_from_slice(&column[from..*point]);
                merged.push(*value);
                from = *point;
            }
            merged.extend_from_slice(&column[from..]);
            *column = merged;
        }
    }
}

/// A node's start byte, read from the node itself: the C library's accessor is a call across
/// the language boundary that the compiler cannot inline, and the lists move thousands of nodes
/// on every keystroke.
#[inline]
pub fn start_of(node: Node<'_>) -> usize {
    node.into_raw().context[0] as usize
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
