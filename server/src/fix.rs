//! Edits, fixes and the applier that turns a set of fixes into new text.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::text::TextRange;

/// Replace `range` with `content`. An empty range inserts; empty content deletes. The text is
/// shared, not copied, when a finding is kept from one lint to the next.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Edit {
    pub range: TextRange,
    pub content: Arc<str>,
}

impl Edit {
    pub fn insertion(at: usize, content: impl Into<Arc<str>>) -> Self {
        Self { range: TextRange::empty(at), content: content.into() }
    }

    pub fn replacement(range: TextRange, content: impl Into<Arc<str>>) -> Self {
        Self { range, content: content.into() }
    }

    pub fn deletion(range: TextRange) -> Self {
        Self { range, content: Arc::from("") }
    }
}

/// How far a fix can be trusted, ordered so that `Safe` is the greatest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown to the user as a suggestion; never applied automatically.
    DisplayOnly,
    /// Changes behaviour or numerics; applied only with `--unsafe-fixes`.
    Unsafe,
    /// Keeps the program's meaning except for the intended change.
    Safe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::DisplayOnly => "display-only",
            Applicability::Unsafe => "unsafe",
            Applicability::Safe => "safe",
        }
    }
}

/// A set of edits that together resolve one diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    pub title: Arc<str>,
    pub applicability: Applicability,
    /// Sorted by range, non-overlapping.
    pub edits: Vec<Edit>,
}

impl Fix {
    /// Whether two fixes make the same change, wherever they make it: the same title and the
    /// same edits up to position.
    pub fn same_change(&self, other: &Fix) -> bool {
        self.title == other.title
            && self.edits.len() == other.edits.len()
            && self
                .edits
                .iter()
                .zip(&other.edits)
                .all(|(a, b)| a.content == b.content && a.range.len() == b.range.len())
    }

    pub fn new(title: impl Into<Arc<str>>, applicability: Applicability, mut edits: Vec<Edit>) -> Self {
        edits.sort();
        edits.dedup();
        Self { title: title.into(), applicability, edits }
    }

    pub fn safe(title: impl Into<Arc<str>>, edits: Vec<Edit>) -> Self {
        Self::new(title, Applicability::Safe, edits)
    }

    pub fn unsafe_edits(title: impl Into<Arc<str>>, edits: Vec<Edit>) -> Self {
        Self::new(title, Applicability::Unsafe, edits)
    }

    pub fn display_only(title: impl Into<Arc<str>>, edits: Vec<Edit>) -> Self {
        Self::new(title, Applicability::DisplayOnly, edits)
    }

    /// The smallest range that covers every edit.
    pub fn range(&self) -> Option<TextRange> {
        let start = self.edits.iter().map(|e| e.range.start).min()?;
        let end = self.edits.iter().map(|e| e.range.end).max()?;
        Some(TextRange::new(start, end))
    }
}

/// The result of one pass of the applier.
#[derive(Debug)]
pub struct Applied {
    pub text: String,
    /// How many fixes went in whole.
    pub fixes: usize,
    /// Which of the fixes given went in, by their position in the input.
    pub applied: Vec<usize>,
    /// The edits made, in text order.
    edits: Vec<Edit>,
}

impl Applied {
    /// Where an offset of the original text lies in the fixed text; `None` inside a replaced
    /// range.
    pub fn map_offset(&self, offset: usize) -> Option<usize> {
        let mut shifted = offset as isize;
        for edit in &self.edits {
            if edit.range.start >= offset {
                break;
            }
            if edit.range.end > offset {
                return None;
            }
            shifted += edit.content.len() as isize - edit.range.len() as isize;
        }
        usize::try_from(shifted).ok()
    }
}

