//! Finding the candidates of the active rules: one pass of their queries, compiled into one.
//!
//! A query cursor pays for every pattern at every node, wanted or not, so only the queries of the
//! rules that could fire on a file are compiled, into one query for the set, which the process
//! keeps: an editor's buffer and most files of a repository meet the same few sets.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;
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
    // A query cursor's pass costs about twice a plain walk of the tree, a few milliseconds per
    // thousand lines; a large file's pass is split at top-level statements between threads.
    // Each match lies within one statement (a test checks that no pattern is rooted at the
    // module), so each part finds the matches of its own statements.
    let parts = split_at_statements(tree, text.len().div_ceil(SPLIT_ABOVE_BYTES).min(rayon::current_num_threads()));
    let found: Vec<Vec<(usize, Candidate<'a>)>> = parts
        .par_iter()
        .map(|range| {
            let mut found = Vec::new();
            let mut cursor = QueryCursor::new();
            cursor.set_byte_range(range.clone());
            let mut matches = cursor.matches(&queries.query, root, text.as_bytes());
            while let Some(m) = matches.next() {
                if let Some((slot, candidate)) = queries.candidate(m)
                    && range.contains(&candidate.node.start_byte())
                    && !(has_errors && inside_error(candidate.node))
                {
                    found.push((slot, candidate));
                }
            }
            found
        })
        .collect();
    for (slot, candidate) in found.into_iter().flatten() {
        by_rule[slot].push(candidate);
    }
    for candidates in &mut by_rule {
        // A stable sort, so matches of one node keep their order.
        candidates.sort_by_cached_key(|candidate| {
            (candidate.node.start_byte(), std::cmp::Reverse(candidate.node.end_byte()))
        });
    }
    by_rule
}

/// A file this large or larger has its query pass split between threads, one part per this many
/// bytes (at most one per thread): below it the pass takes about a millisecond.
const SPLIT_ABOVE_BYTES: usize = 32 * 1024;

/// The byte ranges of `parts` runs of consecutive top-level statements, of about equal size,
/// which together cover the whole text.
fn split_at_statements(tree: &Tree, parts: usize) -> Vec<std::ops::Range<usize>> {
    let root = tree.root_node();
    let end = root.end_byte().max(1);
    if parts <= 1 {
        return vec![0..usize::MAX];
    }
    let mut cursor = root.walk();
    let mut bounds = vec![0];
    for statement in root.children(&mut cursor) {
        if statement.start_byte() * parts >= end * bounds.len() && statement.start_byte() > *bounds.last().unwrap_or(&0)
        {
            bounds.push(statement.start_byte());
        }
    }
    bounds.push(usize::MAX);
    bounds.windows(2).map(|pair| pair[0]..pair[1]).collect()
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

    fn compile_all() -> Query {
        RuleQueries::compile(RULES).query
    }

    /// A large file's pass, split between threads, finds what one pass over the whole tree finds.
    #[test]
    fn a_pass_split_at_statements_finds_what_one_pass_finds() {
        let text = crate::test_support::MODULE_LEVEL.repeat(120);
        assert!(text.len() > 2 * SPLIT_ABOVE_BYTES);
        let tree = parse(&text, None);
        let every: Vec<&'static Rule> = RULES.to_vec();
        let queries = RuleQueries::of(&every);
        let mut cursor = QueryCursor::new();
        let mut whole = Vec::new();
        let mut matches = cursor.matches(&queries.query, tree.root_node(), text.as_bytes());
        while let Some(m) = matches.next() {
            whole.extend(queries.candidate(m));
        }
        let split = candidates_by_rule(&text, &tree, &every);
        for (slot, found) in split.iter().enumerate() {
            let mut one_pass: Vec<Candidate<'_>> = whole
                .iter()
                .filter(|(s, _)| *s == slot)
                .map(|(_, c)| Candidate { node: c.node, captures: c.captures.clone() })
                .collect();
            one_pass.sort_by_cached_key(|c| (c.node.start_byte(), std::cmp::Reverse(c.node.end_byte())));
            assert_eq!(plain(found), plain(&one_pass), "{}", every[slot].code);
        }
        assert_eq!(split_at_statements(&tree, 2).len(), 2);
        assert!(split.iter().map(Vec::len).sum::<usize>() > 1000);
    }

    /// A candidate as plain data: kind and range of the `@violation` and of each capture.
    fn plain(candidates: &[Candidate<'_>]) -> Vec<Vec<(String, u16, std::ops::Range<usize>)>> {
        candidates
            .iter()
            .map(|c| {
                let mut captures: Vec<_> = c
                    .captures
                    .iter()
                    .map(|(name, node)| ((*name).to_owned(), node.kind_id(), node.byte_range()))
                    .collect();
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

    /// The pass is split between threads at top-level statements, which is exact only if no
    /// match can reach outside its top-level statement: no pattern may be rooted at the module,
    /// or at a wildcard that could stand for it.
    #[test]
    fn no_pattern_is_rooted_at_the_module() {
        let query = compile_all();
        let source: String = RULES.iter().map(|rule| format!("{}\n", rule.query)).collect();
        for pattern in 0..query.pattern_count() {
            let start = query.start_byte_for_pattern(pattern);
            for root in root_kinds(&source[start..]) {
                assert!(root != "module" && root != "_", "pattern at byte {start} is rooted at `{root}`");
            }
        }
    }

    /// The node kinds a pattern's root can be: its first node, or each alternative's.
    fn root_kinds(pattern: &str) -> Vec<&str> {
        let word = |s: &str| -> usize { s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len()) };
        let pattern = pattern.trim_start();
        if let Some(alternatives) = pattern.strip_prefix('[') {
            let mut kinds = Vec::new();
            let mut depth = 0;
            for (i, c) in alternatives.char_indices() {
                match c {
                    '(' if depth == 0 => {
                        let rest = &alternatives[i + 1..];
                        kinds.push(&rest[..word(rest)]);
                        depth += 1;
                    }
                    '(' | '[' => depth += 1,
                    ')' | ']' if depth == 0 => break,
                    ')' | ']' => depth -= 1,
                    _ => {}
                }
            }
            return kinds;
        }
        let rest = pattern.strip_prefix('(').unwrap_or(pattern);
        vec![&rest[..word(rest)]]
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
