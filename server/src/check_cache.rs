//! Findings kept from an edited buffer's last lint, per rule and top-level statement.
//!
//! An edit changes one top-level statement, and on a long script the checks of the rules in
//! every other statement are most of what a keystroke costs. A rule's findings in a statement
//! that the reparse shared with the last tree, or built anew with the same text
//! ([`crate::tree_reuse`]), are the same as last time, moved with the statement, when nothing
//! else they depend on changed:
//!
//! - **What the checks read beyond the statement**, recorded by [`crate::semantic::reads`]: no
//!   lookup under a name that a changed statement files, before or after the edit; no read of
//!   the whole file; every file fact a rule computed still has the value it had.
//! - **What the whole file decides**, compared here: the settings and the file's path, how its
//!   lines end, whether it names CUDA, its import statements, the frameworks it configures and
//!   whether it has a step loop. The checks read these freely.
//! - **The kinds of the loops**, statement by statement. A statement whose loops' kinds are not
//!   what they were when its findings were kept keeps none; for the reads of its loops by other
//!   statements' checks ([`crate::semantic::reads::Index::LoopKinds`]) it counts as changed, as
//!   do the statements the edit changed. Compared for the whole file, a keystroke that broke one
//!   loop's header (` *` after its colon turns the body into an error) made every statement's
//!   checks again.
//!
//! The kinds of the loops are kept the same way, per statement, ahead of the checks: a statement's
//! loop kinds stand while what classifying them read does and the imports are the same.
//! - **Where the findings lie**: a finding is kept only when its range, its related ranges and
//!   its fix's edits all lie on the statement's own lines, and the rest of its last line is the
//!   same text. Fixes read and write whole lines, so a statement that does not start a line (one
//!   after another on the same line, or one that a syntax error left mid-line) keeps nothing;
//!   the others keep theirs.
//!
//! A statement with a syntax error keeps no findings: what the parser makes of broken text
//! depends on what surrounds it (the queries of [`crate::candidates`] keep nothing of it either;
//! the model's walk carries its notes of a statement only while the reparse shares the very
//! subtree they were made of, whatever it holds). Only the findings of rules marked
//! [`Rule::cached_per_statement`] are kept. The fuzz target `document_edits`, the keystroke
//! benchmark's `--verify` and the tests below check that a kept lint reports what a fresh one does.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::{HashSet, HashSetExt};
use smallvec::SmallVec;
use tree_sitter::{Node, Tree};

use crate::diagnostic::Diagnostic;
use crate::lint::{LintContext, LintSettings};
use crate::rules::Rule;
use crate::semantic::reads::{Reads, loop_kinds_key};
use crate::semantic::{Frameworks, LoopKind, Model};
use crate::text::{TextRange, line_ending, starts_a_line};
use crate::tree_reuse::{Recall, StatementMemory};

/// What the lints of one buffer keep of the checks.
#[derive(Default)]
pub struct CheckCache {
    statements: StatementMemory<CheckedStatement>,
    /// What the whole file decided at the last lint that kept its statements here.
    facts: Mutex<Option<FileFacts>>,
    loops: StatementMemory<ClassifiedLoops>,
    /// The import statements when the loops were last classified: what makes a call a model's.
    loop_imports: Mutex<Option<Vec<ImportText>>>,
}

/// What the last lint kept of the kinds of a top-level statement's loops.
struct ClassifiedLoops {
    /// The keys the statement files in the model's indices.
    keys: Arc<[u64]>,
    /// `None` when they may not be kept.
    kinds: Option<Arc<KeptKinds>>,
}

/// The kinds of a statement's loops, and what classifying them read.
struct KeptKinds {
    kinds: Arc<[LoopKind]>,
    reads: Reads,
}

impl CheckCache {
    /// Forget every statement (a buffer that went idle gives its memory back).
    pub fn clear(&self) {
        self.statements.clear();
        *self.facts.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.loops.clear();
        *self.loop_imports.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Free what the last lint let go of ([`StatementMemory::sweep`]).
    pub fn sweep(&self) {
        self.statements.sweep();
        self.loops.sweep();
    }

    /// Work out, ahead of [`RecalledChecks::open`], what the whole file decides that takes long:
    /// the kinds of its loops, from those the last lint kept where they still hold, and the
    /// frameworks it configures (both memoised in the model).
    pub fn prepare<'a>(&self, model: &Model<'a>, tree: &'a Tree) {
        self.classify_loops(model, tree);
        model.frameworks();
    }

