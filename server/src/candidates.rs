//! Finding the candidates of the active rules: one pass of their queries, compiled into one.
//!
//! The CLI lints each file once and runs the pass over the whole tree. The language server lints
//! the same buffer again on every keystroke, where a pass over a large file costs tens of
//! milliseconds although the edit touched one top-level statement. It keeps a
//! [`CandidateCache`] per buffer and runs the queries only on top-level statements that the
//! reparse did not share with the last lint's tree; the matches of the others are carried over
//! (see [`crate::tree_reuse`]). A statement the reparse built anew with the same text is not
//! queried again either: its kept matches are found in it by their places, kinds and lengths (a
//! query would cost several times as much). That is exact because a match lies within one
//! top-level statement and depends on nothing outside it: no rule's pattern is rooted at the
//! module (a test checks every pattern), and predicates read only captured text.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use smallvec::SmallVec;
use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, QueryMatch, Tree};

use crate::parse::python;
use crate::rule_counts::RuleCounts;
use crate::rules::{Candidate, RULES, Rule, index_of};
use crate::tree_reuse::{KeptNode, Placer, StatementMemory};

/// Compile one rule's query on its own: the registry test checks each this way, so that an
/// error names the rule.
pub fn compile_query(rule: &Rule) -> Result<Query, tree_sitter::QueryError> {
    Query::new(&python(), rule.query)
}

/// The queries of a set of rules compiled into one, so that a single pass of a query cursor
/// finds the candidates of them all (each pass walks the whole tree, and 22 of them cost more
/// than parsing). Patterns keep their rule's order; `rule_of_pattern` maps each back to its
/// rule, as an index into [`RULES`].
struct RuleQueries {
    query: Query,
    rule_of_pattern: Vec<usize>,
    violation: u32,
}

/// How often a set of rules is linted with the query of every rule before it gets a query of
/// its own. A cursor pays for every pattern at every node, wanted or not, so a set met again and
/// again (an editor's open file, a common mix in a repository) is worth compiling; but compiling
/// one costs about as much as linting a few thousand lines with it (eight rules: 205 M
/// instructions, a 10,000-line lint 730 M), so sets met once or twice are not.
const SPECIALISE_AFTER: usize = 3;

/// How often each set of rules (as indices into [`RULES`]) has been met, and its own query once
/// compiled.
type Specialised = HashMap<Vec<usize>, (usize, Arc<OnceLock<&'static RuleQueries>>)>;
static SPECIALISED: LazyLock<Mutex<Specialised>> = LazyLock::new(Mutex::default);

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
        let rule_of_pattern = (0..query.pattern_count())
            .map(|pattern| {
                let rule = rules[starts.partition_point(|&s| s <= query.start_byte_for_pattern(pattern)) - 1];
                index_of(rule)
            })
            .collect();
        let violation = query.capture_index_for_name("violation").expect("rule queries capture @violation");
        Self { query, rule_of_pattern, violation }
    }

    /// The query to find the candidates of `active` with: its own once the set has been met
    /// [`SPECIALISE_AFTER`] times and its compilation, which starts then on a thread of its own,
    /// has finished; the query of every rule until then. An editor linting on every keystroke
    /// would otherwise wait on one keystroke for a compilation that costs more than the lint.
    /// Compiled queries live as long as the process; their number is bounded by the distinct sets
    /// met often.
    fn of(active: &[&'static Rule]) -> &'static Self {
        static EVERY_RULE: LazyLock<RuleQueries> = LazyLock::new(|| RuleQueries::compile(RULES));
        let key: Vec<usize> = active.iter().map(|rule| index_of(rule)).collect();
        if key.len() == RULES.len() {
            return &EVERY_RULE;
        }
        let once = {
            let mut by_set = SPECIALISED.lock().unwrap_or_else(PoisonError::into_inner);
            let (seen, once) = by_set.entry(key).or_default();
            *seen += 1;
            if *seen <= SPECIALISE_AFTER {
                return &EVERY_RULE;
            }
            if *seen == SPECIALISE_AFTER + 1 {
                let (once, rules) = (Arc::clone(once), active.to_vec());
                std::thread::spawn(move || {
                    once.get_or_init(|| Box::leak(Box::new(Self::compile(&rules))));
                });
            }
            Arc::clone(once)
        };
        once.get().copied().unwrap_or(&EVERY_RULE)
    }

    /// The candidate a match stands for, as the rule's index into [`RULES`] and the candidate;
    /// `None` for a match without its `@violation` capture.
    fn candidate<'a>(&'static self, m: &QueryMatch<'_, 'a>) -> Option<(usize, Candidate<'a>)> {
        let node = m.captures().iter().find(|c| c.index == self.violation)?.node;
        let names = self.query.capture_names();
        let captures = m.captures().iter().map(|c| (names[c.index as usize], c.node)).collect();
        Some((self.rule_of_pattern[m.pattern_index], Candidate { node, captures, statement: None }))
    }
}

