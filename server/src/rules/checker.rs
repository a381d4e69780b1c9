//! What a rule's check function works with: the model, the hardware facts, and where it reports.

use std::sync::Arc;

use tree_sitter::Node;

use super::{Candidate, Rule};
use crate::diagnostic::{Diagnostic, Related};
use crate::fix::Fix;
use crate::hardware::HardwareFacts;
use crate::semantic::Model;
use crate::text::TextRange;

/// What a rule's check function works with.
pub struct Checker<'m, 'a> {
    pub model: &'m Model<'a>,
    pub hardware: Option<&'m HardwareFacts>,
    rule: &'static Rule,
    diagnostics: Vec<Diagnostic>,
    /// Per-file facts a rule computes once and reuses across its candidates (see [`Checker::memo`]).
    memo: foldhash::HashMap<usize, Box<dyn std::any::Any>>,
}

impl<'m, 'a> Checker<'m, 'a> {
    /// Run `rule`'s check on each of its candidates; what it reported.
    pub(crate) fn run(
        model: &'m Model<'a>,
        hardware: Option<&'m HardwareFacts>,
        rule: &'static Rule,
        candidates: &[Candidate<'a>],
    ) -> Vec<Diagnostic> {
        let mut checker =
            Checker { model, hardware, rule, diagnostics: Vec::new(), memo: foldhash::HashMap::default() };
        for candidate in candidates {
            if !(rule.quiet_in_test_code && model.is_test_code(candidate.node)) {
                (rule.check)(&mut checker, candidate);
            }
        }
        // A preview finding rests on an assumption the rule stated when it reported it: shown
        // only when asked for, and then marked.
        if !model.context.preview {
            checker.diagnostics.retain(|d| !d.is_preview());
        }
        checker.diagnostics
    }

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
            facts: Vec::new(),
            assumptions: Vec::new(),
        });
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Compute a value once per file and rule, keyed by `key` (a node id, or 0 for a file-wide
    /// fact): candidates of one rule often ask the same whole-file question.
    pub fn memo<T: Clone + 'static>(&mut self, key: usize, compute: impl FnOnce() -> T) -> T {
        if let Some(value) = self.memo.get(&key).and_then(|value| value.downcast_ref::<T>()) {
            return value.clone();
        }
        let value = compute();
        self.memo.insert(key, Box::new(value.clone()));
        value
    }

    /// Whether the current rule has reported anything in this file yet.
    pub fn has_reported(&self) -> bool {
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

    /// A fact the finding rests on, in words a user can check: "model: `gpt2-xl`, about 1.5B
    /// parameters (family table)".
    pub fn with_fact(&mut self, fact: impl Into<Arc<str>>) -> &mut Self {
        self.facts.push(fact.into());
        self
    }

    /// Something the rule assumed where the code does not say: the finding becomes a preview
    /// finding, hidden unless preview is on.
    pub fn with_assumption(&mut self, assumption: impl Into<Arc<str>>) -> &mut Self {
        self.assumptions.push(assumption.into());
        self
    }

    pub fn with_related(&mut self, range: TextRange, message: impl Into<Arc<str>>) -> &mut Self {
        self.related.push(Related { range, message: message.into() });
        self
    }
}