    fn classify_loops<'a>(&self, model: &Model<'a>, tree: &'a Tree) {
        let Some(mut recall) = self.loops.open(tree, model.text) else {
            model.loops();
            return;
        };
        let imports = import_texts(model);
        let last_imports = self.loop_imports.lock().unwrap_or_else(PoisonError::into_inner).replace(imports.clone());
        let same_imports = last_imports == Some(imports);
        let recalled = recall_statements(&mut recall, model.top_level(), |kept| &kept.keys).with_keys(model);
        let holding: Vec<Option<Arc<KeptKinds>>> = recalled
            .kept
            .iter()
            .map(|kept| {
                let kinds = kept.as_ref()?.kinds.as_ref()?;
                let hold = same_imports
                    && !kinds.reads.read_any(&recalled.changed)
                    && kinds.reads.facts().iter().all(|(fact, value)| model.file_fact(*fact) == *value);
                hold.then(|| Arc::clone(kinds))
            })
            .collect();
        let fresh = model.classify_keeping(&|index| holding[index].as_ref().map(|kept| Arc::clone(&kept.kinds)));
        let mut kinds = holding;
        for classified in fresh {
            kinds[classified.statement] = (!classified.reads.whole_file())
                .then(|| Arc::new(KeptKinds { kinds: classified.kinds, reads: classified.reads }));
        }
        let statements = model.top_level();
        for (((statement, keys), kinds), last) in statements.iter().zip(recalled.keys).zip(kinds).zip(&recalled.kept) {
            let kinds = kinds.filter(|_| !statement.has_error());
            // A statement recalled is kept as it was unless its kinds changed (see [`Recall::keep`]).
            let unchanged = last.as_ref().is_some_and(|last| same_arc(&last.kinds, &kinds));
            if !unchanged {
                recall.keep(*statement, ClassifiedLoops { keys, kinds });
            }
        }
    }

    /// The first half of opening the kept checks for a lint of `text` ([`RecalledChecks::open`]
    /// is the second), which needs only the tree and its top-level `statements`: what the last
    /// lint kept of each statement that the reparse shared with its tree, where the statement
    /// starts its line and has the same text after it. On a large file this is a lookup per
    /// statement, most of them cache misses: done beside the model's build, it is off the path an
    /// editor waits on. `None` when another lint of the buffer holds the kept checks (that lint is
    /// not waited for: this one checks everything and keeps nothing).
    pub fn recall<'c, 'a>(
        &'c self,
        text: &'a str,
        tree: &'a Tree,
        statements: &[Node<'a>],
    ) -> Option<RecalledChecks<'c, 'a>> {
        let mut recall = self.statements.open(tree, text)?;
        let mut recalled = recall_statements(&mut recall, statements, |kept| &kept.keys);
        // The statements' loops when their findings were kept, including those whose findings
        // do not hold below: a check of another statement may have read their kinds.
        let loops_then = recalled.kept.iter().map(|kept| kept.as_ref().map(|kept| kept.loops.clone())).collect();
        let forgotten_loops = recall.forgotten().map(|forgotten| forgotten.loops.key).collect();
        for (kept, statement) in recalled.kept.iter_mut().zip(statements) {
            let holds = kept.as_ref().is_some_and(|kept| {
                let start = statement.start_byte();
                starts_a_line(text, *statement) && *kept.tail == *tail_after(text, start + kept.len)
            });
            if !holds {
                // Its findings are made again; its keys, kept apart, are still the statement's.
                *kept = None;
            }
        }
        Some(RecalledChecks { cache: self, recall, recalled, loops_then, forgotten_loops })
    }
}

/// What [`CheckCache::recall`] found, for [`RecalledChecks::open`] to finish once the model is
/// built.
pub struct RecalledChecks<'c, 'a> {
    cache: &'c CheckCache,
    recall: Recall<'c, 'a, CheckedStatement>,
    /// By top-level index, what the last lint kept of the statement, where its findings may hold
    /// as far as the statement and the text after it go (the file as a whole is compared by
    /// [`RecalledChecks::open`]).
    recalled: PartlyRecalled<CheckedStatement>,
    /// By top-level index: the kinds of a recalled statement's loops when it was kept.
    loops_then: Vec<Option<StatementLoops>>,
    /// The [`StatementLoops::key`]s of the statements the edit changed or removed.
    forgotten_loops: Vec<u64>,
}

impl<'c, 'a> RecalledChecks<'c, 'a> {
    /// For a lint that found no rule to run: the kept checks stay as they were
    /// ([`Recall::give_back`]).
    pub fn give_back(self) {
        self.recall.give_back();
    }

    /// The kept checks for one lint of `model`, whose top-level statements are those recalled.
    pub fn open(self, model: &Model<'a>, context: LintContext<'_>, settings: &LintSettings) -> CheckSession<'c, 'a> {
        let facts = FileFacts::of(model, context, settings);
        let previous = self.cache.facts.lock().unwrap_or_else(PoisonError::into_inner).take();
        let reusable = previous.as_ref() == Some(&facts);
        let Recalled { mut kept, keys, mut changed } = self.recalled.with_keys(model);
        let loops = StatementLoops::now(model);
        // Whose loops changed kinds: those the edit changed (before and after it), and those
        // kept whose loops' kinds are not what they were then, which keep no findings either
        // (their checks do not record reads of their own loops).
        changed.extend(self.forgotten_loops);
        for (((then, now), statement), kept) in self.loops_then.iter().zip(&loops).zip(model.top_level()).zip(&mut kept)
        {
            match then {
                Some(then) if then.kinds == now.kinds => {}
                Some(then) => {
                    changed.insert(then.key);
                    *kept = None;
                }
                None => {
                    changed.insert(StatementLoops::key_of(model, *statement));
                }
            }
        }
        let holding = if reusable { kept } else { vec![None; kept.len()] };
        CheckSession {
            cache: self.cache,
            recall: self.recall,
            keys,
            loops,
            kept: KeptChecks { facts, changed, holding },
        }
    }
}

