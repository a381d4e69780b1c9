//! The one lint engine that the CLI and the language server both call.

use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tree_sitter::{Node, Tree};

pub use crate::candidates::compile_query;
use crate::candidates::{CandidateCache, CandidateGroup, RuleCandidates, candidates_by_rule};
use crate::check_cache::{CheckCache, CheckSession, KeptChecks, KeptRule, StatementFindings};
use crate::diagnostic::{Diagnostic, Related, Severity};
use crate::document::SharedText;
use crate::fix::{Applicability, Fix, apply_fixes};
use crate::hardware::HardwareFacts;
use crate::parse::parse;
use crate::prefilter::{self, PresentTokens};
use crate::project::ProjectIndex;
use crate::rule_counts::RuleCounts;
use crate::rules::{Candidate, RULES, Rule};
use crate::semantic::reads::{self, Reads};
use crate::semantic::{Model, WalkCache, ast};
use crate::suppression::{Suppressions, selector_matches};
use crate::text::TextRange;

/// A set of rules, as indices into [`RULES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSet {
    enabled: Vec<bool>,
}

impl RuleSet {
    pub fn all() -> Self {
        Self { enabled: vec![true; RULES.len()] }
    }

    pub fn none() -> Self {
        Self { enabled: vec![false; RULES.len()] }
    }

    /// Rules named by any of `selectors` (codes, prefixes, names or `ALL`).
    pub fn from_selectors<S: AsRef<str>>(selectors: &[S]) -> Self {
        let mut set = Self::none();
        set.extend(selectors);
        set
    }

    pub fn extend<S: AsRef<str>>(&mut self, selectors: &[S]) {
        for (i, rule) in RULES.iter().enumerate() {
            if selectors.iter().any(|s| selector_matches(s.as_ref(), rule.code, rule.name)) {
                self.enabled[i] = true;
            }
        }
    }

    pub fn remove<S: AsRef<str>>(&mut self, selectors: &[S]) {
        for (i, rule) in RULES.iter().enumerate() {
            if selectors.iter().any(|s| selector_matches(s.as_ref(), rule.code, rule.name)) {
                self.enabled[i] = false;
            }
        }
    }

    pub fn contains(&self, rule: &Rule) -> bool {
        self.enabled[crate::rules::index_of(rule)]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static Rule> + '_ {
        RULES.iter().zip(&self.enabled).filter(|(_, on)| **on).map(|(rule, _)| *rule)
    }
}

/// Everything a lint run needs besides the text: which rules, how severe, and what is known
/// about the project and the hardware.
#[derive(Clone, Debug, PartialEq)]
pub struct LintSettings {
    pub rules: RuleSet,
    /// Severity overrides keyed by rule code.
    pub severities: HashMap<String, Severity>,
    pub show_syntax_errors: bool,
    pub hardware: Option<HardwareFacts>,
}

impl Default for LintSettings {
    fn default() -> Self {
        Self { rules: RuleSet::all(), severities: HashMap::new(), show_syntax_errors: false, hardware: None }
    }
}

/// Where the text came from: its path, and the project it belongs to for cross-file summaries.
#[derive(Clone, Copy, Default)]
pub struct LintContext<'a> {
    pub path: Option<&'a Path>,
    pub project: Option<&'a ProjectIndex>,
    /// What the configuration says the file is (`code-kind`), overriding culint's judgement.
    pub code_kind: Option<crate::semantic::CodeKind>,
}

/// The rules of `settings` that could fire on `text`, judged from its bytes alone (see
/// [`crate::prefilter`]); rules that need hardware facts are left out when there are none.
pub fn rules_that_could_fire(text: &str, settings: &LintSettings) -> Vec<&'static Rule> {
    let tokens = PresentTokens::of(text);
    let possible: Vec<&'static Rule> = possible_rules(settings).filter(|rule| tokens.has_tokens_for(rule)).collect();
    if possible.is_empty() {
        return possible;
    }
    // Most files lack the tokens on their raw bytes; the others are read again without their
    // comments and docstrings, where library code names what it never runs, and only then do
    // the rules' scans run.
    let code = prefilter::code_view(text);
    let code_tokens;
    let tokens = match code {
        Cow::Owned(_) => {
            code_tokens = PresentTokens::of(&code);
            &code_tokens
        }
        Cow::Borrowed(_) => &tokens,
    };
    possible.into_iter().filter(|rule| tokens.admits(rule, &code)).collect()
}

/// The selected rules, less those that need hardware facts when there are none.
fn possible_rules(settings: &LintSettings) -> impl Iterator<Item = &'static Rule> + '_ {
    settings.rules.iter().filter(|rule| !rule.needs_hardware || settings.hardware.is_some())
}