/// Apply every fix at or above `threshold` whose edits do not overlap an edit already taken.
/// A fix goes in whole or not at all. Edits that are identical to one already taken (the same
/// import rewrite requested by two call sites) are applied once and do not count as overlap.
pub fn apply_fixes<'a>(text: &str, fixes: impl IntoIterator<Item = &'a Fix>, threshold: Applicability) -> Applied {
    let mut candidates: Vec<(usize, &Fix)> = fixes
        .into_iter()
        .enumerate()
        .filter(|(_, fix)| fix.applicability >= threshold && fix.applicability != Applicability::DisplayOnly)
        .filter(|(_, fix)| fix.edits.iter().all(|e| e.range.end <= text.len() && valid_edit(text, e)))
        .filter(|(_, fix)| fix.edits.windows(2).all(|pair| !overlaps(&pair[0], &pair[1])))
        .collect();
    candidates.sort_by_key(|(_, fix)| fix.range());

    let mut taken: Vec<&Edit> = Vec::new();
    let mut applied = Vec::new();
    for (index, fix) in candidates {
        let new_edits: Vec<&Edit> = fix.edits.iter().filter(|e| !taken.contains(e)).collect();
        let clashes = new_edits.iter().any(|edit| taken.iter().any(|t| overlaps(t, edit)));
        if clashes {
            continue;
        }
        taken.extend(new_edits);
        applied.push(index);
    }
    taken.sort();

    let mut out = String::with_capacity(text.len() + 64);
    let mut cursor = 0;
    for edit in &taken {
        out.push_str(&text[cursor..edit.range.start]);
        out.push_str(&edit.content);
        cursor = edit.range.end;
    }
    out.push_str(&text[cursor..]);
    Applied { text: out, fixes: applied.len(), applied, edits: taken.into_iter().cloned().collect() }
}

fn valid_edit(text: &str, edit: &Edit) -> bool {
    text.is_char_boundary(edit.range.start) && text.is_char_boundary(edit.range.end)
}

/// Two edits clash when their ranges intersect, or when both insert at the same point (their
/// order would be arbitrary).
fn overlaps(a: &Edit, b: &Edit) -> bool {
    a.range.intersects(b.range)
        || (a.range.start == b.range.start && (a.range.is_empty() || b.range.is_empty()))
        || (a.range.is_empty() && b.range.start < a.range.start && a.range.start < b.range.end)
        || (b.range.is_empty() && a.range.start < b.range.start && b.range.start < a.range.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_through_the_edits_made() {
        let fix = Fix::safe("f", vec![ins(2, "xyz"), Edit::replacement(TextRange::new(5, 7), "")]);
        let applied = apply_fixes("0123456789", [&fix], Applicability::Safe);
        assert_eq!(applied.text, "01xyz234789");
        assert_eq!(applied.applied, vec![0]);
        assert_eq!(applied.map_offset(1), Some(1));
        assert_eq!(applied.map_offset(3), Some(6));
        assert_eq!(applied.map_offset(6), None, "inside the deleted range");
        assert_eq!(applied.map_offset(8), Some(9));
    }

    fn ins(at: usize, s: &str) -> Edit {
        Edit::insertion(at, s)
    }

    #[test]
    fn applies_non_overlapping_fixes_and_skips_clashes() {
        let text = "abcdef";
        let a = Fix::safe("a", vec![Edit::replacement(TextRange::new(0, 2), "X")]);
        let b = Fix::safe("b", vec![Edit::replacement(TextRange::new(1, 3), "Y")]);
        let c = Fix::safe("c", vec![ins(6, "!")]);
        let applied = apply_fixes(text, [&a, &b, &c], Applicability::Safe);
        assert_eq!(applied.text, "Xcdef!");
        assert_eq!(applied.fixes, 2);
    }

    #[test]
    fn shared_identical_edits_apply_once() {
        let import = Edit::replacement(TextRange::new(0, 3), "new");
        let a = Fix::safe("a", vec![import.clone(), ins(5, "1")]);
        let b = Fix::safe("b", vec![import, ins(7, "2")]);
        let applied = apply_fixes("old x y z", [&a, &b], Applicability::Safe);
        assert_eq!(applied.text, "new x1 y2 z");
        assert_eq!(applied.fixes, 2);
    }

    #[test]
    fn threshold_filters_unsafe_and_display_only() {
        let unsafe_fix = Fix::unsafe_edits("u", vec![ins(0, "u")]);
        let shown = Fix::display_only("d", vec![ins(1, "d")]);
        assert_eq!(apply_fixes("ab", [&unsafe_fix, &shown], Applicability::Safe).text, "ab");
        assert_eq!(apply_fixes("ab", [&unsafe_fix, &shown], Applicability::Unsafe).text, "uab");
    }
}