/// The matches found in the top-level statements of a buffer's last lint, for the next lint of
/// the same buffer to reuse.
#[derive(Default)]
pub struct CandidateCache {
    statements: StatementMemory<CachedMatches>,
    /// In how many groups (statements, mostly) each rule (by index into [`RULES`]) had
    /// candidates at the last lint: the next one, of nearly the same text, reserves as many
    /// rather than growing its lists step by step.
    counts: RuleCounts,
}

/// The matches of one top-level statement, for the rules they were found for (as indices into
/// [`RULES`]).
struct CachedMatches {
    /// Shared by every statement one lint kept, so that most statements of the next lint compare
    /// their rules by address.
    rules: Arc<[usize]>,
    candidates: Vec<CachedCandidate>,
    /// How many of `candidates` each rule (by index into [`RULES`]) has, in the order the rules
    /// first appear: counted once when kept, rather than by every lint that recalls them.
    counts: SmallVec<[(usize, usize); 4]>,
}

struct CachedCandidate {
    rule: usize,
    /// Which of `captures` is the `@violation`.
    violation: usize,
    captures: Vec<(&'static str, KeptNode)>,
}

impl CandidateCache {
    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        self.statements.clear();
        self.counts.clear();
    }

    /// Free what the last lint let go of ([`StatementMemory::sweep`]).
    pub fn sweep(&self) {
        self.statements.sweep();
    }
}

/// One rule's candidates, statement by statement in source order.
///
/// A statement this lint queried has its candidates placed in the tree. A statement whose
/// matches the last lint kept has them placed only when asked for ([`RuleCandidates::for_each`]):
/// on a keystroke nearly every rule keeps its findings in nearly every statement
/// ([`crate::check_cache`]) and never asks, and placing the thousands of candidates of a large
/// file cost as much as the checks that did run.
pub struct RuleCandidates<'a> {
    groups: Vec<CandidateGroup<'a>>,
    len: usize,
}

/// A rule's candidates in one top-level statement, or in the whole tree.
pub enum CandidateGroup<'a> {
    /// A pass over the whole tree found them, in source order.
    WholeTree(Vec<Candidate<'a>>),
    /// Those of the top-level statement at `index`.
    Statement { index: usize, matches: StatementMatches<'a> },
}

/// A rule's candidates in one top-level statement.
pub struct StatementMatches<'a>(Matches<'a>);