/// Whether linting `text` could produce anything. Files that fail this test are never parsed.
pub fn may_have_findings(text: &str, settings: &LintSettings) -> bool {
    settings.show_syntax_errors || !rules_that_could_fire(text, settings).is_empty()
}

/// What a rule's check function works with.
pub struct Checker<'m, 'a> {
    pub model: &'m Model<'a>,
    pub hardware: Option<&'m HardwareFacts>,
    rule: &'static Rule,
    diagnostics: Vec<Diagnostic>,
    /// Per-file facts a rule computes once and reuses across its candidates (see [`Checker::memo`]),
    /// with what computing each read.
    memo: foldhash::HashMap<usize, (Box<dyn std::any::Any>, Reads)>,
}

impl<'m, 'a> Checker<'m, 'a> {
    pub fn text(&self) -> &'a str {
        self.model.text
    }

    pub fn rule(&self) -> &'static Rule {
        self.rule
    }

    /// Report a finding of the current rule on `range`; returns it so a fix or related
    /// information can be attached.
    pub fn report(&mut self, range: TextRange, message: impl Into<Arc<str>>) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic {
            code: self.rule.code,
            name: self.rule.name,
            range,
            message: message.into(),
            severity: self.rule.severity,
            fix: None,
            knowledge: self.rule.knowledge,
            related: Vec::new(),
            deprecated: self.rule.deprecated,
        });
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Compute a value once per file and rule, keyed by `key` (a node id, or 0 for a file-wide
    /// fact): candidates of one rule often ask the same whole-file question.
    /// A value used again is read again: what computing it read is recorded anew.
    pub fn memo<T: Clone + 'static>(&mut self, key: usize, compute: impl FnOnce() -> T) -> T {
        if let Some((value, reads)) = self.memo.get(&key)
            && let Some(value) = value.downcast_ref::<T>()
        {
            reads::replay(reads);
            return value.clone();
        }
        let (value, reads) = reads::recording_through(compute);
        self.memo.insert(key, (Box::new(value.clone()), reads));
        value
    }

    /// Whether the current rule has reported anything in this file yet: a read of the whole file.
    pub fn has_reported(&self) -> bool {
        reads::read_whole_file();
        !self.diagnostics.is_empty()
    }

    pub fn report_node(&mut self, node: Node<'_>, message: impl Into<Arc<str>>) -> &mut Diagnostic {
        self.report(TextRange::of(node), message)
    }
}

impl Diagnostic {
    pub fn with_fix(&mut self, fix: Fix) -> &mut Self {
        self.fix = Some(fix);
        self
    }

    pub fn with_related(&mut self, range: TextRange, message: impl Into<Arc<str>>) -> &mut Self {
        self.related.push(Related { range, message: message.into() });
        self
    }
}

/// Lint a parsed text. Diagnostics come back sorted by position, with suppressions applied.
pub fn lint(text: &str, tree: &Tree, context: LintContext<'_>, settings: &LintSettings) -> Vec<Diagnostic> {
    lint_rules(text, tree, context, settings, || rules_that_could_fire(text, settings), None, |_| ()).0
}

/// What the last lint of a buffer found in each top-level statement: query matches and what the
/// model's walk noted. An edit touches one statement; the next lint reuses the rest.
#[derive(Default)]
pub struct StatementCache {
    candidates: CandidateCache,
    walks: WalkCache,
    checks: CheckCache,
    admissions: prefilter::Admissions,
    /// Whether the last lint had rules to run: then the next one chooses its rules while the
    /// model is built (see [`lint_rules`]).
    had_rules: AtomicBool,
    /// How many findings each rule had at the last lint, by its index in [`RULES`]: the next
    /// one makes room for as many at once.
    found: RuleCounts,
}

impl StatementCache {
    /// The kept checks (tests poison them to see that they are used).
    #[cfg(test)]
    pub(crate) fn checks(&self) -> &CheckCache {
        &self.checks
    }

    /// The kept candidates (tests poison them to see that they are not placed).
    #[cfg(test)]
    pub(crate) fn candidates(&self) -> &CandidateCache {
        &self.candidates
    }

    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        self.candidates.clear();
        self.walks.clear();
        self.checks.clear();
        self.admissions.clear();
    }

    /// Judge which rules could fire on `text` before a lint of it asks, as an editor can while
    /// the text is reparsed (see [`prefilter::Admissions::judge_ahead`]).
    pub fn judge_ahead(&self, text: &SharedText) {
        self.admissions.judge_ahead(text);
    }

    /// Free what the last lint let go of: the tree before it and what was kept of the statements
    /// it changed. Freeing them touches memory all over the last tree, so an editor's wait is
    /// shorter when they go after the diagnostics are out; a lint that finds them still here
    /// frees them first.
    pub fn sweep(&self) {
        self.candidates.sweep();
        self.checks.sweep();
    }
}