/// What a [`Recall`] has kept of every top-level statement, before the model gives the keys of
/// those it had not (see [`PartlyRecalled::with_keys`]).
struct PartlyRecalled<T> {
    /// By top-level index: what the last lint kept of the statement, when it is unchanged.
    kept: Vec<Option<Arc<T>>>,
    /// By top-level index: the keys a recalled statement files, kept with it; `None` for the
    /// statements the edit changed, whose keys only the model knows.
    keys: Vec<Option<Arc<[u64]>>>,
    /// The keys that the statements the edit replaced filed.
    changed: HashSet<u64>,
}

impl<T> PartlyRecalled<T> {
    /// The keys of the statements the edit changed, read from `model` (whose top-level statements
    /// these are), filled in and counted as changed.
    fn with_keys(self, model: &Model<'_>) -> Recalled<T> {
        let PartlyRecalled { kept, keys, mut changed } = self;
        let keys = keys
            .into_iter()
            .zip(model.top_level())
            .map(|(keys, statement)| {
                keys.unwrap_or_else(|| {
                    let keys: Arc<[u64]> = model.statement_keys(*statement).into();
                    changed.extend(keys.iter().copied());
                    keys
                })
            })
            .collect();
        Recalled { kept, keys, changed }
    }
}

/// What a [`Recall`] has kept of every top-level statement.
struct Recalled<T> {
    /// By top-level index: what the last lint kept of the statement, when it is unchanged.
    kept: Vec<Option<Arc<T>>>,
    /// By top-level index: the keys each statement files, to keep with it.
    keys: Vec<Arc<[u64]>>,
    /// The keys ([`crate::semantic::reads::key`]) that the changed statements file, before the
    /// edit and after it.
    changed: HashSet<u64>,
}

/// Recall every top-level statement, each kept with its keys (`keys_of`).
fn recall_statements<'a, T>(
    recall: &mut Recall<'_, 'a, T>,
    statements: &[Node<'a>],
    keys_of: impl Fn(&T) -> &Arc<[u64]>,
) -> PartlyRecalled<T> {
    // Every statement is asked for, so that what is left over is what the edit changed.
    let (mut kept, mut keys) = (Vec::with_capacity(statements.len()), Vec::with_capacity(statements.len()));
    for statement in statements {
        let recalled = recall.recall(*statement).map(|(recalled, _)| recalled);
        keys.push(recalled.as_ref().map(|recalled| Arc::clone(keys_of(recalled))));
        kept.push(recalled);
    }
    let mut changed = HashSet::new();
    for forgotten in recall.forgotten() {
        changed.extend(keys_of(forgotten).iter().copied());
    }
    PartlyRecalled { kept, keys, changed }
}

/// One lint's use of a [`CheckCache`]: the findings it may keep, and what it keeps for the next.
pub struct CheckSession<'c, 'a> {
    cache: &'c CheckCache,
    recall: Recall<'c, 'a, CheckedStatement>,
    /// By top-level index: the keys each statement files, to keep with it.
    keys: Vec<Arc<[u64]>>,
    /// By top-level index: the kinds of each statement's loops now, to keep with it (its key
    /// is worked out when it is kept).
    loops: Vec<StatementLoops>,
    kept: KeptChecks,
}

/// What the last lint kept, as the checks of this one, on any thread, may use it.
pub struct KeptChecks {
    facts: FileFacts,
    /// The keys ([`crate::semantic::reads::key`]) that the changed statements file, before the
    /// edit and after it.
    changed: HashSet<u64>,
    /// By top-level index: what the last lint kept of the statement, when its findings may hold:
    /// the file as a whole is what it was, and the statement is the same text, starts its line
    /// and has the same text after it on its last line. Decided once a statement here, rather
    /// than by each rule that asks: on a large file the rules ask thousands of times a keystroke,
    /// and each answer read from the kept statement is a cache miss.
    holding: Vec<Option<Arc<CheckedStatement>>>,
}

/// The findings of one rule's checks in one statement, and what the checks read.
pub struct RuleFindings {
    /// Ranges from the statement's start.
    diagnostics: Vec<Diagnostic>,
    reads: Reads,
}

/// One rule's findings in one statement, as kept. Many checks find nothing and read nothing
/// beyond their statement (about two in five of the benchmark script's): those are kept as
/// `None`, so that reusing them reads no memory of their own.
#[derive(Clone)]
pub struct KeptRule(Option<Arc<RuleFindings>>);