enum Matches<'a> {
    /// This lint queried the statement.
    Placed(Vec<Candidate<'a>>),
    /// The matches of `rule` (an index into [`RULES`]) among those the last lint kept of the
    /// statement, and how to place them in this tree.
    Kept { kept: Arc<CachedMatches>, placer: Placer<'a>, rule: usize },
}

impl<'a> RuleCandidates<'a> {
    /// How many candidates the rule has.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn groups(&self) -> &[CandidateGroup<'a>] {
        &self.groups
    }

    /// Every candidate, in source order.
    pub fn for_each(&self, mut f: impl FnMut(&Candidate<'a>)) {
        for group in &self.groups {
            match group {
                CandidateGroup::WholeTree(candidates) => candidates.iter().for_each(&mut f),
                CandidateGroup::Statement { index, matches } => matches.for_each(*index, &mut f),
            }
        }
    }

    fn push(&mut self, group: CandidateGroup<'a>, count: usize) {
        self.groups.push(group);
        self.len += count;
    }
}

impl<'a> StatementMatches<'a> {
    /// The candidates, in source order, placed in the tree first where they are kept; `index` is
    /// the statement's.
    pub fn for_each(&self, index: usize, mut f: impl FnMut(&Candidate<'a>)) {
        match &self.0 {
            Matches::Placed(candidates) => candidates.iter().for_each(f),
            Matches::Kept { kept, placer, rule } => {
                for candidate in kept.candidates.iter().filter(|candidate| candidate.rule == *rule) {
                    let captures: SmallVec<[(&'a str, Node<'a>); 2]> =
                        candidate.captures.iter().map(|(name, kept)| (*name, placer.place(kept))).collect();
                    let node = captures[candidate.violation].1;
                    f(&Candidate { node, captures, statement: Some(index) });
                }
            }
        }
    }
}

/// The candidates of each of `active` (in that order), each in source order so that rules
/// reporting "the first" finding can rely on it. Matches in regions the parser could not make
/// sense of are dropped. With a cache, statements seen before are not queried again; statements
/// with syntax errors always are, and a cache in use by another lint of the same buffer is not
/// waited for: that lint gets the whole-tree pass.
pub fn candidates_by_rule<'a>(
    text: &'a str,
    tree: &'a Tree,
    statements: &[Node<'a>],
    active: &[&'static Rule],
    cache: Option<&CandidateCache>,
) -> Vec<RuleCandidates<'a>> {
    // No rule, no query: a set without rules has no query of its own to compile, and the
    // statements kept for the buffer stay those of the rules it had.
    if active.is_empty() {
        return Vec::new();
    }
    let queries = RuleQueries::of(active);
    let slot_of_rule: Vec<Option<usize>> =
        RULES.iter().map(|rule| active.iter().position(|a| std::ptr::eq(*a, *rule))).collect();
    let last_counts = cache.map(|cache| cache.counts.last());
    let mut by_rule: Vec<RuleCandidates<'a>> = active
        .iter()
        .map(|rule| RuleCandidates {
            groups: Vec::with_capacity(last_counts.as_ref().map_or(0, |counts| counts.of(rule))),
            len: 0,
        })
        .collect();
    let root = tree.root_node();
    let is_active = |rule: usize| slot_of_rule[rule].is_some();
    match cache.and_then(|cache| cache.statements.open(tree, text)) {
        Some(mut memory) => {
            let mut rules: Arc<[usize]> = active.iter().map(|rule| index_of(rule)).collect();
            for (index, &statement) in statements.iter().enumerate() {
                let recalled = memory.recall(statement).filter(|(cached, _)| same_rules(&mut rules, &cached.rules));
                let found_again = match recalled {
                    Some((kept, Some(placer))) => {
                        // A rule's kept matches of the statement make one group; their captures
                        // are read only if placed.
                        for &(rule, count) in &kept.counts {
                            if let Some(slot) = slot_of_rule[rule] {
                                let matches = StatementMatches(Matches::Kept {
                                    kept: Arc::clone(&kept),
                                    placer: placer.clone(),
                                    rule,
                                });
                                by_rule[slot].push(CandidateGroup::Statement { index, matches }, count);
                            }
                        }
                        continue;
                    }
                    // Built anew with the same text: nothing to place, or its matches found in it
                    // by their places and kept again, so that the lints after this one place them
                    // (some rules check every candidate on every lint).
                    Some((kept, None)) if kept.candidates.is_empty() => continue,
                    Some((kept, None)) => found_in(statement, &kept),
                    None => None,
                };
                let mut found = found_again.unwrap_or_else(|| query_within(queries, statement, text, is_active));
                // In source order within the statement, as they are kept: statements do not
                // overlap, so the candidates come out in source order without a sort of all of
                // them, which would read the end of every node (a cache miss each, in a large file).
                sort_in_source_order(&mut found, |(_, candidate)| candidate.node);
                found.iter_mut().for_each(|(_, candidate)| candidate.statement = Some(index));
                if !statement.has_error() {
                    // A statement with syntax errors is not kept: what the parser makes of broken
                    // text depends on what surrounds it.
                    memory.keep(statement, remember(queries, statement, &found, Arc::clone(&rules)));
                }
                // Each rule's candidates of the statement, as one group.
                let mut placed: SmallVec<[(usize, Vec<Candidate<'a>>); 4]> = SmallVec::new();
                for (rule, candidate) in found {
                    let Some(slot) = slot_of_rule[rule] else { continue };
                    match placed.iter_mut().find(|(placed_slot, _)| *placed_slot == slot) {
                        Some((_, list)) => list.push(candidate),
                        None => placed.push((slot, vec![candidate])),
                    }
                }
                for (slot, candidates) in placed {
                    let count = candidates.len();
                    let matches = StatementMatches(Matches::Placed(candidates));
                    by_rule[slot].push(CandidateGroup::Statement { index, matches }, count);
                }
            }
        }
        None => {
            let mut placed: Vec<Vec<Candidate<'a>>> = active.iter().map(|_| Vec::new()).collect();
            for (rule, candidate) in query_within(queries, root, text, is_active) {
                if let Some(slot) = slot_of_rule[rule] {
                    placed[slot].push(candidate);
                }
            }
            for (mut candidates, list) in placed.into_iter().zip(&mut by_rule) {
                if !candidates.is_empty() {
                    sort_in_source_order(&mut candidates, |candidate| candidate.node);
                    let count = candidates.len();
                    list.push(CandidateGroup::WholeTree(candidates), count);
                }
            }
        }
    }
    if let Some(cache) = cache {
        cache.counts.record(active.iter().copied().zip(by_rule.iter().map(|list| list.groups.len())));
    }
    by_rule
}

/// Whether a statement's matches were found for `rules`, the rules of this lint. Equal rules
/// are taken as they were kept, so that the statements that follow compare by address.
fn same_rules(rules: &mut Arc<[usize]>, kept: &Arc<[usize]>) -> bool {
    if Arc::ptr_eq(rules, kept) {
        return true;
    }
    let same = **rules == **kept;
    if same {
        *rules = Arc::clone(kept);
    }
    same
}

/// Outer nodes before the nodes they hold; a stable sort, so matches of one node keep their order.
fn sort_in_source_order<T>(items: &mut [T], node: impl Fn(&T) -> Node<'_>) {
    items.sort_by_cached_key(|item| {
        let node = node(item);
        (node.start_byte(), std::cmp::Reverse(node.end_byte()))
    });
}

type Found<'a> = Vec<(usize, Candidate<'a>)>;

/// The candidates of the `is_active` rules in the subtree of `node`, leaving out matches inside
/// regions the parser could not make sense of.
fn query_within<'a>(
    queries: &'static RuleQueries,
    node: Node<'a>,
    text: &'a str,
    is_active: impl Fn(usize) -> bool,
) -> Found<'a> {
    let has_errors = node.has_error();
    let mut found = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&queries.query, node, text.as_bytes());
    while let Some(m) = matches.next() {
        if !is_active(queries.rule_of_pattern[m.pattern_index]) {
            continue;
        }
        found.extend(queries.candidate(m).filter(|(_, candidate)| !(has_errors && inside_error(candidate.node))));
    }
    found
}