/// [`lint`] for a buffer that is linted again and again as it is edited: top-level statements
/// that the reparse shared with the tree of the last lint through `cache` are neither queried nor
/// walked again (see [`crate::tree_reuse`]). The diagnostics are the same as [`lint`]'s.
///
/// The rules are chosen as [`rules_that_could_fire`] chooses them, but on the raw bytes, comments
/// and docstrings included, and from what the last lint chose ([`prefilter::Admissions`]): a
/// looser answer that costs less. An editor lints the same buffer on every keystroke and has
/// parsed it already, and on a large file reading it again without its prose costs more than the
/// checks of the rules that would turn away. `text` is the buffer's own shared text: the choice
/// keeps it, not a copy of a third of a megabyte, to compare the next lint's text with.
pub fn lint_again(
    text: &SharedText,
    tree: &Tree,
    context: LintContext<'_>,
    settings: &LintSettings,
    cache: &StatementCache,
) -> Vec<Diagnostic> {
    lint_again_then(text, tree, context, settings, cache, |_| ()).0
}

/// [`lint_again`], with what `then` makes of the diagnostics. It is made on the thread beside
/// ([`crate::beside`]) while this one puts away what the next lint will reuse: an editor frames
/// its publish meanwhile, rather than after.
pub fn lint_again_then<T: Send>(
    text: &SharedText,
    tree: &Tree,
    context: LintContext<'_>,
    settings: &LintSettings,
    cache: &StatementCache,
    then: impl FnOnce(&[Diagnostic]) -> T + Send,
) -> (Vec<Diagnostic>, T) {
    let choose = || cache.admissions.admit(text, possible_rules(settings));
    lint_rules(text.as_str(), tree, context, settings, choose, Some(cache), then)
}

