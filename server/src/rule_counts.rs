//! How many of something each rule had at a buffer's last lint (its candidates, its findings),
//! so that the next lint, of nearly the same text, makes room for as many at once instead of
//! growing its lists step by step.

use std::sync::{Mutex, PoisonError};

use crate::rules::{RULES, Rule, index_of};

/// What the last lint of a buffer counted, by rule.
#[derive(Default)]
pub struct RuleCounts(Mutex<Vec<usize>>);

/// The counts of one lint, by rule; zero for a rule it did not run.
pub struct Counted(Vec<usize>);

impl RuleCounts {
    /// What the last lint counted.
    pub fn last(&self) -> Counted {
        Counted(self.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// Keep this lint's counts, in place of the last one's.
    pub fn record<'r>(&self, counts: impl IntoIterator<Item = (&'r Rule, usize)>) {
        let mut by_rule = vec![0; RULES.len()];
        for (rule, count) in counts {
            by_rule[index_of(rule)] = count;
        }
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = by_rule;
    }

    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

impl Counted {
    pub fn of(&self, rule: &Rule) -> usize {
        self.0.get(index_of(rule)).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_kept_by_rule_until_the_next_record() {
        let counts = RuleCounts::default();
        let (first, second) = (RULES[0], RULES[1]);
        assert_eq!(counts.last().of(first), 0);
        counts.record([(first, 3), (second, 5)]);
        assert_eq!((counts.last().of(first), counts.last().of(second)), (3, 5));
        counts.record([(second, 2)]);
        assert_eq!((counts.last().of(first), counts.last().of(second)), (0, 2));
        counts.clear();
        assert_eq!(counts.last().of(second), 0);
    }
}
