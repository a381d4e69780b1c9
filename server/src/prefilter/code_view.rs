//! The code of a text without its prose: comments and docstrings blanked, so that a word in a
//! docstring's example (`model.eval()`, `device_map="auto"`) or in a comment admits no rule.
//!
//! Findings are made of code, and neither a comment nor a string that is a statement of its own
//! does anything at run time, so blanking them turns away no file a rule would flag. Other
//! strings (arguments, values) are kept: rules read them. Positions and line breaks stay where
//! they were, so the line scans read the same lines. Where the scan is unsure how Python would
//! read the text (a string that never closes), it blanks nothing from there on.

use std::borrow::Cow;
use std::ops::Range;

use super::string_end;

/// `text` with its comments and docstrings blanked to spaces; borrowed when it has neither.
pub fn code_view(text: &str) -> Cow<'_, str> {
    let prose = prose_ranges(text);
    if prose.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    for range in prose {
        // Every byte of a multi-byte character lies inside the range (its ends are ASCII), so
        // the result is still UTF-8.
        bytes[range].iter_mut().filter(|b| !matches!(b, b'\n' | b'\r')).for_each(|b| *b = b' ');
    }
    Cow::Owned(String::from_utf8(bytes).expect("blanking whole characters keeps UTF-8"))
}

/// The byte ranges of comments and of string literals that make up a whole statement.
fn prose_ranges(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut prose = Vec::new();
    // Open brackets: inside them a line break does not end the statement.
    let mut depth = 0usize;
    // Where the code of the current logical line starts, once it has any.
    let mut line_code: Option<usize> = None;
    // An f-string on this line: with nested quotes (Python 3.12) a `#` after it may be in a string.
    let mut line_has_f_string = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b' ' | b'\t' | b'\x0c' | b'\r' => {}
            b'\n' => {
                if depth == 0 {
                    line_code = None;
                }
                line_has_f_string = false;
            }
            b'\\' => {
                // A line continuation: the next line goes on with this statement.
                line_code.get_or_insert(at);
                at += 1;
                if bytes.get(at) == Some(&b'\r') {
                    at += 1;
                }
            }
            b'#' => {
                let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                if !line_has_f_string {
                    prose.push(at..end);
                }
                at = end;
                continue;
            }
            quote @ (b'"' | b'\'') => {
                let start = *line_code.get_or_insert(at);
                // The string's own prefix: the letters right before the quote (`rf"`).
                let letters = bytes[..at].iter().rev().take(3).take_while(|b| b.is_ascii_alphabetic()).count();
                line_has_f_string |= bytes[at - letters..at].iter().any(|b| matches!(b, b'f' | b'F'));
                let Some(end) = string_end(bytes, at, quote) else { break };
                let prefix = &text[start..at];
                let is_prefix = prefix.len() <= 2 && prefix.bytes().all(|b| b"rRuUbBfF".contains(&b));
                let alone_on_line = || {
                    let rest = &text[end..memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i)];
                    let rest = rest.trim_start_matches([' ', '\t', '\r']);
                    rest.is_empty() || rest.starts_with('#')
                };
                if depth == 0 && is_prefix && !text[end..].starts_with(['"', '\'']) && alone_on_line() {
                    prose.push(start..end);
                }
                at = end;
                continue;
            }
            byte => {
                line_code.get_or_insert(at);
                match byte {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                // The line has code now, so until the next byte that means something to the
                // scan, nothing changes: skip the run (most of a text) in a tight loop.
                at += 1;
                while at < bytes.len() && !MEANINGFUL[usize::from(bytes[at])] {
                    at += 1;
                }
                continue;
            }
        }
        at += 1;
    }
    prose
}

/// The bytes the scan acts on once a line has code: line breaks, continuations, comments,
/// quotes and brackets.
static MEANINGFUL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    let bytes = b"\n\\#\"'()[]{}";
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::code_view;

    fn blanked(text: &str) -> String {
        let view = code_view(text).into_owned();
        assert_eq!(view.len(), text.len());
        assert_eq!(view.matches('\n').count(), text.matches('\n').count());
        view
    }

    #[test]
    fn comments_and_docstrings_are_blanked_in_place() {
        let text = "\"\"\"Module.\n\n>>> model.eval()\n\"\"\"\nx = 1  # model.eval()\ndef f():\n    r'''Use device_map=\"auto\".'''\n    return 2\n";
        let view = blanked(text);
        assert!(!view.contains("eval") && !view.contains("device_map") && !view.contains("Module"), "{view}");
        assert!(view.contains("x = 1") && view.contains("def f():") && view.contains("return 2"), "{view}");
    }

    #[test]
    fn strings_that_are_values_stay() {
        for text in [
            "x = \"\"\"device_map='auto'\"\"\"\n",
            "f(\n    \"\"\"device_map='auto'\"\"\"\n)\n",
            "\"\"\"device_map='auto'\"\"\".format(x)\n",
            "\"\"\"device_map='auto'\"\"\" \"more\"\n",
            "x = 1; '# not a comment'; device_map='auto'\n",
            "s = f\"{d['#']}\"; device_map='auto'  # the f-string keeps this line\n",
            "x = \\\n    \"\"\"device_map='auto'\"\"\"\n",
        ] {
            assert!(blanked(text).contains("device_map='auto'"), "{text}");
        }
    }

    #[test]
    fn only_a_strings_own_prefix_makes_it_an_f_string() {
        // An `f` elsewhere on the line (`if`) does not keep the comment; `rf"` does.
        let view = blanked("if x == \"a\":  # model.eval()\n");
        assert!(!view.contains("eval"), "{view}");
        let view = blanked("s = rf\"{d['#']}\"  # model.eval()\n");
        assert!(view.contains("eval"), "{view}");
    }

    #[test]
    fn a_string_that_never_closes_stops_the_blanking() {
        let view = blanked("# one\nx = 'open\n# two\n");
        assert!(!view.contains("one") && view.contains("two"), "{view}");
    }

    #[test]
    fn text_without_prose_is_borrowed() {
        assert!(matches!(code_view("x = 'a'\n"), std::borrow::Cow::Borrowed(_)));
    }
}