impl KeptRule {
    /// Whether `self` is the very entry `other` is: the same findings kept, not equal ones.
    fn is(&self, other: &KeptRule) -> bool {
        same_arc(&self.0, &other.0)
    }
}

/// Each rule's findings in one statement. A statement has a handful, held inline: the statement,
/// its rules and their entries then lie together in memory.
pub type StatementFindings = SmallVec<[(&'static Rule, KeptRule); 8]>;

/// What the last lint kept of a top-level statement.
struct CheckedStatement {
    /// The keys the statement files in the model's indices.
    keys: Arc<[u64]>,
    /// The kinds of its loops when its findings were made or found to hold.
    loops: StatementLoops,
    /// The statement's length in bytes. A recalled statement has the same text, so its end is
    /// its start plus this: found so, it is not read from the subtree (a cache miss in a large
    /// file).
    len: usize,
    /// The text from the statement's end through the end of its last line when its findings were
    /// made. A finding may lie on that line (a fix rewrites whole lines), so they hold while it is
    /// the same. Every entry of `findings` was made or found to hold with this text after the
    /// statement: a lint that finds it changed checks each rule with candidates here again, and
    /// keeps the statement anew with the new text (see [`CheckSession::finish`]).
    tail: Box<str>,
    findings: StatementFindings,
}

/// The kinds of a top-level statement's loops, and the key that reads of them are recorded under.
#[derive(Clone)]
struct StatementLoops {
    kinds: SmallVec<[LoopKind; 6]>,
    /// [`loop_kinds_key`] of the statement's text; 0 until the statement is kept.
    key: u64,
}

impl StatementLoops {
    /// The kinds of every top-level statement's loops in `model`, by top-level index.
    fn now(model: &Model<'_>) -> Vec<StatementLoops> {
        let mut loops = vec![StatementLoops { kinds: SmallVec::new(), key: 0 }; model.top_level().len()];
        for (statement, kinds) in model.loop_kinds_by_statement() {
            loops[statement].kinds = kinds;
        }
        loops
    }

    /// The key of `statement`'s loops: hashed from its text, as the model records reads of them.
    fn key_of(model: &Model<'_>, statement: Node<'_>) -> u64 {
        loop_kinds_key(&model.text[statement.byte_range()])
    }
}

impl KeptChecks {
    /// The findings `rule` had last time in the top-level statement at `index`, moved to where the
    /// statement is now, when they still hold. The kept entry comes along to be kept again.
    pub fn kept(
        &self,
        model: &Model<'_>,
        rule: &Rule,
        index: usize,
        statement: Node<'_>,
        found: &mut Vec<Diagnostic>,
    ) -> Option<KeptRule> {
        if !rule.cached_per_statement {
            return None;
        }
        let kept = self.holding.get(index)?.as_ref()?;
        let (_, entry) = kept.findings.iter().find(|(r, _)| std::ptr::eq(*r, rule))?;
        let Some(findings) = &entry.0 else {
            return Some(entry.clone());
        };
        let still_hold = !findings.reads.read_any(&self.changed)
            && findings.reads.facts().iter().all(|(fact, value)| model.file_fact(*fact) == *value);
        still_hold.then(|| {
            let start = statement.start_byte();
            found.extend(findings.diagnostics.iter().map(|d| moved(d, |offset| start + offset)));
            entry.clone()
        })
    }

    /// The findings of `rule`'s checks in `statement`, with what they read, in a form to keep;
    /// `None` when they cannot be kept (see the module's documentation).
    pub fn keepable(
        &self,
        model: &Model<'_>,
        rule: &Rule,
        statement: Node<'_>,
        diagnostics: &[Diagnostic],
        reads: Reads,
    ) -> Option<KeptRule> {
        if !rule.cached_per_statement || reads.whole_file() || !starts_a_line(model.text, statement) {
            return None;
        }
        if diagnostics.is_empty() && reads.is_empty() {
            return Some(KeptRule(None));
        }
        let start = statement.start_byte();
        let lines = TextRange::new(start, statement.end_byte() + tail_after(model.text, statement.end_byte()).len());
        let on_own_lines = diagnostics.iter().all(|d| ranges_of(d).all(|r| lines.contains_range(r)));
        on_own_lines.then(|| {
            KeptRule(Some(Arc::new(RuleFindings {
                diagnostics: diagnostics.iter().map(|d| moved(d, |offset| offset - start)).collect(),
                reads: reads.compact(),
            })))
        })
    }
}

impl<'a> CheckSession<'_, 'a> {
    /// What the last lint kept, for this lint's checks.
    pub fn kept_checks(&self) -> &KeptChecks {
        &self.kept
    }

    /// Keep, for the next lint, what `kept` holds per top-level index: (rule, findings).
    pub fn finish(mut self, model: &Model<'a>, mut kept: Vec<StatementFindings>) {
        let statements = model.top_level();
        kept.resize_with(statements.len(), StatementFindings::new);
        let keys = std::mem::take(&mut self.keys);
        let loops = std::mem::take(&mut self.loops);
        for (index, (((statement, findings), keys), mut loops)) in
            statements.iter().zip(kept).zip(keys).zip(loops).enumerate()
        {
            let findings = if statement.has_error() { StatementFindings::new() } else { findings };
            // A statement whose findings held is kept as it was unless they changed (see
            // [`Recall::keep`]): on most keystrokes none but the edited statement's do. One whose
            // findings could not hold had every rule with candidates checked again, so that an
            // entry kept from an earlier lint is new here: it is kept anew, with its text now.
            let last = self.kept.holding.get(index).and_then(Option::as_ref);
            let unchanged = last.is_some_and(|last| {
                last.loops.kinds == loops.kinds
                    && last.findings.len() == findings.len()
                    && last
                        .findings
                        .iter()
                        .zip(&findings)
                        .all(|((a, last), (b, now))| std::ptr::eq(*a, *b) && last.is(now))
            });
            if !unchanged {
                let len = statement.byte_range().len();
                let tail = tail_after(model.text, statement.end_byte()).into();
                loops.key = match last {
                    // Recalled, so the same text.
                    Some(last) => last.loops.key,
                    None => StatementLoops::key_of(model, *statement),
                };
                self.recall.keep(*statement, CheckedStatement { keys, loops, len, tail, findings });
            }
        }
        *self.cache.facts.lock().unwrap_or_else(PoisonError::into_inner) = Some(self.kept.facts);
    }
}

/// Whether two optional shares are of one value.
fn same_arc<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The text after a statement that ends at `end`, up to and including the line break that ends
/// its last line.
fn tail_after(text: &str, end: usize) -> &str {
    let rest = &text[end..];
    &rest[..memchr::memchr(b'\n', rest.as_bytes()).map_or(rest.len(), |i| i + 1)]
}

/// Every range a diagnostic holds: its own, its related locations' and its fix's edits'.
fn ranges_of(diagnostic: &Diagnostic) -> impl Iterator<Item = TextRange> + '_ {
    let related = diagnostic.related.iter().map(|r| r.range);
    let edits = diagnostic.fix.iter().flat_map(|f| f.edits.iter().map(|e| e.range));
    std::iter::once(diagnostic.range).chain(related).chain(edits)
}

