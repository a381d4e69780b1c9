//! Reading a rule's `.scm` file: the part of tree-sitter's query language the rules use.

use std::fmt;
use std::num::NonZeroU16;

use tree_sitter::Language;

/// One pattern of a rule's query, ready to match.
pub struct Pattern {
    pub(super) root: NodePattern,
    /// Capture names by index, without the `@`.
    pub(super) capture_names: Vec<&'static str>,
    pub(super) violation: u8,
    /// Checks of one capture's text, made when the capture binds (each is a check of every node
    /// the capture holds, so checking node by node is the same).
    pub(super) text_checks: Vec<(u8, TextCheck)>,
    /// `(#eq? @a @b)`: checked once the whole pattern has matched.
    pub(super) same_text: Vec<(u8, u8)>,
}

impl Pattern {
    /// The kind of node the pattern is rooted at.
    pub fn root_kind(&self) -> u16 {
        self.root.kind
    }
}

pub(super) struct NodePattern {
    pub kind: u16,
    pub captures: Vec<u8>,
    pub children: Vec<ChildPattern>,
    /// A `.` after the last child: it must be the last named child.
    pub anchored_end: bool,
}

pub(super) struct ChildPattern {
    pub field: Option<NonZeroU16>,
    /// A `.` before it: the first named child, or the named child right after the previous one.
    pub immediate: bool,
    /// One node pattern, or the alternatives of `[ ... ]`.
    pub alternatives: Vec<NodePattern>,
}

pub(super) enum TextCheck {
    Is(Box<str>),
    AnyOf(Vec<Box<str>>),
    Matches(regex::bytes::Regex),
}

impl TextCheck {
    pub fn accepts(&self, text: &[u8]) -> bool {
        match self {
            TextCheck::Is(expected) => text == expected.as_bytes(),
            TextCheck::AnyOf(values) => values.iter().any(|v| v.as_bytes() == text),
            TextCheck::Matches(regex) => regex.is_match(text),
        }
    }
}

/// Why a rule's patterns cannot be read, and where.
#[derive(Debug)]
pub struct PatternError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

/// The patterns of a query's source. Every pattern must capture `@violation`.
pub fn parse_patterns(source: &'static str, language: &Language) -> Result<Vec<Pattern>, PatternError> {
    let mut reader = Reader { source, at: 0, language };
    let mut patterns = Vec::new();
    while reader.skip_blank() {
        patterns.push(reader.top_pattern()?);
    }
    Ok(patterns)
}

struct Reader<'l> {
    source: &'static str,
    at: usize,
    language: &'l Language,
}

/// The captures and predicates of the pattern being read.
#[derive(Default)]
struct Captures {
    names: Vec<&'static str>,
    text_checks: Vec<(u8, TextCheck)>,
    same_text: Vec<(u8, u8)>,
}

impl Captures {
    fn index(&mut self, name: &'static str) -> u8 {
        let index = self.names.iter().position(|n| *n == name).unwrap_or_else(|| {
            self.names.push(name);
            self.names.len() - 1
        });
        u8::try_from(index).expect("fewer than 256 captures in a pattern")
    }
}

