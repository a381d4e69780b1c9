//! GitHub Actions workflow commands: each finding becomes an annotation on the pull request. A
//! notebook's lines are its cell's, and the message starts with the cell.
//! Escaping follows the runner's rules: `%`, CR and LF in the message; also `:` and `,` in
//! property values.

use crate::diagnostic::Severity;

use super::{Located, RenderOptions, display_path, shown_message};

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let mut out = String::new();
    for finding in findings {
        let diagnostic = finding.diagnostic;
        let command = match diagnostic.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info | Severity::Hint => "notice",
        };
        let title = if diagnostic.name == diagnostic.code {
            diagnostic.code.to_owned()
        } else {
            format!("{} {}", diagnostic.code, diagnostic.name)
        };
        out.push_str(&format!(
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            escape_property(&display_path(&finding.report.path, options.cwd)),
            finding.start.row,
            finding.start.column,
            finding.end.row,
            finding.end.column,
            escape_property(&title),
            escape_data(&format!(
                "{}{}",
                finding.cell.map(|n| format!("cell {n}: ")).unwrap_or_default(),
                shown_message(diagnostic)
            ))
        ));
    }
    out
}

fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_workflow_command_values() {
        assert_eq!(escape_data("50% of\nmemory"), "50%25 of%0Amemory");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