/// The matches `kept` of a statement of the same kind and text as `statement`, which the parser
/// built anew, found in it by their places ([`KeptNode::find_in`]); `None` if one is not there.
fn found_in<'a>(statement: Node<'a>, kept: &CachedMatches) -> Option<Found<'a>> {
    kept.candidates
        .iter()
        .map(|candidate| {
            let captures = candidate
                .captures
                .iter()
                .map(|(name, kept)| Some((*name, kept.find_in(statement)?)))
                .collect::<Option<SmallVec<[(&str, Node<'a>); 2]>>>()?;
            let node = captures[candidate.violation].1;
            Some((candidate.rule, Candidate { node, captures, statement: None }))
        })
        .collect()
}

/// The candidates `found` in a top-level statement, as the cache keeps them.
fn remember(
    queries: &'static RuleQueries,
    statement: Node<'_>,
    found: &Found<'_>,
    rules: Arc<[usize]>,
) -> CachedMatches {
    let names = queries.query.capture_names();
    let candidates = found
        .iter()
        .map(|(rule, candidate)| {
            let captures: Vec<(&'static str, KeptNode)> = candidate
                .captures
                .iter()
                .map(|(name, node)| {
                    let name = names.iter().find(|known| *known == name).copied().expect("a capture of the query");
                    (name, KeptNode::of(statement, *node))
                })
                .collect();
            let violation = candidate
                .captures
                .iter()
                .position(|(_, node)| *node == candidate.node)
                .expect("the @violation capture");
            CachedCandidate { rule: *rule, violation, captures }
        })
        .collect();
    let mut counts: SmallVec<[(usize, usize); 4]> = SmallVec::new();
    for (rule, _) in found {
        match counts.iter_mut().find(|(counted, _)| counted == rule) {
            Some((_, count)) => *count += 1,
            None => counts.push((*rule, 1)),
        }
    }
    CachedMatches { rules, candidates, counts }
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
    use crate::lint::{LintContext, LintSettings, RuleSet, lint};
    use crate::parse::parse;
    use crate::semantic::ast::top_level_statements;
    use crate::text::TextRange;

    /// A buffer whose text no rule admits asks for the candidates of no rule, again and again
    /// as it is edited: that set is never compiled (its query would capture no `@violation`, and
    /// the compilation panicked on its thread), and the statements kept for the buffer stay.
    #[test]
    fn no_rules_have_no_candidates_and_no_query_of_their_own() {
        let text = include_str!("../../tests/fixtures/CUL201.py");
        let tree = parse(text, None);
        let cache = CandidateCache::default();
        let every: Vec<&'static Rule> = RULES.to_vec();
        let before = candidates_by_rule(text, &tree, &top_level_statements(&tree), &every, Some(&cache))
            .iter()
            .map(RuleCandidates::len)
            .sum::<usize>();
        for _ in 0..SPECIALISE_AFTER + 2 {
            assert!(candidates_by_rule(text, &tree, &top_level_statements(&tree), &[], Some(&cache)).is_empty());
        }
        assert!(!SPECIALISED.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&Vec::new()));
        assert_eq!(
            candidates_by_rule(text, &tree, &top_level_statements(&tree), &every, Some(&cache))
                .iter()
                .map(RuleCandidates::len)
                .sum::<usize>(),
            before
        );
    }

    /// A set of rules is linted first with the query of every rule, then with its own: the
    /// candidates, and so the findings, must not depend on which.
    #[test]
    fn a_set_of_rules_finds_the_same_with_its_own_query() {
        let text = include_str!("../../tests/fixtures/CUL201.py");
        let tree = parse(text, None);
        let settings =
            LintSettings { rules: RuleSet::from_selectors(&["CUL201", "CUL402"]), ..LintSettings::default() };
        let active: Vec<&'static Rule> = settings.rules.iter().collect();
        let findings = || -> Vec<(&'static str, TextRange)> {
            lint(text, &tree, LintContext::default(), &settings).into_iter().map(|d| (d.code, d.range)).collect()
        };
        let mut runs: Vec<Vec<(&'static str, TextRange)>> = (0..=SPECIALISE_AFTER).map(|_| findings()).collect();
        assert!(runs[0].iter().any(|(code, _)| *code == "CUL201"), "{:?}", runs[0]);
        // The set's own query compiles on another thread; the lints go on with every rule's.
        let key: Vec<usize> = active.iter().map(|rule| index_of(rule)).collect();
        let own = SPECIALISED.lock().unwrap()[&key].1.clone();
        let started = std::time::Instant::now();
        while own.get().is_none() {
            assert!(started.elapsed().as_secs() < 60, "the set's query never compiled");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::ptr::eq(RuleQueries::of(&active), *own.get().unwrap()), "the set's own query is not used");
        runs.push(findings());
        assert!(runs.iter().all(|run| *run == runs[0]), "{runs:?}");
    }

    /// The reuse of a statement's matches is exact only if no match can reach outside its
    /// top-level statement: no pattern may be rooted at the module, or at a wildcard that
    /// could stand for it.
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

    fn compile_all() -> Query {
        RuleQueries::compile(RULES).query
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

    /// A candidate as plain data: rule slot, kind and range of each capture, in order.
    type Plain = Vec<Vec<Vec<(String, u16, std::ops::Range<usize>)>>>;

    fn plain(candidates: &[RuleCandidates<'_>]) -> Plain {
        candidates
            .iter()
            .map(|list| {
                let mut plain = Vec::new();
                list.for_each(|c| {
                    let mut captures: Vec<_> = c
                        .captures
                        .iter()
                        .map(|(name, node)| ((*name).to_owned(), node.kind_id(), node.byte_range()))
                        .collect();
                    captures.insert(0, ("@".to_owned(), c.node.kind_id(), c.node.byte_range()));
                    plain.push(captures);
                });
                assert_eq!(plain.len(), list.len(), "the count of candidates");
                plain
            })
            .collect()
    }

    /// Every fixture and example, queried whole and then statement by statement, cold and warm:
    /// the same candidates in the same order.
    #[test]
    fn statements_queried_apart_or_reused_find_what_the_whole_tree_finds() {
        let every_rule: Vec<&'static Rule> = RULES.to_vec();
        for path in crate::test_support::python_files() {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let tree = parse(&text, None);
            let whole = plain(&candidates_by_rule(&text, &tree, &top_level_statements(&tree), &every_rule, None));
            let cache = CandidateCache::default();
            // Then a tree parsed afresh, whose statements are all built anew: those without
            // syntax errors are recalled by their text, and their matches found in them.
            let again = parse(&text, None);
            for (pass, tree) in [("cold", &tree), ("warm", &tree), ("built anew", &again)] {
                let apart =
                    plain(&candidates_by_rule(&text, tree, &top_level_statements(tree), &every_rule, Some(&cache)));
                assert_eq!(apart, whole, "{} ({pass} cache)", path.display());
            }
        }
    }

    /// A statement whose findings a rule keeps has that rule's kept candidates left unplaced:
    /// here every kept capture of the rules that keep their findings per statement is poisoned
    /// with a node of another statement, which placing would refuse (a panic), and a keystroke
    /// that touches no statement must lint as before. (The other rules check every candidate on
    /// every lint, so theirs are placed and left alone here.)
    #[test]
    fn kept_candidates_of_statements_whose_findings_hold_are_not_placed() {
        use crate::test_support::{buffer_linted_once, lint_buffer_after};
        // Candidates of rules that keep their findings in two statements at least, so that some
        // are poisoned with a node of another statement; both far from the end, which the edits
        // below touch.
        let example = include_str!("../../examples/train_resnet.py");
        let more = "def train_more(model, loader, optimizer):\n    for batch in loader:\n        loss = model(batch).sum()\n        loss.backward()\n        optimizer.step()\n        optimizer.zero_grad()\n        torch.cuda.empty_cache()\n\n\n";
        let text = example.replacen("def main():", &format!("{more}def main():"), 1);
        assert_ne!(text, example);
        let (mut document, cache, before) = buffer_linted_once(&text);
        // A node of one statement, to be placed in every other: the placer asserts it is the
        // statement's own.
        let foreign = std::sync::Mutex::new(None);
        let poisoned_statements = std::sync::atomic::AtomicUsize::new(0);
        cache.candidates().statements.replace_all(|kept| {
            let mut foreign = foreign.lock().unwrap();
            let keeps_findings = |candidate: &CachedCandidate| RULES[candidate.rule].cached_per_statement;
            if kept.candidates.iter().any(keeps_findings) {
                poisoned_statements.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if foreign.is_none() {
                *foreign =
                    kept.candidates.iter().filter(|c| keeps_findings(c)).find_map(|c| c.captures.first()).map(|c| c.1);
            }
            let node = *foreign;
            CachedMatches {
                rules: Arc::clone(&kept.rules),
                candidates: kept
                    .candidates
                    .iter()
                    .map(|c| CachedCandidate {
                        rule: c.rule,
                        violation: c.violation,
                        captures: c
                            .captures
                            .iter()
                            .map(|(name, kept)| (*name, node.filter(|_| keeps_findings(c)).unwrap_or(*kept)))
                            .collect(),
                    })
                    .collect(),
                counts: kept.counts.clone(),
            }
        });
        assert!(
            poisoned_statements.into_inner() >= 2,
            "rules that keep their findings have candidates in two statements"
        );
        let end = TextRange::empty(document.text().len());
        let after = lint_buffer_after(&mut document, &cache, end, "# two\n");
        let plain = |diagnostics: &[crate::diagnostic::Diagnostic]| {
            diagnostics.iter().map(|d| (d.code, d.range)).collect::<Vec<_>>()
        };
        assert_eq!(plain(&after), plain(&before));
    }

    /// The exactness tests above would pass with a cache that is never read; this one fails then.
    #[test]
    fn statements_seen_before_are_taken_from_the_cache() {
        let (text, tree, every_rule, cache, found) = example_queried_into_a_cache();
        assert!(found > 0);
        let rules: std::sync::Arc<[usize]> = every_rule.iter().map(|rule| index_of(rule)).collect();
        cache.statements.replace_all(|_| CachedMatches {
            rules: std::sync::Arc::clone(&rules),
            candidates: Vec::new(),
            counts: SmallVec::new(),
        });
        let reused = candidates_by_rule(text, &tree, &top_level_statements(&tree), &every_rule, Some(&cache));
        assert!(reused.iter().all(RuleCandidates::is_empty), "statements were queried again");
    }

    /// A statement the parser built anew with the same text takes its matches from the cache,
    /// found in it by their places: here each statement kept only its first match, and a fresh
    /// parse of the same text finds only those.
    #[test]
    fn statements_built_anew_are_taken_from_the_cache_by_their_text() {
        let (text, _, every_rule, cache, all) = example_queried_into_a_cache();
        let first_only = std::sync::atomic::AtomicUsize::new(0);
        cache.statements.replace_all(|kept| {
            let candidates: Vec<CachedCandidate> = kept
                .candidates
                .iter()
                .take(1)
                .map(|c| CachedCandidate { rule: c.rule, violation: c.violation, captures: c.captures.clone() })
                .collect();
            first_only.fetch_add(candidates.len(), std::sync::atomic::Ordering::Relaxed);
            let counts = candidates.iter().map(|c| (c.rule, 1)).collect();
            CachedMatches { rules: Arc::clone(&kept.rules), candidates, counts }
        });
        let first_only = first_only.into_inner();
        assert!(
            0 < first_only && first_only < all,
            "{first_only} of {all}: the example has statements of several matches"
        );
        let again = parse(text, None);
        let found = candidates_by_rule(text, &again, &top_level_statements(&again), &every_rule, Some(&cache));
        assert_eq!(count(&found), first_only, "statements built anew were queried again");
    }

    fn count(found: &[RuleCandidates<'_>]) -> usize {
        found.iter().map(RuleCandidates::len).sum()
    }

    /// An example script, its tree and every rule, queried once through a cache: the cache, and
    /// how many candidates it found.
    fn example_queried_into_a_cache() -> (&'static str, Tree, Vec<&'static Rule>, CandidateCache, usize) {
        let text = include_str!("../../examples/train_resnet.py");
        let tree = parse(text, None);
        let every_rule: Vec<&'static Rule> = RULES.to_vec();
        let cache = CandidateCache::default();
        let found = count(&candidates_by_rule(text, &tree, &top_level_statements(&tree), &every_rule, Some(&cache)));
        (text, tree, every_rule, cache, found)
    }
}