/// [`lint`] with the rules that `choose` picks ([`rules_that_could_fire`] or the like), and what
/// `then` makes of the diagnostics (see [`lint_again_then`]).
fn lint_rules<'a, T: Send>(
    text: &'a str,
    tree: &'a Tree,
    context: LintContext<'a>,
    settings: &LintSettings,
    choose: impl FnOnce() -> Vec<&'static Rule> + Send,
    cache: Option<&StatementCache>,
    then: impl FnOnce(&[Diagnostic]) -> T + Send,
) -> (Vec<Diagnostic>, T) {
    let mut diagnostics = Vec::new();
    if settings.show_syntax_errors {
        diagnostics.extend(syntax_errors(tree));
    }
    // The model and the rules' query matches: two independent walks over the module's statements
    // (listed once, and only when some rule is to run); on a large file each takes milliseconds,
    // and an editor waits for both.
    let build_model = |statements: &[Node<'a>]| {
        let model = Model::of_statements(text, tree, context, cache.map(|c| &c.walks), statements);
        if let Some(cache) = cache {
            // The kept checks compare what the whole file decides before any check runs (see
            // [`crate::check_cache`]); decided here, it overlaps with the rules' queries.
            cache.checks.prepare(&model, tree);
        }
        model
    };
    let query = |active: &[&'static Rule], statements: &[Node<'a>]| {
        candidates_by_rule(text, tree, statements, active, cache.map(|c| &c.candidates))
    };
    let recall = |statements: &[Node<'a>]| cache.and_then(|c| c.checks.recall(text, tree, statements));
    let checked = if cache.is_some_and(|c| c.had_rules.load(Ordering::Relaxed)) {
        // A buffer that had rules to run at its last lint most likely has them now: the rules are
        // chosen beside the model's build rather than before it, which takes the prefilter's scans
        // of the whole text off the path an editor waits on.
        //
        // Of an editor's lints the second half goes to the thread beside ([`crate::beside`]): the
        // pool's other thread, idle since the last keystroke, takes up a half offered to it late.
        // The kept checks are recalled by whichever half is done first.
        let statements = ast::top_level_statements(tree);
        let (model, (active, candidates), recalled) = crate::beside::join_then(
            || build_model(&statements),
            || {
                let active = choose();
                let candidates = query(&active, &statements);
                (active, candidates)
            },
            || recall(&statements),
        );
        Some((model, active, candidates, recalled))
    } else {
        let active = choose();
        (!active.is_empty()).then(|| {
            let statements = ast::top_level_statements(tree);
            let (model, candidates) = rayon::join(|| build_model(&statements), || query(&active, &statements));
            (model, active, candidates, recall(&statements))
        })
    };
    let checked = match checked {
        Some((_, active, _, recalled)) if active.is_empty() => {
            if let Some(recalled) = recalled {
                recalled.give_back();
            }
            None
        }
        checked => checked,
    };
    if let Some(cache) = cache {
        cache.had_rules.store(checked.is_some(), Ordering::Relaxed);
    }
    let mut to_keep = None;
    if let Some((model, active, candidates, recalled)) = checked {
        let session = recalled.map(|recalled| recalled.open(&model, context, settings));
        let kept_checks = session.as_ref().map(CheckSession::kept_checks);
        let found_before = cache.map(|c| c.found.last());
        let found_last_time = |rule: &Rule| found_before.as_ref().map_or(0, |counts| counts.of(rule));
        let check = |rule: &'static Rule, candidates: &RuleCandidates<'a>| {
            let mut checker = Checker {
                model: &model,
                hardware: settings.hardware.as_ref(),
                rule,
                diagnostics: Vec::new(),
                memo: foldhash::HashMap::default(),
            };
            let kept = match kept_checks {
                Some(session) => check_statements(&mut checker, candidates, session, found_last_time(rule)),
                None => {
                    candidates.for_each(|candidate| (rule.check)(&mut checker, candidate));
                    Vec::new()
                }
            };
            let mut found = checker.diagnostics;
            if let Some(severity) = settings.severities.get(rule.code) {
                found.iter_mut().for_each(|d| d.severity = *severity);
            }
            (found, kept)
        };
        // Rules check independently of each other, so they share the cores: on a large file an
        // editor waits for the slowest half rather than for all of them one after another. An
        // editor's lint shares them with the thread beside, as it did the candidates; the files
        // of `culint check` share the pool.
        let rules: Vec<(&'static Rule, RuleCandidates<'a>)> = active.iter().copied().zip(candidates).collect();
        let by_rule: Vec<(Vec<Diagnostic>, Vec<KeptFindings>)> = if cache.is_some() {
            crate::beside::map(&rules, |(_, candidates)| candidates.len(), |(rule, candidates)| check(rule, candidates))
        } else {
            rules.par_iter().map(|(rule, candidates)| check(rule, candidates)).collect()
        };
        if let Some(cache) = cache {
            cache.found.record(active.iter().copied().zip(by_rule.iter().map(|(findings, _)| findings.len())));
        }
        let mut kept_by_statement: Vec<StatementFindings> = Vec::new();
        for (found, kept) in by_rule {
            diagnostics.extend(found);
            for (statement, rule, findings) in kept {
                if kept_by_statement.len() <= statement {
                    kept_by_statement.resize_with(statement + 1, StatementFindings::new);
                }
                kept_by_statement[statement].push((rule, findings));
            }
        }
        to_keep = cache.map(|cache| (cache, session, model, kept_by_statement));
    }
    let finish = move || {
        if !diagnostics.is_empty() {
            let suppressions = Suppressions::new(text, tree);
            diagnostics.retain(|d| !suppressions.is_suppressed(d, text));
        }
        diagnostics.sort_by(|a, b| (a.range.start, &a.code, a.range.end).cmp(&(b.range.start, &b.code, b.range.end)));
        diagnostics.dedup_by(|a, b| a.code == b.code && a.range == b.range);
        if !fixes_are_safe_on(text, tree) {
            diagnostics.iter_mut().for_each(|d| d.fix = None);
        }
        let made = then(&diagnostics);
        (diagnostics, made)
    };
    match to_keep {
        // The diagnostics are finished beside while this thread puts away what the next lint
        // reuses (which holds the cache's locks, so it stays here): they wait for none of it.
        Some((cache, session, model, kept_by_statement)) => {
            let keep = move || {
                if let Some(session) = session {
                    session.finish(&model, kept_by_statement);
                }
                cache.walks.keep(model);
            };
            crate::beside::join(keep, finish).1
        }
        None => finish(),
    }
}

/// Whether fixes may be offered on `text`, parsed as `tree`. Findings are reported either way.
///
/// Not where the text has a syntax error: the tree around it is the parser's recovery, a guess
/// at where each statement ends, so a fix may be built on statements the code does not have (an
/// unclosed call swallows the lines after it). Ruff withholds its fixes the same way
/// (astral-sh/ruff#12134). Not where the text holds a NUL either: the parser takes it for the
/// end of the input in some states, so the text around it is not parsed reliably enough to edit
/// (`culint check` skips such files as binary).
pub fn fixes_are_safe_on(text: &str, tree: &Tree) -> bool {
    !tree.root_node().has_error() && memchr::memchr(0, text.as_bytes()).is_none()
}

/// Findings of one rule in one top-level statement, to keep for the next lint: (top-level index,
/// rule, findings).
type KeptFindings = (usize, &'static Rule, KeptRule);

/// Run a rule's checks statement by statement, using what the last lint of the buffer found in a
/// statement when it still holds (see [`crate::check_cache`]); returns what to keep. The
/// candidates of a statement whose findings are kept are never placed.
fn check_statements<'a>(
    checker: &mut Checker<'_, 'a>,
    candidates: &RuleCandidates<'a>,
    session: &KeptChecks,
    found_last_time: usize,
) -> Vec<KeptFindings> {
    let model = checker.model;
    let rule = checker.rule;
    let mut kept = Vec::new();
    // A rule finds about as much in a buffer as it did at the last keystroke: room for that from
    // the start spares copying the findings over as their list grows.
    checker.diagnostics.reserve(found_last_time);
    let mut check = |checker: &mut Checker<'_, 'a>, index: usize, run: &dyn Fn(&mut Checker<'_, 'a>)| {
        let statement = model.top_level()[index];
        if let Some(findings) = session.kept(model, rule, index, statement, &mut checker.diagnostics) {
            kept.push((index, rule, findings));
            return;
        }
        let before = checker.diagnostics.len();
        let ((), reads) = reads::recording_checks_of(statement.start_byte(), || run(checker));
        if let Some(findings) = session.keepable(model, rule, statement, &checker.diagnostics[before..], reads) {
            kept.push((index, rule, findings));
        }
    };
    for group in candidates.groups() {
        match group {
            CandidateGroup::Statement { index, matches } => {
                check(checker, *index, &|checker| matches.for_each(*index, |c| (rule.check)(checker, c)));
            }
            CandidateGroup::WholeTree(candidates) => {
                // In source order: a stable sort by statement keeps each statement's together, and
                // gathers any that do not.
                let mut by_statement: Vec<(Option<usize>, &Candidate<'a>)> =
                    candidates.iter().map(|c| (model.top_level_index(c.node), c)).collect();
                by_statement.sort_by_key(|(statement, _)| *statement);
                for run in by_statement.chunk_by(|a, b| a.0 == b.0) {
                    let check_run =
                        |checker: &mut Checker<'_, 'a>| run.iter().for_each(|(_, c)| (rule.check)(checker, c));
                    match run[0].0 {
                        Some(index) => check(checker, index, &check_run),
                        None => check_run(checker),
                    }
                }
            }
        }
    }
    kept
}

/// Lint raw text: skip cheaply when no rule can fire, parse otherwise.
pub fn lint_text(text: &str, context: LintContext<'_>, settings: &LintSettings) -> Vec<Diagnostic> {
    let active = rules_that_could_fire(text, settings);
    if active.is_empty() && !settings.show_syntax_errors {
        return Vec::new();
    }
    lint_rules(text, &parse(text, None), context, settings, || active, None, |_| ()).0
}

/// Pseudo-diagnostics for the regions tree-sitter could not parse (`--show-syntax-errors`).
pub fn syntax_errors(tree: &Tree) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            let message = if node.is_missing() {
                format!("SyntaxError: expected `{}`", node.kind())
            } else {
                "SyntaxError: invalid syntax".to_owned()
            };
            out.push(Diagnostic {
                code: "syntax-error",
                name: "syntax-error",
                range: TextRange::of(node),
                message: message.into(),
                severity: Severity::Error,
                fix: None,
                knowledge: None,
                related: Vec::new(),
                deprecated: false,
            });
            continue;
        }
        if node.has_error() {
            stack.extend(node.children(&mut cursor).collect::<Vec<_>>().into_iter().rev());
        }
    }
    out
}

