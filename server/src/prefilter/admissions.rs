//! The prefilter's answers for a buffer that is linted again after each edit.
//!
//! On a large script the prefilter's searches and scans of the whole text cost about as much as
//! the checks that a keystroke runs. An edit changes a few bytes, though, and only around them can
//! a token appear that the text did not hold before: a token the last lint did not find is
//! searched for there alone. A rule the last lint admitted stays admitted, without its scan: a
//! prefilter may let through a text that the rule then finds clean, so admitting a rule that
//! could no longer fire costs its checks and changes no finding. (In the one case where a
//! prefilter turns away a text its rule would flag, see the parent module, it lets the finding
//! through rather than hide it.)

use std::cell::Cell;
use std::sync::{Arc, Mutex, PoisonError};

use super::{PresentTokens, TOKENS};
use crate::document::SharedText;
use crate::rules::{RULES, Rule, index_of};
use crate::text::Difference;

/// What the last lint of a buffer decided.
#[derive(Default)]
pub struct Admissions(Mutex<Option<Admitted>>);

struct Admitted {
    /// The text judged, for every rule. Held, so that no other text can take its address while
    /// it is here: the address tells whether a lint is of this very text.
    text: SharedText,
    /// By token of [`TOKENS`]: whether the text holds it, for those searched for.
    found: Vec<Option<bool>>,
    /// By rule of [`RULES`].
    admitted: Vec<bool>,
}

impl Admissions {
    pub fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The rules of `possible` that could fire on `text`, judged on its raw bytes: those the last
    /// lint admitted, and those [`PresentTokens::admits`] admits now. A text judged ahead is not
    /// judged again.
    pub fn admit(&self, text: &SharedText, possible: impl Iterator<Item = &'static Rule>) -> Vec<&'static Rule> {
        {
            let last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(last) = last.as_ref().filter(|last| Arc::ptr_eq(&last.text, text)) {
                return possible.filter(|rule| last.admitted[index_of(rule)]).collect();
            }
        }
        // Judged for every rule, as ahead, whatever `possible` holds: the text is then taken by
        // its address by any later lint of it, whichever rules that one asks for.
        let admitted = self.judge(Arc::clone(text));
        possible.filter(|rule| admitted[index_of(rule)]).collect()
    }

    /// Judge `text`, which a lint is about to read, for every rule. An editor calls this while it
    /// reparses the text, on the other core: judged in the lint, after the reparse, a large
    /// file's judgement makes the editor wait a millisecond longer. Only a buffer that a lint
    /// judged before is judged ahead: one that is never linted (the configuration excludes it)
    /// is not judged for nothing at every keystroke.
    pub fn judge_ahead(&self, text: &SharedText) {
        if self.0.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
            self.judge(Arc::clone(text));
        }
    }

    /// Which rules could fire on `text`, by rule of [`RULES`]; kept for the next judgement.
    fn judge(&self, text: SharedText) -> Vec<bool> {
        let last = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        // After an edit that replaced most of the text (a paste, a reload), what the last lint
        // admitted says little about this text: it is judged afresh.
        let edit = last.as_ref().map(|last| Difference::between(&last.text, &text));
        let last = last.filter(|last| edit.is_some_and(|edit| edit.replaced * 2 <= last.text.len()));
        let tokens = match (&last, edit) {
            (Some(last), Some(edit)) => after_edit(&text, edit, &last.found),
            _ => PresentTokens::of(&text),
        };
        let admitted_before = |rule: &Rule| last.as_ref().is_some_and(|last| last.admitted[index_of(rule)]);
        let mut admitted = vec![false; RULES.len()];
        for rule in RULES {
            admitted[index_of(rule)] = admitted_before(rule) || tokens.admits(rule, &text);
        }
        let found = tokens.found.iter().map(Cell::get).collect();
        drop(tokens);
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Admitted { text, found, admitted: admitted.clone() });
        admitted
    }
}

