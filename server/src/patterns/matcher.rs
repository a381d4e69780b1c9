//! Matching patterns at a node, with tree-sitter's query semantics for the supported part: child
//! patterns match the node's children in order, with gaps unless anchored; a field pattern
//! matches only a child of that field; each way of matching is one match, and a match must pass
//! every predicate.

use std::num::NonZeroU16;

use smallvec::SmallVec;
use tree_sitter::{Node, TreeCursor};

use super::Candidate;
use super::parse::{ChildPattern, NodePattern, Pattern};

/// The patterns of a set of rules, by the kind of node each is rooted at; a rule's place in the
/// set is its slot.
pub struct PatternSet {
    by_kind: Vec<SmallVec<[(usize, &'static Pattern); 2]>>,
    slots: usize,
}

/// The captures bound so far: (capture index, node).
type Bound<'a> = SmallVec<[(u8, Node<'a>); 4]>;

/// A node's children with their fields.
type Children<'a> = SmallVec<[(Node<'a>, Option<NonZeroU16>); 8]>;

/// What matching at one node reuses: a tree cursor, and the children of the nodes read so far
/// (the patterns rooted at a call all read its callee; a cursor's steps cost more than a copy).
#[derive(Default)]
pub struct Scratch<'a> {
    cursor: Option<TreeCursor<'a>>,
    children: Vec<(usize, Children<'a>)>,
}

impl<'a> Scratch<'a> {
    fn children_of(&mut self, node: Node<'a>) -> Children<'a> {
        if let Some((_, children)) = self.children.iter().find(|(id, _)| *id == node.id()) {
            return children.clone();
        }
        let cursor = match &mut self.cursor {
            Some(cursor) => {
                cursor.reset(node);
                cursor
            }
            none => none.insert(node.walk()),
        };
        let mut children = Children::new();
        if cursor.goto_first_child() {
            loop {
                children.push((cursor.node(), cursor.field_id()));
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        self.children.push((node.id(), children.clone()));
        children
    }
}

impl PatternSet {
    /// The set of `rules`, each given by its patterns; slots follow their order.
    pub fn new(rules: impl IntoIterator<Item = &'static [Pattern]>) -> Self {
        let mut by_kind: Vec<SmallVec<[(usize, &'static Pattern); 2]>> = Vec::new();
        let mut slots = 0;
        for (slot, patterns) in rules.into_iter().enumerate() {
            slots = slot + 1;
            for pattern in patterns {
                let kind = usize::from(pattern.root_kind());
                if by_kind.len() <= kind {
                    by_kind.resize_with(kind + 1, SmallVec::new);
                }
                by_kind[kind].push((slot, pattern));
            }
        }
        Self { by_kind, slots }
    }

    /// How many rules the set holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The matches rooted at `node`, appended to `found` with their rule's slot.
    pub fn match_at<'a>(
        &self,
        node: Node<'a>,
        text: &'a str,
        scratch: &mut Scratch<'a>,
        found: &mut Vec<(usize, Candidate<'a>)>,
    ) {
        let Some(patterns) = self.by_kind.get(usize::from(node.kind_id())).filter(|p| !p.is_empty()) else { return };
        scratch.children.clear();
        for &(slot, pattern) in patterns {
            pattern
                .matches(node, text, scratch, &mut |bound| found.extend(pattern.candidate(bound).map(|c| (slot, c))));
        }
    }
}

impl Pattern {
    fn matches<'a>(&self, node: Node<'a>, text: &'a str, scratch: &mut Scratch<'a>, found: &mut dyn FnMut(&Bound<'a>)) {
        let mut bound = Bound::new();
        self.node(&self.root, node, text, &mut bound, scratch, &mut |bound, _| {
            if self.same_text.iter().all(|&(a, b)| same_text(bound, a, b, text)) {
                found(bound);
            }
        });
    }

    fn node<'a>(
        &self,
        pattern: &NodePattern,
        node: Node<'a>,
        text: &'a str,
        bound: &mut Bound<'a>,
        scratch: &mut Scratch<'a>,
        then: &mut dyn FnMut(&mut Bound<'a>, &mut Scratch<'a>),
    ) {
        if node.kind_id() != pattern.kind {
            return;
        }
        let mark = bound.len();
        for &capture in &pattern.captures {
            let node_text = text.as_bytes().get(node.byte_range()).unwrap_or_default();
            if !self.text_checks.iter().all(|(c, check)| *c != capture || check.accepts(node_text)) {
                bound.truncate(mark);
                return;
            }
            bound.push((capture, node));
        }
        if pattern.children.is_empty() && !pattern.anchored_end {
            then(bound, scratch);
        } else {
            let children = scratch.children_of(node);
            self.children(&pattern.children, &children, 0, pattern.anchored_end, text, bound, scratch, then);
        }
        bound.truncate(mark);
    }

    /// Every way `patterns` match `children[from..]` in order, each passed on to `then`.
    #[allow(clippy::too_many_arguments)]
    fn children<'a>(
        &self,
        patterns: &[ChildPattern],
        children: &Children<'a>,
        from: usize,
        anchored_end: bool,
        text: &'a str,
        bound: &mut Bound<'a>,
        scratch: &mut Scratch<'a>,
        then: &mut dyn FnMut(&mut Bound<'a>, &mut Scratch<'a>),
    ) {
        let Some((first, rest)) = patterns.split_first() else {
            if !(anchored_end && children[from..].iter().any(|(child, _)| child.is_named())) {
                then(bound, scratch);
            }
            return;
        };
        for (i, &(child, field)) in children.iter().enumerate().skip(from) {
            // An anchored child is the next named one: anonymous nodes between do not count.
            if first.immediate && !child.is_named() {
                continue;
            }
            if first.field.is_none_or(|wanted| field == Some(wanted)) {
                for alternative in &first.alternatives {
                    self.node(alternative, child, text, bound, scratch, &mut |bound, scratch| {
                        self.children(rest, children, i + 1, anchored_end, text, bound, scratch, then)
                    });
                }
            }
            if first.immediate {
                break;
            }
        }
    }

    /// The candidate a match stands for; `None` for a match that took an alternative without
    /// the `@violation` capture (tree-sitter's cursor reports it; no rule has a use for it).
    fn candidate<'a>(&self, bound: &Bound<'a>) -> Option<Candidate<'a>> {
        let node = bound.iter().find(|(c, _)| *c == self.violation)?.1;
        let captures = bound.iter().map(|&(c, node)| (self.capture_names[usize::from(c)], node)).collect();
        Some(Candidate { node, captures })
    }
}

/// `(#eq? @a @b)`: the nodes of the two captures, in order, have the same texts, and there are
/// as many of each.
fn same_text(bound: &Bound<'_>, a: u8, b: u8, text: &str) -> bool {
    let of = |capture: u8| bound.iter().filter(move |(c, _)| *c == capture).map(|(_, node)| &text[node.byte_range()]);
    of(a).eq(of(b))
}
