//! Finding the candidates of the active rules: one pass of their queries, compiled into one.
//!
//! A query cursor pays for every pattern at every node, wanted or not, so only the queries of the
//! rules that could fire on a file are compiled, into one query for the set, which the process
//! keeps: an editor's buffer and most files of a repository meet the same few sets.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, QueryMatch, Tree};

use crate::parse::python;
use crate::rules::{Candidate, Rule, index_of};

/// Compile one rule's query on its own: the registry test checks each this way, so that an
/// error names the rule.
pub fn compile_query(rule: &Rule) -> Result<Query, tree_sitter::QueryError> {
    Query::new(&python(), rule.query)
}

/// The queries of a set of rules compiled into one, so that a single pass of a query cursor
/// finds the candidates of them all (each pass walks the whole tree). `slot_of_pattern` maps each
/// pattern back to its rule's place in the set.
struct RuleQueries {
    query: Query,
    slot_of_pattern: Vec<usize>,
    violation: u32,
}

/// The compiled query of each set of rules met (as indices into [`crate::rules::RULES`]). Their
/// number is bounded by the distinct sets a process meets; each is compiled once, by the first
/// lint that needs it, while others needing the same set wait for it.
type Compiled = HashMap<Vec<usize>, Arc<OnceLock<&'static RuleQueries>>>;
static COMPILED: LazyLock<Mutex<Compiled>> = LazyLock::new(Mutex::default);

impl RuleQueries {
    fn compile(rules: &[&'static Rule]) -> Self {
        let mut source = String::new();
        let mut starts = Vec::with_capacity(rules.len());
        for rule in rules {
            starts.push(source.len());
            source.push_str(rule.query);
            source.push('\n');
        }
        let query = Query::new(&python(), &source).unwrap_or_else(|e| {
            let rule = rules[starts.partition_point(|&s| s <= e.offset) - 1];
            panic!("query of {} {} does not compile: {e}", rule.code, rule.name)
        });
        let slot_of_pattern = (0..query.pattern_count())
            .map(|pattern| starts.partition_point(|&s| s <= query.start_byte_for_pattern(pattern)) - 1)
            .collect();
        let violation = query.capture_index_for_name("violation").expect("rule queries capture @violation");
        Self { query, slot_of_pattern, violation }
    }

    /// The query of `active`, compiled the first time the set is met.
    fn of(active: &[&'static Rule]) -> &'static Self {
        let key: Vec<usize> = active.iter().map(|rule| index_of(rule)).collect();
        let once = Arc::clone(COMPILED.lock().unwrap_or_else(PoisonError::into_inner).entry(key).or_default());
        once.get_or_init(|| Box::leak(Box::new(Self::compile(active))))
    }

    /// The candidate a match stands for, with its rule's slot; `None` for a match without its
    /// `@violation` capture.
    fn candidate<'a>(&'static self, m: &QueryMatch<'_, 'a>) -> Option<(usize, Candidate<'a>)> {
        let node = m.captures().iter().find(|c| c.index == self.violation)?.node;
        let names = self.query.capture_names();
        let captures = m.captures().iter().map(|c| (names[c.index as usize], c.node)).collect();
        Some((self.slot_of_pattern[m.pattern_index], Candidate { node, captures }))
    }
}

/// The candidates of each rule of `active` (same order), each list in source order (outer nodes
/// before the nodes they hold), so rules reporting "the first" finding can rely on it. Matches in
/// regions the parser could not make sense of are dropped.
pub fn candidates_by_rule<'a>(text: &'a str, tree: &'a Tree, active: &[&'static Rule]) -> Vec<Vec<Candidate<'a>>> {
    let mut by_rule: Vec<Vec<Candidate<'a>>> = active.iter().map(|_| Vec::new()).collect();
    // No rule, no query: a set without rules has no query to compile.
    if active.is_empty() {
        return by_rule;
    }
    let queries = RuleQueries::of(active);
    let root = tree.root_node();
    let has_errors = root.has_error();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&queries.query, root, text.as_bytes());
    while let Some(m) = matches.next() {
        if let Some((slot, candidate)) = queries.candidate(m)
            && !(has_errors && inside_error(candidate.node))
        {
            by_rule[slot].push(candidate);
        }
    }
    for candidates in &mut by_rule {
        // A stable sort, so matches of one node keep their order.
        candidates.sort_by_cached_key(|candidate| (candidate.node.start_byte(), std::cmp::Reverse(candidate.node.end_byte())));
    }
    by_rule
}

fn inside_error(node: Node<'_>) -> bool {
    let mut current = Some(node);
    while let Some(n) = current {
        if n.is_error() {
            return true;
        }
        current = n.parent();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;
    use crate::rules::RULES;

    /// A candidate as plain data: kind and range of the `@violation` and of each capture.
    fn plain(candidates: &[Candidate<'_>]) -> Vec<Vec<(String, u16, std::ops::Range<usize>)>> {
        candidates
            .iter()
            .map(|c| {
                let mut captures: Vec<_> =
                    c.captures.iter().map(|(name, node)| ((*name).to_owned(), node.kind_id(), node.byte_range())).collect();
                captures.insert(0, ("@".to_owned(), c.node.kind_id(), c.node.byte_range()));
                captures
            })
            .collect()
    }

    /// A rule's candidates do not depend on which other rules share its query: on every fixture
    /// and example, each rule alone finds what it finds among all of them, in the same order.
    #[test]
    fn a_rule_finds_the_same_candidates_alone_or_with_every_other_rule() {
        let every: Vec<&'static Rule> = RULES.to_vec();
        let mut found = 0;
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let tree = parse(&text, None);
            let together = candidates_by_rule(&text, &tree, &every);
            for (rule, with_others) in every.iter().zip(&together) {
                let alone = candidates_by_rule(&text, &tree, &[rule]);
                assert_eq!(plain(&alone[0]), plain(with_others), "{} in {}", rule.code, path.display());
                found += with_others.len();
            }
        }
        assert!(found > 500, "only {found} candidates");
    }

    /// No rule, no query to compile (it would capture no `@violation`).
    #[test]
    fn no_rules_have_no_candidates() {
        let text = include_str!("../../tests/fixtures/CUL201.py");
        assert!(candidates_by_rule(text, &parse(text, None), &[]).is_empty());
    }

    /// Matches inside a region the parser could not read are dropped; the rest are kept.
    #[test]
    fn matches_inside_syntax_errors_are_dropped() {
        let text = "import torch\nloss.backward()\nfor x in (:\n    loss.backward() +* )\n";
        let tree = parse(text, None);
        assert!(tree.root_node().has_error());
        let rule = crate::rules::by_code("CUL302").expect("CUL302");
        let found = candidates_by_rule(text, &tree, &[rule]);
        assert_eq!(found[0].len(), 1, "{:?}", plain(&found[0]));
        assert_eq!(found[0][0].node.start_position().row, 1);
    }
}