/// The tokens of `text`, which `edit` made of the last text: those the last text held, and those
/// found where the two differ. A token the last text did not hold is searched for around the
/// edit only.
fn after_edit<'t>(text: &'t str, edit: Difference, found_before: &[Option<bool>]) -> PresentTokens<'t> {
    let text_bytes = text.as_bytes();
    // A token that is new overlaps the changed bytes (or, after a deletion, the place they were).
    let reach = TOKENS.longest.saturating_sub(1);
    let end = (text.len() - edit.suffix + reach).min(text.len());
    let around_edit = &text_bytes[edit.prefix.saturating_sub(reach)..end];
    let found = found_before
        .iter()
        .zip(&TOKENS.finders)
        .map(|(found, finder)| Cell::new(found.map(|found| found || finder.find(around_edit).is_some())))
        .collect();
    PresentTokens { text: text_bytes, found }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_rule() -> impl Iterator<Item = &'static Rule> {
        RULES.iter().copied()
    }

    fn admitted_fresh(text: &str) -> Vec<&'static str> {
        let tokens = PresentTokens::of(text);
        every_rule().filter(|rule| tokens.admits(rule, text)).map(|rule| rule.code).collect()
    }

    #[test]
    fn an_edit_admits_every_rule_a_fresh_look_admits() {
        // A script the step-loop rules pass over until the edits give it a loop with backward
        // and an `empty_cache()`, typed a character at a time, tokens split across keystrokes
        // and across the edit's edge (`backw` + `ard(`).
        let admissions = Admissions::default();
        let mut text = String::from("import torch\n\nfor batch in loader:\n    loss = model(batch)\n    loss.backw\n");
        let check = |text: &str| {
            let admitted: Vec<&str> =
                admissions.admit(&Arc::new(text.to_owned()), every_rule()).iter().map(|r| r.code).collect();
            for code in admitted_fresh(text) {
                assert!(admitted.contains(&code), "{code} is admitted afresh but not after the edit, in {text:?}");
            }
        };
        check(&text);
        let at = text.len() - 1;
        for (i, c) in "ard()\n    torch.cuda.empty_cache()".chars().enumerate() {
            text.insert(at + i, c);
            check(&text);
        }
        assert!(admitted_fresh(&text).len() > admitted_fresh("import torch\n").len(), "the edits admit rules");
        // Deleting keeps what was admitted (looser, never stricter).
        let before: Vec<&str> =
            admissions.admit(&Arc::new(text.clone()), every_rule()).iter().map(|r| r.code).collect();
        let shortened = Arc::new(text.replace("    torch.cuda.empty_cache()", ""));
        let after: Vec<&str> = admissions.admit(&shortened, every_rule()).iter().map(|r| r.code).collect();
        assert_eq!(before, after);
    }

    /// A text judged ahead is taken as judged, for its rules only; a copy of it, at another
    /// address, is judged again.
    #[test]
    fn a_text_judged_ahead_is_not_judged_again() {
        let admissions = Admissions::default();
        let text: SharedText =
            Arc::new("import torch\nfor b in loader:\n    loss.backward()\n    torch.cuda.empty_cache()\n".into());
        // A buffer no lint has judged yet (one the configuration excludes is never linted) is
        // not judged ahead.
        admissions.judge_ahead(&text);
        assert!(admissions.0.lock().unwrap().is_none());
        admissions.admit(&Arc::new("import torch\n".to_owned()), every_rule());
        admissions.judge_ahead(&text);
        let expected = admitted_fresh(&text);
        assert!(!expected.is_empty());
        let codes = |rules: Vec<&'static Rule>| rules.iter().map(|r| r.code).collect::<Vec<_>>();
        assert_eq!(codes(admissions.admit(&text, every_rule())), expected);
        let first = RULES.iter().copied().find(|r| expected.contains(&r.code)).unwrap();
        assert_eq!(codes(admissions.admit(&text, std::iter::once(first))), vec![first.code]);
        // Poisoned: the judgement ahead admits nothing; the text itself is not looked at again.
        admissions.0.lock().unwrap().as_mut().unwrap().admitted.fill(false);
        assert!(admissions.admit(&text, every_rule()).is_empty());
        let copy: SharedText = Arc::new(text.as_str().to_owned());
        assert_eq!(codes(admissions.admit(&copy, every_rule())), expected);
    }
}