/// `diagnostic` with every range's offsets mapped by `map`.
fn moved(diagnostic: &Diagnostic, map: impl Fn(usize) -> usize) -> Diagnostic {
    let range = |r: TextRange| TextRange::new(map(r.start), map(r.end));
    let mut moved = diagnostic.clone();
    moved.range = range(moved.range);
    moved.related.iter_mut().for_each(|r| r.range = range(r.range));
    if let Some(fix) = &mut moved.fix {
        fix.edits.iter_mut().for_each(|e| e.range = range(e.range));
    }
    moved
}

/// What the whole file decides, which the checks read without recording.
#[derive(PartialEq)]
struct FileFacts {
    settings: LintSettings,
    path: Option<PathBuf>,
    line_ending: &'static str,
    mentions_cuda: bool,
    imports: Vec<ImportText>,
    frameworks: Frameworks,
    has_a_step_loop: bool,
}

impl FileFacts {
    fn of(model: &Model<'_>, context: LintContext<'_>, settings: &LintSettings) -> Self {
        let text = model.text;
        let imports = import_texts(model);
        Self {
            settings: settings.clone(),
            path: context.path.map(ToOwned::to_owned),
            line_ending: line_ending(text),
            mentions_cuda: model.mentions_cuda,
            imports,
            frameworks: model.frameworks().clone(),
            has_a_step_loop: model.has_a_step_loop(),
        }
    }
}

/// The text of an import statement, and whether it is at module level.
type ImportText = (Box<str>, bool);