/// The outcome of fixing a text until no more fixes apply.
#[derive(Debug)]
pub struct FixOutcome {
    pub text: String,
    /// Fixes applied across all passes.
    pub fixed: usize,
    /// What is still reported on the final text.
    pub remaining: Vec<Diagnostic>,
    /// A pass would have made the text unparsable; the text stops before it.
    pub refused_unparsable: bool,
    /// Where the text given to fix has its first syntax error: then nothing was fixed (see
    /// [`fixes_are_safe_on`]).
    pub syntax_error: Option<TextRange>,
}

/// The most passes a fix run makes: fixes that keep creating new findings are a bug, and this
/// bounds the damage.
const MAX_FIX_PASSES: usize = 10;

/// Apply fixes at or above `threshold`, re-linting after each pass, until nothing changes. A text
/// that does not parse is left as it is; a pass whose output would not parse is discarded.
pub fn fix_text(text: &str, context: LintContext<'_>, settings: &LintSettings, threshold: Applicability) -> FixOutcome {
    let mut unsettled: Vec<&'static str> = Vec::new();
    loop {
        let (outcome, still_fixing) = fix_passes(text, context, settings, threshold, &unsettled);
        if still_fixing.is_empty() {
            return outcome;
        }
        // These rules were still changing the text after the last pass, so their fixes never
        // settle here (a move that makes room for another move): start over without them.
        unsettled.extend(still_fixing);
    }
}

