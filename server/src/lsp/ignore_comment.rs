//! The edit behind "Disable CULxxx for this line": extend the line's `# culint: ignore[...]`
//! comment, or append one.

use tree_sitter::Tree;

use crate::fix::Edit;
use crate::suppression::{Codes, comments};
use crate::text::LineIndex;

/// The edit that silences `code` on the line holding `offset`, or `None` where a comment cannot
/// go: the line ends inside a multi-line string, or continues with a backslash.
pub fn disable_for_line(text: &str, tree: &Tree, offset: usize, code: &str) -> Option<Edit> {
    let lines = LineIndex::new(text);
    let line = lines.line_range(text, lines.line_of(offset));
    let existing = comments(text, tree).into_iter().find(|comment| {
        !comment.file_level
            && line.start <= comment.start
            && comment.start < line.end
            && matches!(comment.codes, Codes::Some(_))
            && text[comment.start..comment.end].contains("culint")
    });
    if let Some(comment) = existing
        && let Some(&(_, last_end)) = comment.code_ranges.last()
        && text[last_end..].starts_with(']')
    {
        return Some(Edit::insertion(last_end, format!(", {code}")));
    }

    let content_end = line.start + text[line.start..line.end].trim_end().len();
    if text[line.start..content_end].ends_with('\\') || ends_inside_string(tree, content_end) {
        return None;
    }
    let separator = if content_end == line.start { "" } else { "  " };
    Some(Edit::replacement(
        crate::text::TextRange::new(content_end, line.end),
        format!("{separator}# culint: ignore[{code}]"),
    ))
}

/// Whether the byte before `offset` lies in a string that goes on past it (a triple-quoted
/// string spanning lines), where `#` would become part of the string.
fn ends_inside_string(tree: &Tree, offset: usize) -> bool {
    if offset == 0 {
        return false;
    }
    let Some(node) = tree.root_node().descendant_for_byte_range(offset - 1, offset) else { return false };
    let mut current = Some(node);
    while let Some(n) = current {
        if n.kind() == "string" && n.end_byte() > offset {
            return true;
        }
        current = n.parent();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::{Applicability, Fix, apply_fixes};
    use crate::parse::parse;

    fn disable(text: &str, at: &str, code: &str) -> Option<String> {
        let tree = parse(text, None);
        let edit = disable_for_line(text, &tree, text.find(at).unwrap(), code)?;
        Some(apply_fixes(text, [&Fix::safe("disable", vec![edit])], Applicability::Safe).text)
    }

    #[test]
    fn appends_a_comment_to_a_plain_line() {
        let text = "for b in d:\n    torch.cuda.empty_cache()   \n";
        assert_eq!(
            disable(text, "torch", "CUL201").unwrap(),
            "for b in d:\n    torch.cuda.empty_cache()  # culint: ignore[CUL201]\n"
        );
    }

    #[test]
    fn extends_an_existing_culint_comment() {
        let text = "x = torch.load(p)  # culint: ignore[CUL102]\r\n";
        assert_eq!(
            disable(text, "torch", "CUL101").unwrap(),
            "x = torch.load(p)  # culint: ignore[CUL102, CUL101]\r\n"
        );
    }

    #[test]
    fn keeps_other_comments_and_crlf() {
        let text = "x = f()  # 显存 noqa: E501\r\ny = 2\r\n";
        assert_eq!(
            disable(text, "f()", "CUL201").unwrap(),
            "x = f()  # 显存 noqa: E501  # culint: ignore[CUL201]\r\ny = 2\r\n"
        );
    }

    #[test]
    fn refuses_lines_that_end_inside_a_string_or_continue() {
        assert_eq!(disable("x = f(\"\"\"a\nb\"\"\")\n", "f(", "CUL201"), None);
        assert_eq!(disable("x = a + \\\n    b\n", "a +", "CUL201"), None);
    }

    #[test]
    fn last_line_without_newline() {
        assert_eq!(
            disable("torch.cuda.empty_cache()", "torch", "CUL201").unwrap(),
            "torch.cuda.empty_cache()  # culint: ignore[CUL201]"
        );
    }
}
