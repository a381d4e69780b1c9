//! Finding the candidates of the active rules: one pass of their queries, compiled into one.
//!
//! A query cursor pays for every pattern at every node, wanted or not, so only the queries of the
//! rules that could fire on a file are compiled, into one query for the set, which the process
//! keeps: an editor's buffer and most files of a repository meet the same few sets.
//!
//! An editor lints the same buffer at every keystroke, where the pass over a large file costs
//! tens of milliseconds although the edit changed one top-level statement. A buffer keeps a
//! [`MatchMemo`]: what the pass found in each top-level statement, as plain data (capture
//! offsets and kinds) keyed by the statement's text. That is exact by construction: a match lies
//! within one top-level statement (no pattern is rooted at the module, a test checks every one),
//! a query's predicates read only captured text, and a statement without a syntax error parses
//! the same wherever its text stands. Nothing else is memoised, and nothing depends on a fact of
//! the file, so there is nothing to invalidate.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use smallvec::SmallVec;

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
    candidates_remembered(text, tree, active, None)
}

/// [`candidates_by_rule`], taking the matches of each top-level statement whose text `memo` holds
/// from it and querying only the others; `memo` then holds those of this tree's statements.
pub fn candidates_remembered<'a>(
    text: &'a str,
    tree: &'a Tree,
    active: &[&'static Rule],
    memo: Option<&MatchMemo>,
) -> Vec<Vec<Candidate<'a>>> {
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
    if let Some(memo) = memo {
        let found = memo.recall_or_query(text, tree, active, queries);
        for (slot, candidate) in found {
            by_rule[slot].push(candidate);
        }
        sort_in_source_order(&mut by_rule);
        return by_rule;
    }
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
    sort_in_source_order(&mut by_rule);
    by_rule
}

/// Each rule's candidates in source order, outer nodes first; a stable sort, so matches of one
/// node keep their order.
fn sort_in_source_order(by_rule: &mut [Vec<Candidate<'_>>]) {
    for candidates in by_rule {
        candidates.sort_by_cached_key(|candidate| {
            (candidate.node.start_byte(), std::cmp::Reverse(candidate.node.end_byte()))
        });
    }
}

/// What the query pass found in the top-level statements of a buffer's last lint, keyed by each
/// statement's text (see the module's doc), for the set of rules it was found for.
#[derive(Default)]
pub struct MatchMemo {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// The rules the matches were found for, as indices into [`crate::rules::RULES`].
    rules: Vec<usize>,
    by_text: HashMap<Box<str>, Arc<[PlainMatch]>>,
}

/// A match as plain data: its rule's slot in the set and its captures, `@violation` first, each
/// as (capture name, start and end relative to the statement, node kind).
struct PlainMatch {
    slot: usize,
    captures: Vec<(&'static str, usize, usize, u16)>,
}

impl PlainMatch {
    /// The match placed in `statement`, a statement of the text it was found in; `None` if a
    /// capture is not there (which the module's doc says cannot happen).
    fn place<'a>(&self, statement: Node<'a>) -> Option<(usize, Candidate<'a>)> {
        let start = statement.start_byte();
        let mut nodes = self
            .captures
            .iter()
            .map(|&(name, from, to, kind)| Some((name, node_at(statement, start + from, start + to, kind)?)));
        let (_, node) = nodes.next()??;
        let captures = nodes.collect::<Option<SmallVec<[(&'a str, Node<'a>); 2]>>>()?;
        Some((self.slot, Candidate { node, captures }))
    }
}

impl MatchMemo {
    /// The matches of every top-level statement: recalled for a statement without a syntax error
    /// whose text was seen at the last lint, queried otherwise.
    fn recall_or_query<'a>(
        &self,
        text: &'a str,
        tree: &'a Tree,
        active: &[&'static Rule],
        queries: &'static RuleQueries,
    ) -> Vec<(usize, Candidate<'a>)> {
        let rules: Vec<usize> = active.iter().map(|rule| index_of(rule)).collect();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.rules != rules {
            *kept = Kept { rules, by_text: HashMap::new() };
        }
        let mut next: HashMap<Box<str>, Arc<[PlainMatch]>> = HashMap::with_capacity(kept.by_text.len());
        let mut found = Vec::new();
        let root = tree.root_node();
        let mut cursor = root.walk();
        let mut query_cursor = QueryCursor::new();
        for statement in root.children(&mut cursor) {
            let statement_text = &text[statement.byte_range()];
            if statement.has_error() {
                query_within(queries, &mut query_cursor, statement, text, &mut found);
                continue;
            }
            let remembered = kept.by_text.get(statement_text).cloned().and_then(|plain| {
                let placed = plain.iter().map(|m| m.place(statement)).collect::<Option<Vec<_>>>()?;
                Some((plain, placed))
            });
            let plain = match remembered {
                Some((plain, placed)) => {
                    found.extend(placed);
                    plain
                }
                None => {
                    let from = found.len();
                    query_within(queries, &mut query_cursor, statement, text, &mut found);
                    remember(queries, &found[from..], statement)
                }
            };
            next.insert(statement_text.into(), plain);
        }
        kept.by_text = next;
        found
    }
}

/// The matches of `queries` within `statement`, appended to `found`.
fn query_within<'a>(
    queries: &'static RuleQueries,
    cursor: &mut QueryCursor,
    statement: Node<'a>,
    text: &'a str,
    found: &mut Vec<(usize, Candidate<'a>)>,
) {
    let has_errors = statement.has_error();
    let mut matches = cursor.matches(&queries.query, statement, text.as_bytes());
    while let Some(m) = matches.next() {
        if let Some((slot, candidate)) = queries.candidate(m)
            && !(has_errors && inside_error(candidate.node))
        {
            found.push((slot, candidate));
        }
    }
}

/// `found`, the matches of `statement`, as plain data.
fn remember(queries: &'static RuleQueries, found: &[(usize, Candidate<'_>)], statement: Node<'_>) -> Arc<[PlainMatch]> {
    let start = statement.start_byte();
    let names = queries.query.capture_names();
    let plain = |(name, node): (&str, Node<'_>)| {
        let name = names.iter().copied().find(|known| *known == name).expect("a capture of the query");
        (name, node.start_byte() - start, node.end_byte() - start, node.kind_id())
    };
    found
        .iter()
        .map(|(slot, candidate)| {
            let violation = ("violation", candidate.node);
            let captures = std::iter::once(violation).chain(candidate.captures.iter().copied()).map(plain).collect();
            PlainMatch { slot: *slot, captures }
        })
        .collect()
}