/// Every import statement, in order.
fn import_texts(model: &Model<'_>) -> Vec<ImportText> {
    let text = model.text;
    model.imports.statements.iter().map(|s| (text[s.range.start_byte..s.range.end_byte].into(), s.top_level)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use crate::lint::{StatementCache, lint, lint_again};

    fn summary(found: &[Diagnostic]) -> Vec<String> {
        found.iter().map(|d| format!("{} {:?} {} {:?}", d.code, d.range, d.message, d.fix)).collect()
    }

    /// Lint `text` as a buffer, replace `old` (once in it) by `new` as an editor would, and lint
    /// again. Returns the fresh findings before and after the edit and the kept lint's after it.
    fn edit_and_relint(text: &str, old: &str, new: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
        assert_eq!(text.matches(old).count(), 1, "{old:?} is not once in the text");
        let settings = LintSettings::default();
        let cache = StatementCache::default();
        let mut document = crate::test_support::edited_buffer(text);
        let lint_buffer = |document: &mut Document| {
            let tree = document.tree().clone();
            lint_again(&document.shared_text(), &tree, LintContext::default(), &settings, &cache)
        };
        let before = lint_buffer(&mut document);
        let at = text.find(old).expect("checked above");
        document.edit(TextRange::new(at, at + old.len()), new);
        let kept = lint_buffer(&mut document);
        let after = document.text().to_owned();
        let fresh = lint(&after, &crate::parse::parse(&after, None), LintContext::default(), &settings);
        (summary(&before), summary(&fresh), summary(&kept))
    }

    /// An edit of one statement changes a finding in another through `reads`, and the kept lint
    /// follows: each case fails if that read is not recorded or not compared.
    fn assert_followed(text: &str, old: &str, new: &str, code: &str) {
        let (before, fresh, kept) = edit_and_relint(text, old, new);
        assert_eq!(kept, fresh, "after replacing {old:?} with {new:?}");
        let count = |found: &[String]| found.iter().filter(|d| d.starts_with(code)).count();
        assert_ne!(count(&before), count(&fresh), "the edit should change {code}: {before:?} -> {fresh:?}");
    }

    /// The statements an edit changes come after those whose findings they change: a reparse
    /// shares the statements before an edit, and those after it only in a longer file.
    const TRAIN: &str = "import torch

def train(model, loader, optimizer):
    for batch in loader:
        loss = forward(model, batch.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

def forward(model, batch):
    return model(batch)

print('done')
";

    #[test]
    fn a_helper_that_changes_is_read_through_its_name() {
        let with_autocast = "with torch.autocast(\"cuda\"):\n        return model(batch)";
        assert_followed(TRAIN, "return model(batch)", with_autocast, "CUL302");
    }

    #[test]
    fn a_file_fact_that_changes_is_computed_again() {
        assert_followed(TRAIN, "print('done')", "torch.nn.Linear(2, 2).half()", "CUL302");
    }

    #[test]
    fn imports_and_loop_kinds_that_change_are_compared() {
        let text = "import torch

def train(model, loader):
    for batch in loader:
        step(model, batch.cuda())
        empty_cache()

def step(model, batch):
    return model(batch)

from mylib import empty_cache
";
        // The loop in `train` becomes a step loop, through the loop kinds.
        let stepping = text.replace("from mylib", "from torch.cuda");
        let backward = "loss = model(batch)\n    loss.backward()";
        assert_followed(&stepping, "return model(batch)", backward, "CUL201");
        // `empty_cache` becomes PyTorch's, through the imports.
        let stepping = text.replace("return model(batch)", backward);
        assert_followed(&stepping, "from mylib", "from torch.cuda", "CUL201");
    }

    /// A loop that becomes a step loop through a helper in another statement, which now runs a
    /// training step: the statement of the loop is checked again (its checks record no read of
    /// their own loops' kinds).
    #[test]
    fn a_statement_whose_own_loops_change_kinds_is_checked_again() {
        let text = "import torch

def train(model, loader, optimizer):
    for batch in loader:
        train_step(model, batch.cuda(), optimizer)
        torch.cuda.empty_cache()

print(\"an edit next to a statement may change how it parses: this one keeps them apart\")

def train_step(model, batch, optimizer):
    loss = model(batch)
    optimizer.step()
";
        assert_followed(text, "optimizer.step()\n", "loss.backward()\n    optimizer.step()\n", "CUL201");
    }

    #[test]
    fn an_assignment_that_changes_is_read_through_its_target() {
        let text = "import torch

def train(model, loader):
    for batch in loader:
        loss = model(batch.cuda())
        loss.backward()
        sgd.step()

sgd = make_sgd()
";
        assert_followed(text, "make_sgd()", "torch.optim.SGD(params)", "CUL501");
    }

    /// Classifying the loops resolves calls before any check asks, outside any recording: the
    /// answer, memoised, must still carry the lookup that found the helper.
    #[test]
    fn a_call_resolved_while_loops_are_classified_keeps_its_reads() {
        let text = "import torch

def train(model, loader, optimizer):
    for batch in loader:
        train_step(model, batch.cuda())
        optimizer.step()

def train_step(model, batch):
    loss = model(batch)
    loss.backward()
";
        assert_followed(text, "loss.backward()", "loss.backward()\n    optimizer.zero_grad()", "CUL501");
    }

    /// The loop kinds of a buffer as `cache` works them out (keeping what it can), and as a fresh
    /// model does.
    fn kinds_kept_and_fresh(cache: &CheckCache, document: &mut Document) -> (Vec<LoopKind>, Vec<LoopKind>) {
        let tree = document.tree().clone();
        let text = document.text();
        let kept = Model::with_cache(text, &tree, LintContext::default(), None);
        cache.prepare(&kept, &tree);
        let fresh = Model::with_cache(text, &tree, LintContext::default(), None);
        let kinds = |model: &Model<'_>| model.loops().iter().map(|l| l.kind).collect::<Vec<_>>();
        (kinds(&kept), kinds(&fresh))
    }

    /// Edit `text` (replace `old`, once in it, by `new`) so that the loops' kinds go from `before`
    /// to `after`, and check that the kept kinds follow.
    fn assert_kinds_follow(text: &str, old: &str, new: &str, before: &[LoopKind], after: &[LoopKind]) {
        let cache = CheckCache::default();
        let mut document = crate::test_support::edited_buffer(text);
        let (kept, fresh) = kinds_kept_and_fresh(&cache, &mut document);
        assert_eq!((&kept[..], &fresh[..]), (before, before));
        let at = document.text().find(old).expect("in the text");
        document.edit(TextRange::new(at, at + old.len()), new);
        let (kept, fresh) = kinds_kept_and_fresh(&cache, &mut document);
        assert_eq!((&kept[..], &fresh[..]), (after, after), "after replacing {old:?} with {new:?}");
    }

    /// A loop whose kind rests on another statement's loops, which rest on a third statement: an
    /// edit of the third changes both kinds.
    #[test]
    fn loop_kinds_follow_an_edit_two_statements_away() {
        let text = "def run(model, loader, optimizer):
    for epoch in range(3):
        train_epoch(model, loader, optimizer)

def train_epoch(model, loader, optimizer):
    for batch in loader:
        update(model, batch, optimizer)

print(\"an edit next to a statement may change how it parses: this one keeps them apart\")

def update(model, batch, optimizer):
    loss = model(batch)
    optimizer.step()
";
        let backward = "loss.backward()\n    optimizer.step()";
        let (other, epoch, step) = (LoopKind::Other, LoopKind::Epoch, LoopKind::Step);
        assert_kinds_follow(text, "optimizer.step()", backward, &[other, other], &[epoch, step]);
    }

    /// A call whose name no function had: once a later statement defines it, the loop calls a
    /// helper that runs a training step.
    #[test]
    fn loop_kinds_follow_a_function_that_comes_to_be() {
        let text = "def train_epoch(model, loader, optimizer):
    for batch in loader:
        update(model, batch, optimizer)

print(\"an edit next to a statement may change how it parses: this one keeps them apart\")

def helper(model, batch, optimizer):
    loss = model(batch)
    loss.backward()
";
        assert_kinds_follow(text, "def helper", "def update", &[LoopKind::Other], &[LoopKind::Step]);
    }

    /// The tests above would pass with kinds that are never kept; this one fails then.
    #[test]
    fn loop_kinds_of_unchanged_statements_are_kept() {
        let text = include_str!("../../examples/train_resnet.py");
        let cache = CheckCache::default();
        let mut document = crate::test_support::edited_buffer(text);
        document.edit(TextRange::empty(text.len()), "# one\n");
        let (kept, fresh) = kinds_kept_and_fresh(&cache, &mut document);
        assert_eq!(kept, fresh);
        assert!(fresh.contains(&LoopKind::Step), "the example has a step loop");
        // Every statement's loops "were" eval loops; an edit that touches none of them keeps that.
        cache.loops.replace_all(|kept| ClassifiedLoops {
            keys: Arc::clone(&kept.keys),
            kinds: kept.kinds.as_ref().map(|kept| {
                Arc::new(KeptKinds {
                    kinds: kept.kinds.iter().map(|_| LoopKind::Eval).collect(),
                    reads: kept.reads.clone(),
                })
            }),
        });
        document.edit(TextRange::empty(document.text().len()), "# two\n");
        let (kept, _) = kinds_kept_and_fresh(&cache, &mut document);
        assert!(kept.iter().all(|kind| *kind == LoopKind::Eval), "kinds were worked out again: {kept:?}");
    }

    /// The tests above would pass with findings that are never kept; this one fails then.
    #[test]
    fn findings_of_unchanged_statements_are_kept() {
        assert_findings_of_unchanged_statements_are_kept(include_str!("../../examples/train_resnet.py"));
    }

    /// The statement after an edited line is built anew by the reparse (it is told changed, see
    /// [`crate::reparse_span`]): its findings are kept by its text.
    #[test]
    fn findings_of_statements_the_reparse_built_anew_are_kept() {
        let text = "import torch\nimport torch.nn as nn\n\nwidth = 8\nmodel = nn.Linear(width, width).cuda()\n\
                    inputs = torch.randn(4, width, device=\"cuda\")\nlogits = model(inputs)\nwidth = 8\n\
                    torch.cuda.empty_cache()\ndel logits\n";
        let empty_cache = |document: &mut Document| {
            let tree = document.tree().clone();
            let statement = tree.root_node().children(&mut tree.walk()).find(|s| {
                s.kind() == "expression_statement" && document.text()[s.byte_range()].starts_with("torch.cuda")
            });
            statement.and_then(crate::tree_reuse::subtree_of).expect("the statement")
        };
        let (mut document, cache, first) = crate::test_support::buffer_linted_once(text);
        assert!(first.iter().any(|d| d.code == "CUL202"), "{:?}", summary(&first));
        let before = empty_cache(&mut document);
        cache.checks().statements.replace_all(|kept| without_findings(kept, kept.tail.clone()));
        let at = text.rfind("= 8").expect("the width") + 3;
        let second = crate::test_support::lint_buffer_after(&mut document, &cache, TextRange::empty(at), " * 2");
        assert_ne!(empty_cache(&mut document), before, "the reparse shared the statement");
        assert!(second.iter().all(|d| d.code != "CUL202"), "checked again: {:?}", summary(&second));
    }

    /// Two statements that share a line keep nothing, and take nothing from the others: a
    /// keystroke that leaves a syntax error often starts a statement mid-line.
    #[test]
    fn statements_sharing_a_line_leave_the_others_their_findings() {
        let text = format!("{}x = 1; y = 2\n", include_str!("../../examples/train_resnet.py"));
        assert_findings_of_unchanged_statements_are_kept(&text);
        let shared = "model = Net().cuda(); print('x')\n";
        let text = format!("{}{shared}", include_str!("../../examples/train_resnet.py"));
        let (_, fresh, kept) = edit_and_relint(&text, "print('x')", "model.half()");
        assert_eq!(kept, fresh);
    }

    fn assert_findings_of_unchanged_statements_are_kept(text: &str) {
        let (kept_codes, second) = relint_with_no_findings_kept(text, |kept| kept.tail.clone());
        assert!(
            second.iter().all(|d| !kept_codes.contains(&d.code)),
            "findings were checked again: {kept_codes:?} {:?}",
            summary(&second)
        );
    }

    /// An edit that changes the kinds of one statement's loops (` *` typed after a function's
    /// colon turns its body, loop included, into an error) keeps the findings of the others.
    /// Compared for the whole file, every statement's checks were made again.
    #[test]
    fn a_statement_whose_loops_change_kinds_leaves_the_others_kept() {
        let text = format!(
            "{}\ndef report(loader):\n    for batch in loader:\n        print(len(batch))\n",
            include_str!("../../examples/train_resnet.py")
        );
        let at_the_last_colon =
            |text: &str| (TextRange::empty(text.rfind("(loader):").expect("the function") + 9), " *");
        let (kept_codes, second) =
            relint_after_with_no_findings_kept(&text, |kept| kept.tail.clone(), at_the_last_colon);
        assert!(
            second.iter().all(|d| !kept_codes.contains(&d.code)),
            "findings were checked again: {kept_codes:?} {:?}",
            summary(&second)
        );
    }

    /// A fix may edit the rest of a statement's last line, so its findings hold only while the
    /// text there is what it was when they were made.
    #[test]
    fn findings_are_made_again_where_the_text_after_the_statement_changed() {
        let text = include_str!("../../examples/train_resnet.py");
        let (kept_codes, second) = relint_with_no_findings_kept(text, |_| "  # other text\n".into());
        let codes: Vec<&str> = second.iter().map(|d| d.code).collect();
        assert!(kept_codes.iter().all(|code| codes.contains(code)), "{kept_codes:?} not found again: {codes:?}");
    }

    /// `kept` as if its rules had found nothing and it filed no keys, with `tail` after it.
    fn without_findings(kept: &CheckedStatement, tail: Box<str>) -> CheckedStatement {
        CheckedStatement {
            keys: Arc::from([]),
            loops: kept.loops.clone(),
            len: kept.len,
            tail,
            findings: crate::rules::RULES.iter().map(|rule| (*rule, KeptRule(None))).collect(),
        }
    }

    /// Lint `text` as a buffer, then have every statement "had" no findings, with `tail` after
    /// it, and lint again after an edit that touches none of them. Returns the codes of the
    /// first lint's findings that rules keep, and the second lint's findings.
    fn relint_with_no_findings_kept(
        text: &str,
        tail: impl Fn(&CheckedStatement) -> Box<str>,
    ) -> (Vec<&'static str>, Vec<Diagnostic>) {
        relint_after_with_no_findings_kept(text, tail, |text| (TextRange::empty(text.len()), "# two\n"))
    }

    /// [`relint_with_no_findings_kept`], with the second edit `edit` makes of the text.
    fn relint_after_with_no_findings_kept(
        text: &str,
        tail: impl Fn(&CheckedStatement) -> Box<str>,
        edit: impl Fn(&str) -> (TextRange, &'static str),
    ) -> (Vec<&'static str>, Vec<Diagnostic>) {
        let (mut document, cache, first) = crate::test_support::buffer_linted_once(text);
        let kept_codes: Vec<&str> = first
            .iter()
            .filter(|d| crate::rules::by_code(d.code).is_some_and(|r| r.cached_per_statement))
            .map(|d| d.code)
            .collect();
        assert!(!kept_codes.is_empty(), "the example has no finding of a rule that keeps its findings");
        cache.checks().statements.replace_all(|kept| without_findings(kept, tail(kept)));
        let (range, inserted) = edit(document.text());
        let second = crate::test_support::lint_buffer_after(&mut document, &cache, range, inserted);
        (kept_codes, second)
    }
}
