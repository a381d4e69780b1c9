//! `# culint: ignore[...]`, `# noqa: ...` and `# culint: ignore-file` comments.

use std::sync::LazyLock;

use regex::Regex;
use tree_sitter::Tree;

use crate::diagnostic::Diagnostic;
use crate::rules;
use crate::text::line_start;

/// Which codes a comment silences: every rule, or a list of codes, prefixes or names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Codes {
    All,
    Some(Vec<String>),
}

impl Codes {
    fn covers(&self, diagnostic: &Diagnostic) -> bool {
        match self {
            Codes::All => true,
            Codes::Some(codes) => codes.iter().any(|code| selector_matches(code, diagnostic.code, diagnostic.name)),
        }
    }
}

/// A code (`CUL101`), a prefix (`CUL1`) or a name (`missing-set-device`).
pub fn selector_matches(selector: &str, code: &str, name: &str) -> bool {
    let selector = selector.trim();
    if selector.eq_ignore_ascii_case("ALL") {
        return true;
    }
    selector.eq_ignore_ascii_case(name)
        || (selector.len() <= code.len() && code[..selector.len()].eq_ignore_ascii_case(selector))
}

#[derive(Debug, Default)]
pub struct Suppressions {
    file: Option<Codes>,
    /// (where the comment's line starts, codes), in source order. Lines are found one at a
    /// time, by a look back from an offset: a file's few suppression comments and its findings
    /// do not pay for an index of all its lines.
    lines: Vec<(usize, Codes)>,
}

/// A suppression comment found in the source: where it is and what it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuppressionComment {
    /// Byte range of the whole comment token.
    pub start: usize,
    pub end: usize,
    pub file_level: bool,
    pub codes: Codes,
    /// Byte ranges of each named code inside the comment, for hover.
    pub code_ranges: Vec<(usize, usize)>,
}

static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)#\s*(?:culint:\s*(?P<kind>ignore-file|ignore)\s*(?:\[(?P<codes>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[A-Za-z0-9_\-]+(?:[,\s]+[A-Za-z0-9_\-]+)*))?)")
        .expect("suppression regex compiles")
});

/// Every suppression comment in the file, in order.
pub fn comments(text: &str, tree: &Tree) -> Vec<SuppressionComment> {
    if memchr::memmem::find(text.as_bytes(), b"culint").is_none()
        && memchr::memmem::find(text.as_bytes(), b"noqa").is_none()
    {
        return Vec::new();
    }
    let root = tree.root_node();
    let mut found = Vec::new();
    for captures in DIRECTIVE.captures_iter(text) {
        let whole = captures.get(0).expect("group 0");
        let Some(node) = root.descendant_for_byte_range(whole.start(), whole.start() + 1) else { continue };
        if node.kind() != "comment" {
            continue;
        }
        let file_level = captures.name("kind").is_some_and(|k| k.as_str().eq_ignore_ascii_case("ignore-file"));
        let list = captures.name("codes").or_else(|| captures.name("noqa"));
        let (codes, code_ranges) = match list {
            None => (Codes::All, Vec::new()),
            Some(list) => {
                let mut names = Vec::new();
                let mut ranges = Vec::new();
                let mut offset = list.start();
                for piece in list.as_str().split([',', ' ', '\t']) {
                    if !piece.is_empty() {
                        names.push(piece.to_owned());
                        ranges.push((offset, offset + piece.len()));
                    }
                    offset += piece.len() + 1;
                }
                if names.is_empty() { (Codes::All, ranges) } else { (Codes::Some(names), ranges) }
            }
        };
        // A bare `# noqa` that another tool owns still silences culint on that line, as in Ruff.
        found.push(SuppressionComment {
            start: node.start_byte(),
            end: node.end_byte(),
            file_level,
            codes,
            code_ranges,
        });
    }
    found
}

impl Suppressions {
    pub fn new(text: &str, tree: &Tree) -> Self {
        let mut suppressions = Suppressions::default();
        for comment in comments(text, tree) {
            if comment.file_level {
                suppressions.file = Some(match (suppressions.file.take(), comment.codes) {
                    (Some(Codes::All), _) | (_, Codes::All) => Codes::All,
                    (Some(Codes::Some(mut a)), Codes::Some(b)) => {
                        a.extend(b);
                        Codes::Some(a)
                    }
                    (None, codes) => codes,
                });
            } else {
                suppressions.lines.push((line_start(text, comment.start), comment.codes));
            }
        }
        suppressions
    }

    pub fn is_suppressed(&self, diagnostic: &Diagnostic, text: &str) -> bool {
        if self.file.as_ref().is_some_and(|codes| codes.covers(diagnostic)) {
            return true;
        }
        if self.lines.is_empty() {
            return false;
        }
        let line = line_start(text, diagnostic.range.start.min(text.len()));
        self.lines.iter().any(|(l, codes)| *l == line && codes.covers(diagnostic))
    }
}

/// Whether a selector names at least one registered rule: unknown selectors are config errors.
pub fn selector_is_known(selector: &str) -> bool {
    rules::RULES.iter().any(|rule| selector_matches(selector, rule.code, rule.name))
}