/// Fix passes over `text` without the fixes of the `unsettled` rules. Returns the outcome and,
/// when the passes ran out with fixes still applying, the rules whose fixes the last pass took.
fn fix_passes(
    text: &str,
    context: LintContext<'_>,
    settings: &LintSettings,
    threshold: Applicability,
    unsettled: &[&'static str],
) -> (FixOutcome, Vec<&'static str>) {
    let mut current = text.to_owned();
    let tree = parse(&current, None);
    let mut diagnostics = lint(&current, &tree, context, settings);
    let mut fixed = 0;
    let mut refused_unparsable = false;
    // Fixes that left their own finding in place, offered again: applying them would never end.
    let mut ineffective: Vec<(&'static str, Fix)> = Vec::new();
    let mut passes = 0;
    let mut still_fixing = Vec::new();
    // A refused fix does not count as a pass: each refusal shrinks the set of fixes on offer.
    while passes < MAX_FIX_PASSES {
        let fixable: Vec<(&Diagnostic, &Fix)> = diagnostics
            .iter()
            .filter(|d| !unsettled.contains(&d.code))
            .filter_map(|d| d.fix.as_ref().map(|fix| (d, fix)))
            .filter(|(d, fix)| !ineffective.iter().any(|(code, known)| *code == d.code && known.same_change(fix)))
            .collect();
        let applied = apply_fixes(&current, fixable.iter().map(|(_, fix)| *fix), threshold);
        if applied.fixes == 0 || applied.text == current {
            still_fixing.clear();
            break;
        }
        let new_tree = parse(&applied.text, None);
        if new_tree.root_node().has_error() {
            refused_unparsable = true;
            still_fixing.clear();
            break;
        }
        let after = lint(&applied.text, &new_tree, context, settings);
        let repeated: Vec<(&'static str, Fix)> = applied
            .applied
            .iter()
            .map(|&i| fixable[i])
            .filter(|(d, fix)| {
                let at = applied.map_offset(d.range.start);
                after.iter().any(|n| {
                    n.code == d.code && Some(n.range.start) == at && n.fix.as_ref().is_some_and(|f| f.same_change(fix))
                })
            })
            .map(|(d, fix)| (d.code, fix.clone()))
            .collect();
        if !repeated.is_empty() {
            // Redo this pass without them; their findings stay reported.
            ineffective.extend(repeated);
            continue;
        }
        passes += 1;
        still_fixing = applied.applied.iter().map(|&i| fixable[i].0.code).collect();
        still_fixing.sort();
        still_fixing.dedup();
        fixed += applied.fixes;
        current = applied.text;
        diagnostics = after;
    }
    // What is left is not offered as fixable with a fix that was seen not to work or not to settle.
    for diagnostic in &mut diagnostics {
        let refused = unsettled.contains(&diagnostic.code)
            || diagnostic.fix.as_ref().is_some_and(|fix| {
                ineffective.iter().any(|(code, known)| *code == diagnostic.code && known.same_change(fix))
            });
        if refused {
            diagnostic.fix = None;
        }
    }
    let syntax_error = syntax_errors(&tree).first().map(|error| error.range);
    (FixOutcome { text: current, fixed, remaining: diagnostics, refused_unparsable, syntax_error }, still_fixing)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::document::Document;

    /// Typing through a script, with the tree edited and reparsed as the language server does:
    /// after every keystroke the cached lint reports exactly what a fresh lint does, syntax
    /// errors along the way included.
    #[test]
    fn a_cached_lint_follows_every_keystroke_exactly() {
        let settings = LintSettings::default();
        let example =
            |name: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name));
        let scripts = ["train_resnet.py", "finetune_llm_ddp.py", "gan_legacy_amp.py"]
            .map(|name| (name, example(name).expect("example")))
            .into_iter()
            .chain([("a script at module level", crate::test_support::MODULE_LEVEL.to_owned())]);
        for (name, text) in scripts {
            let mut document = Document::new(&text, 1);
            let cache = StatementCache::default();
            let lines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
            // Type at the end of every seventh line, then delete it again: code that joins the
            // statement, code that breaks it, a new statement, a comment.
            for (n, &at) in lines.iter().enumerate().step_by(7) {
                let typed = [" * 2", "(", "\nimport torch", "  # culint: ignore[CUL201]"][n % 4];
                let mut offset = at;
                for c in typed.chars() {
                    document.edit(TextRange::empty(offset), &c.to_string());
                    offset += c.len_utf8();
                    assert_same(&mut document, &cache, &settings, name);
                }
                while offset > at {
                    let previous = document.text()[..offset].chars().next_back().expect("typed text").len_utf8();
                    document.edit(TextRange::new(offset - previous, offset), "");
                    offset -= previous;
                    assert_same(&mut document, &cache, &settings, name);
                }
            }
            assert_eq!(document.text(), text);
        }
    }

    /// What an editor makes of a lint (its publish) is made of the diagnostics the lint returns:
    /// suppressed, sorted and deduplicated, on the thread beside once the buffer has had rules.
    #[test]
    fn then_is_handed_the_finished_diagnostics() {
        let settings = LintSettings::default();
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/train_resnet.py"))
            .expect("example");
        let suppressed = text.replacen('\n', "  # culint: ignore\n", 40);
        let unsuppressed = lint(&text, &parse(&text, None), LintContext::default(), &settings);
        let mut document = Document::new(&suppressed, 1);
        let cache = StatementCache::default();
        for _ in 0..2 {
            let tree = document.tree().clone();
            let (diagnostics, handed) =
                lint_again_then(&document.shared_text(), &tree, LintContext::default(), &settings, &cache, |d| {
                    d.to_vec()
                });
            assert_eq!(handed, diagnostics);
            assert_eq!(diagnostics, lint(&suppressed, &tree, LintContext::default(), &settings));
            assert!(!diagnostics.is_empty() && diagnostics.len() < unsuppressed.len());
        }
        assert!(cache.had_rules.load(Ordering::Relaxed));
    }

    /// A buffer that loses what its rules need (the code is deleted) lints to nothing, and once
    /// the code is back it lints to what a fresh lint finds; the rules are chosen before the
    /// model's build or beside it accordingly.
    #[test]
    fn a_buffer_that_loses_its_rules_and_gets_them_back_lints_as_a_fresh_buffer() {
        let settings = LintSettings::default();
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/train_resnet.py"))
            .expect("example");
        let mut document = Document::new(&text, 1);
        let cache = StatementCache::default();
        let lint_buffer = |document: &mut Document| {
            let tree = document.tree().clone();
            lint_again(&document.shared_text(), &tree, LintContext::default(), &settings, &cache)
        };
        assert!(!lint_buffer(&mut document).is_empty());
        assert!(cache.had_rules.load(Ordering::Relaxed));
        document.edit(TextRange::new(0, text.len()), "x = 1\n");
        assert!(lint_buffer(&mut document).is_empty());
        assert!(!cache.had_rules.load(Ordering::Relaxed));
        document.edit(TextRange::new(0, "x = 1\n".len()), &text);
        let again = lint_buffer(&mut document);
        assert_eq!(again, lint(&text, &parse(&text, None), LintContext::default(), &settings));
        assert!(!again.is_empty());
    }

    /// The prefilter turns away no finding: each top-level statement of every fixture and
    /// example, linted with its file's imports, gets the same findings as with every rule run.
    /// A whole fixture file would hide a miss behind the other cases that admit it.
    #[test]
    fn the_prefilter_turns_away_no_finding_of_any_fixture_statement() {
        let settings = LintSettings::default();
        let every: Vec<&'static Rule> = settings.rules.iter().filter(|rule| !rule.needs_hardware).collect();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut folders = vec![root.join("tests/fixtures"), root.join("examples")];
        let mut statements = 0;
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).expect("fixture folder") {
                let path = entry.expect("fixture entry").path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                // Fixtures that are not UTF-8 test other paths.
                let is_python = path.extension().is_some_and(|e| e == "py");
                let Some(text) = is_python.then(|| std::fs::read_to_string(&path).ok()).flatten() else { continue };
                let tree = parse(&text, None);
                let mut cursor = tree.walk();
                let (imports, others): (Vec<Node<'_>>, Vec<Node<'_>>) =
                    tree.root_node().children(&mut cursor).partition(|n| n.kind().contains("import"));
                let header: String = imports.iter().map(|n| format!("{}\n", &text[n.byte_range()])).collect();
                for statement in others {
                    let chunk = format!("{header}{}\n", &text[statement.byte_range()]);
                    let tree = parse(&chunk, None);
                    let context = LintContext::default();
                    let codes = |found: Vec<Diagnostic>| -> Vec<String> {
                        found.into_iter().map(|d| format!("{} {:?}", d.code, d.range)).collect()
                    };
                    let filtered = codes(lint(&chunk, &tree, context, &settings));
                    let unfiltered =
                        codes(lint_rules(&chunk, &tree, context, &settings, || every.clone(), None, |_| ()).0);
                    assert_eq!(filtered, unfiltered, "{}:\n{chunk}", path.display());
                    statements += 1;
                }
            }
        }
        assert!(statements > 500, "only {statements} statements were checked");
    }

    /// Typing inside the strings and numbers of the examples and of a script at module level,
    /// which needs no reparse (see [`crate::reparse_span`]): the cached lint reports what a fresh
    /// lint does after every keystroke, the findings that the strings' text decides included (the
    /// allocator's settings, the device).
    #[test]
    fn a_cached_lint_follows_keystrokes_inside_strings_and_numbers() {
        let settings = LintSettings::default();
        let example =
            |name: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name));
        let scripts = ["train_resnet.py", "serve_and_env.py"]
            .map(|name| (name, example(name).expect("example")))
            .into_iter()
            .chain([("a script at module level", crate::test_support::MODULE_LEVEL.to_owned())]);
        let kind = |name: &str| crate::parse::python().id_for_node_kind(name, true);
        let (string_content, integer) = (kind("string_content"), kind("integer"));
        let (mut unreparsed, mut changed_findings) = (0, 0);
        for (name, text) in scripts {
            let mut document = Document::new(&text, 1);
            let cache = StatementCache::default();
            let mut findings = assert_same(&mut document, &cache, &settings, name);
            // The ends of strings' texts, where letters are typed, and of decimal integers, where
            // digits are.
            let places: Vec<(usize, [&str; 2])> = crate::parse::layout(document.tree())
                .into_iter()
                .filter_map(|(of_kind, bytes, ..)| match of_kind {
                    _ if of_kind == string_content && bytes.len() > 1 => Some((bytes.end, ["x", "y"])),
                    _ if of_kind == integer && text[bytes.clone()].bytes().all(|b| b.is_ascii_digit()) => {
                        Some((bytes.end, ["4", "0"]))
                    }
                    _ => None,
                })
                .collect();
            // From the last place to the first, so that each place is still where it was.
            for &(end, [first, second]) in places.iter().rev() {
                for (at, typed) in [(end, first), (end + 1, second)] {
                    document.edit_text(TextRange::empty(at), typed);
                    unreparsed += usize::from(!document.needs_reparse());
                    document.reparse();
                    let now = assert_same(&mut document, &cache, &settings, name);
                    // Findings move with the text after them; those that change are counted.
                    changed_findings += usize::from(now.len() != findings.len());
                    findings = now;
                }
                document.edit(TextRange::new(end, end + 2), "");
                findings = assert_same(&mut document, &cache, &settings, name);
            }
            assert_eq!(document.text(), text);
        }
        assert!(unreparsed > 60, "{unreparsed} keystrokes in strings and numbers were not reparsed");
        assert!(changed_findings > 0, "no keystroke in a string or a number changed the findings");
    }

    /// The cached lint of `document` is the fresh one, which is returned, summed up.
    fn assert_same(
        document: &mut Document,
        cache: &StatementCache,
        settings: &LintSettings,
        name: &str,
    ) -> Vec<String> {
        let text = document.shared_text();
        let tree = document.tree().clone();
        let summary = |d: Vec<crate::diagnostic::Diagnostic>| -> Vec<String> {
            d.into_iter().map(|d| format!("{} {:?} {} {:?}", d.code, d.range, d.message, d.fix)).collect()
        };
        let fresh = summary(lint(&text, &tree, LintContext::default(), settings));
        // As the server lints a buffer: its rules judged while it was reparsed, and what the
        // lint let go of swept once the diagnostics are out.
        cache.judge_ahead(&text);
        let cached = summary(lint_again(&text, &tree, LintContext::default(), settings, cache));
        cache.sweep();
        assert_eq!(cached, fresh, "{name} after typing:\n{text}");
        fresh
    }
}