/// The node of kind `kind` that spans exactly `start..end` inside `top`, found by a descent.
fn node_at<'a>(top: Node<'a>, start: usize, end: usize, kind: u16) -> Option<Node<'a>> {
    let mut node = top;
    loop {
        if node.start_byte() == start && node.end_byte() == end && node.kind_id() == kind {
            return Some(node);
        }
        let mut cursor = node.walk();
        node = node.children(&mut cursor).find(|child| child.start_byte() <= start && end <= child.end_byte())?;
    }
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
        return std::iter::once(0..usize::MAX).collect();
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

    /// Statements whose text the memo holds are recalled, the others queried: on every fixture
    /// and example, after an edit, the memo's candidates are the pass's.
    #[test]
    fn remembered_matches_are_the_passes() {
        let every: Vec<&'static Rule> = RULES.to_vec();
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let memo = MatchMemo::default();
            let tree = parse(&text, None);
            let cold = candidates_remembered(&text, &tree, &every, Some(&memo));
            // A new statement at the top moves every other one.
            let edited = format!("import os\n{text}");
            let tree_after = parse(&edited, None);
            let warm = candidates_remembered(&edited, &tree_after, &every, Some(&memo));
            let whole = |text: &str, tree: &Tree| {
                candidates_by_rule(text, tree, &every).iter().map(|c| plain(c)).collect::<Vec<_>>()
            };
            assert_eq!(cold.iter().map(|c| plain(c)).collect::<Vec<_>>(), whole(&text, &tree), "{}", path.display());
            assert_eq!(
                warm.iter().map(|c| plain(c)).collect::<Vec<_>>(),
                whole(&edited, &tree_after),
                "{}",
                path.display()
            );
        }
    }

    /// The test above would pass with a memo that is never read; this one fails then: a
    /// remembered statement's matches are poisoned, and the next lint of the same text gets the
    /// poison.
    #[test]
    fn a_statement_seen_before_is_recalled_not_queried() {
        let text = include_str!("../../examples/train_resnet.py");
        let every: Vec<&'static Rule> = RULES.to_vec();
        let memo = MatchMemo::default();
        let tree = parse(text, None);
        let first: usize = candidates_remembered(text, &tree, &every, Some(&memo)).iter().map(Vec::len).sum();
        assert!(first > 10);
        for plain in memo.kept.lock().unwrap().by_text.values_mut() {
            *plain = Arc::from([]);
        }
        let again: usize = candidates_remembered(text, &tree, &every, Some(&memo)).iter().map(Vec::len).sum();
        assert_eq!(again, 0, "the statements were queried again");
        // Another set of rules does not take matches found for this one.
        let fewer = &every[..3];
        let other: usize = candidates_remembered(text, &tree, fewer, Some(&memo)).iter().map(Vec::len).sum();
        assert_eq!(other, candidates_by_rule(text, &tree, fewer).iter().map(Vec::len).sum::<usize>());
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