impl Reader<'_> {
    fn error<T>(&self, message: impl Into<String>) -> Result<T, PatternError> {
        Err(PatternError { offset: self.at, message: message.into() })
    }

    fn rest(&self) -> &'static str {
        &self.source[self.at..]
    }

    /// Skips blanks and `;` comments; whether anything is left.
    fn skip_blank(&mut self) -> bool {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if trimmed.starts_with(';') {
                self.at += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return !trimmed.is_empty();
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_blank();
        self.rest().chars().next()
    }

    fn expect(&mut self, c: char) -> Result<(), PatternError> {
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            Ok(())
        } else {
            self.error(format!("expected `{c}`"))
        }
    }

    /// A name: a node kind, a field, a capture's or a predicate's.
    fn word(&mut self) -> &'static str {
        self.skip_blank();
        let rest = self.rest();
        let len = rest.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '?'))).unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    fn string(&mut self) -> Result<Box<str>, PatternError> {
        self.expect('"')?;
        let mut value = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(value.into());
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, escaped)) => value.push(escaped),
                    None => break,
                },
                c => value.push(c),
            }
        }
        self.error("unterminated string")
    }

    /// A pattern at the top of the file: `(kind ...) @captures`, or one grouped with
    /// predicates, `((kind ...) @captures (#predicate ...))`.
    fn top_pattern(&mut self) -> Result<Pattern, PatternError> {
        let start = self.at;
        let mut captures = Captures::default();
        let grouped = self.rest().starts_with('(') && self.source[self.at + 1..].trim_start().starts_with('(');
        let mut root = if grouped {
            self.expect('(')?;
            let mut root = self.node_pattern(&mut captures)?;
            root.captures.extend(self.captures(&mut captures)?);
            while self.peek() == Some('(') {
                self.predicate(&mut captures)?;
            }
            self.expect(')')?;
            root
        } else {
            self.node_pattern(&mut captures)?
        };
        root.captures.extend(self.captures(&mut captures)?);
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return self.error("quantifiers are not supported in culint's patterns");
        }
        let Some(violation) = captures.names.iter().position(|n| *n == "violation") else {
            self.at = start;
            return self.error("the pattern captures no @violation");
        };
        Ok(Pattern {
            root,
            capture_names: captures.names,
            violation: violation as u8,
            text_checks: captures.text_checks,
            same_text: captures.same_text,
        })
    }

    /// `(kind child...)`, its children with their fields, anchors and predicates.
    fn node_pattern(&mut self, captures: &mut Captures) -> Result<NodePattern, PatternError> {
        self.expect('(')?;
        let kind_at = self.at;
        let kind = self.word();
        if kind.is_empty() || kind == "_" {
            return self.error("a node pattern needs a node kind (wildcards are not supported)");
        }
        let id = self.language.id_for_node_kind(kind, true);
        if id == 0 {
            self.at = kind_at;
            return self.error(format!("unknown node kind `{kind}`"));
        }
        let mut node = NodePattern { kind: id, captures: Vec::new(), children: Vec::new(), anchored_end: false };
        let mut immediate = false;
        loop {
            match self.peek() {
                Some(')') => {
                    self.at += 1;
                    return Ok(node);
                }
                Some('.') => {
                    self.at += 1;
                    if self.peek() == Some(')') {
                        node.anchored_end = true;
                    } else {
                        immediate = true;
                    }
                }
                Some('(') if self.source[self.at + 1..].trim_start().starts_with('#') => self.predicate(captures)?,
                Some('!') => return self.error("negated fields are not supported in culint's patterns"),
                Some('(' | '[' | '"') => {
                    node.children.push(self.child(None, immediate, captures)?);
                    immediate = false;
                }
                Some(_) => {
                    let field_at = self.at;
                    let name = self.word();
                    self.expect(':')?;
                    let Some(field) = self.language.field_id_for_name(name) else {
                        self.at = field_at;
                        return self.error(format!("unknown field `{name}`"));
                    };
                    node.children.push(self.child(Some(field), immediate, captures)?);
                    immediate = false;
                }
                None => return self.error("unclosed node pattern"),
            }
        }
    }

    /// A child: a node pattern, `[ alternatives ]` or an anonymous `"node"`, with its captures.
    fn child(
        &mut self,
        field: Option<NonZeroU16>,
        immediate: bool,
        captures: &mut Captures,
    ) -> Result<ChildPattern, PatternError> {
        let mut alternatives = match self.peek() {
            Some('[') => {
                self.at += 1;
                let mut alternatives = Vec::new();
                while self.peek() != Some(']') {
                    let mut alternative = self.single(captures)?;
                    alternative.captures.extend(self.captures(captures)?);
                    alternatives.push(alternative);
                }
                self.at += 1;
                alternatives
            }
            _ => vec![self.single(captures)?],
        };
        let shared = self.captures(captures)?;
        for alternative in &mut alternatives {
            alternative.captures.extend(&shared);
        }
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return self.error("quantifiers are not supported in culint's patterns");
        }
        Ok(ChildPattern { field, immediate, alternatives })
    }

    /// A node pattern or an anonymous node.
    fn single(&mut self, captures: &mut Captures) -> Result<NodePattern, PatternError> {
        if self.peek() != Some('"') {
            return self.node_pattern(captures);
        }
        let at = self.at;
        let text = self.string()?;
        let id = self.language.id_for_node_kind(&text, false);
        if id == 0 {
            self.at = at;
            return self.error(format!("unknown anonymous node \"{text}\""));
        }
        Ok(NodePattern { kind: id, captures: Vec::new(), children: Vec::new(), anchored_end: false })
    }

    /// The `@name`s after a pattern.
    fn captures(&mut self, captures: &mut Captures) -> Result<Vec<u8>, PatternError> {
        let mut found = Vec::new();
        while self.peek() == Some('@') {
            self.at += 1;
            let name = self.word();
            if name.is_empty() {
                return self.error("a capture needs a name");
            }
            found.push(captures.index(name));
        }
        Ok(found)
    }

    /// `(#eq? @a "text")`, `(#eq? @a @b)`, `(#any-of? @a "x" "y")`, `(#match? @a "regex")`.
    fn predicate(&mut self, captures: &mut Captures) -> Result<(), PatternError> {
        self.expect('(')?;
        self.expect('#')?;
        let name_at = self.at;
        let name = self.word();
        self.expect('@')?;
        let capture = captures.index(self.word());
        match name {
            "eq?" if self.peek() == Some('@') => {
                self.at += 1;
                let other = captures.index(self.word());
                captures.same_text.push((capture, other));
            }
            "eq?" => {
                let text = self.string()?;
                captures.text_checks.push((capture, TextCheck::Is(text)));
            }
            "any-of?" => {
                let mut values = Vec::new();
                while self.peek() == Some('"') {
                    values.push(self.string()?);
                }
                captures.text_checks.push((capture, TextCheck::AnyOf(values)));
            }
            "match?" => {
                let at = self.at;
                let source = self.string()?;
                let Ok(regex) = regex::bytes::Regex::new(&source) else {
                    self.at = at;
                    return self.error(format!("invalid regular expression \"{source}\""));
                };
                captures.text_checks.push((capture, TextCheck::Matches(regex)));
            }
            other => {
                self.at = name_at;
                return self.error(format!("the predicate #{other} is not supported in culint's patterns"));
            }
        }
        self.expect(')')
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::python;

    fn error_of(source: &'static str) -> String {
        match parse_patterns(source, &python()) {
            Ok(_) => panic!("{source} was read"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn what_is_not_supported_is_refused_by_name() {
        assert!(error_of("(call) @violation*").contains("quantifiers"));
        assert!(error_of("(_) @violation").contains("wildcards"));
        assert!(error_of("(call !arguments) @violation").contains("negated fields"));
        assert!(error_of("((call) @violation (#not-eq? @violation \"x\"))").contains("#not-eq?"));
        assert!(error_of("(cal) @violation").contains("unknown node kind `cal`"));
        assert!(error_of("(call functio: (identifier)) @violation").contains("unknown field `functio`"));
        assert!(error_of("(call) @v").contains("no @violation"));
        assert!(error_of("(call").contains("unclosed"));
        assert!(error_of("((string) @violation (#match? @violation \"(\"))").contains("invalid regular expression"));
    }

    #[test]
    fn every_part_of_a_pattern_is_read() {
        let source = "; a comment\n((call function: [(identifier) @_f (attribute attribute: (identifier) @_f)] \
                      arguments: (argument_list . (integer) @violation .)) (#any-of? @_f \"a\" \"b\") (#eq? @_f @_f))\n\
                      (augmented_assignment operator: \"+=\") @violation";
        let patterns = parse_patterns(source, &python()).expect("read");
        assert_eq!(patterns.len(), 2);
        let call = &patterns[0];
        assert_eq!(call.capture_names, ["_f", "violation"]);
        assert_eq!(call.root.children.len(), 2);
        assert_eq!(call.root.children[0].alternatives.len(), 2);
        let arguments = &call.root.children[1].alternatives[0];
        assert!(arguments.children[0].immediate && arguments.anchored_end);
        assert_eq!(call.text_checks.len(), 1);
        assert_eq!(call.same_text, [(0, 0)]);
        assert_eq!(patterns[1].root.children[0].alternatives[0].kind, python().id_for_node_kind("+=", false));
    }
}
