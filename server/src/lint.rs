//! The one lint engine that the CLI and the language server both call.

use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use tree_sitter::Tree;

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::{Applicability, Fix, apply_fixes};
use crate::hardware::HardwareFacts;
use crate::parse::parse;
use crate::patterns::{Candidate, PatternSet};
use crate::prefilter::{self, PresentTokens};
pub use crate::rules::Checker;
pub use crate::rules::compile_query;
use crate::rules::{RULES, Rule, patterns_of};
pub use crate::semantic::LintContext;
use crate::semantic::Model;
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

/// Lint a parsed text. Diagnostics come back sorted by position, with suppressions applied.
pub fn lint(text: &str, tree: &Tree, context: LintContext<'_>, settings: &LintSettings) -> Vec<Diagnostic> {
    lint_rules(text, tree, context, settings, &rules_that_could_fire(text, settings))
}

/// The candidates of each rule of `active` (same order), each list in source order (outer nodes
/// before the nodes they hold). Matches in regions the parser could not make sense of are left
/// out.
pub fn candidates_by_rule<'a>(text: &'a str, tree: &'a Tree, active: &[&'static Rule]) -> Vec<Vec<Candidate<'a>>> {
    let patterns = PatternSet::new(active.iter().map(|rule| patterns_of(rule)));
    Model::with_candidates(text, tree, LintContext::default(), &patterns).1
}

/// [`lint`] with the rules `active` ([`rules_that_could_fire`] or the like).
fn lint_rules<'a>(
    text: &'a str,
    tree: &'a Tree,
    context: LintContext<'a>,
    settings: &LintSettings,
    active: &[&'static Rule],
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    if settings.show_syntax_errors {
        diagnostics.extend(syntax_errors(tree));
    }
    if !active.is_empty() {
        // The rules' candidates are found in the model's walk (see `crate::patterns`).
        let patterns = PatternSet::new(active.iter().map(|rule| patterns_of(rule)));
        let (model, candidates) = Model::with_candidates(text, tree, context, &patterns);
        let check = |(rule, candidates): (&&'static Rule, &Vec<crate::rules::Candidate<'a>>)| {
            let mut found = Checker::run(&model, settings.hardware.as_ref(), rule, candidates);
            if let Some(severity) = settings.severities.get(rule.code) {
                found.iter_mut().for_each(|d| d.severity = *severity);
            }
            found
        };
        // Rules check independently of each other, so they share the cores too.
        let by_rule: Vec<Vec<Diagnostic>> = active.par_iter().zip(&candidates).map(check).collect();
        diagnostics.extend(by_rule.into_iter().flatten());
    }
    if !diagnostics.is_empty() {
        let suppressions = Suppressions::new(text, tree);
        diagnostics.retain(|d| !suppressions.is_suppressed(d, text));
    }
    diagnostics.sort_by(|a, b| (a.range.start, &a.code, a.range.end).cmp(&(b.range.start, &b.code, b.range.end)));
    diagnostics.dedup_by(|a, b| a.code == b.code && a.range == b.range);
    if !fixes_are_safe_on(text, tree) {
        diagnostics.iter_mut().for_each(|d| d.fix = None);
    }
    diagnostics
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

/// Lint raw text: skip cheaply when no rule can fire, parse otherwise.
pub fn lint_text(text: &str, context: LintContext<'_>, settings: &LintSettings) -> Vec<Diagnostic> {
    let active = rules_that_could_fire(text, settings);
    if active.is_empty() && !settings.show_syntax_errors {
        return Vec::new();
    }
    lint_rules(text, &parse(text, None), context, settings, &active)
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
                facts: Vec::new(),
                assumptions: Vec::new(),
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

    use tree_sitter::Node;

    use super::*;
    use crate::document::Document;

    /// Typing through a script, with the tree edited and reparsed incrementally, as the language
    /// server does: after every keystroke the
    /// lint reports exactly what a lint of a fresh parse does, syntax errors along the way included.
    #[test]
    fn a_lint_of_the_reparsed_tree_follows_every_keystroke_exactly() {
        let settings = LintSettings { show_syntax_errors: true, ..LintSettings::default() };
        let example =
            |name: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name));
        let scripts = ["train_resnet.py", "finetune_llm_ddp.py"]
            .map(|name| (name, example(name).expect("example")))
            .into_iter()
            .chain([("a script at module level", crate::test_support::MODULE_LEVEL.to_owned())]);
        for (name, text) in scripts {
            let mut document = Document::new(&text, 1);
            let lines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
            // Type at the end of every seventh line, then delete it again: code that joins the
            // statement, code that breaks it, a new statement, a comment.
            for (n, &at) in lines.iter().enumerate().step_by(7) {
                let typed = [" * 2", "(", "\nimport torch", "  # culint: ignore[CUL201]"][n % 4];
                let mut offset = at;
                for c in typed.chars() {
                    document.edit(TextRange::empty(offset), &c.to_string());
                    offset += c.len_utf8();
                    assert_same(&mut document, &settings, name);
                }
                document.edit(TextRange::new(at, offset), "");
                assert_same(&mut document, &settings, name);
            }
            assert_eq!(document.text(), text);
        }
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
                    let unfiltered = codes(lint_rules(&chunk, &tree, context, &settings, &every));
                    assert_eq!(filtered, unfiltered, "{}:\n{chunk}", path.display());
                    statements += 1;
                }
            }
        }
        assert!(statements > 500, "only {statements} statements were checked");
    }

    /// The lint of `document`'s reparsed tree is a fresh parse's.
    fn assert_same(document: &mut Document, settings: &LintSettings, name: &str) {
        let text = document.text().to_owned();
        let summary = |d: Vec<Diagnostic>| -> Vec<String> {
            d.into_iter().map(|d| format!("{} {:?} {} {:?}", d.code, d.range, d.message, d.fix)).collect()
        };
        let fresh = summary(lint(&text, &parse(&text, None), LintContext::default(), settings));
        let reparsed = summary(lint(&text, document.tree(), LintContext::default(), settings));
        assert_eq!(reparsed, fresh, "{name} after typing:\n{text}");
    }
}
