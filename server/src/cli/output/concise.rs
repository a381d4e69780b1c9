//! `path:line:col: CODE [*] message`, one line per finding; `[*]` marks what `--fix` repairs.

use super::{Located, RenderOptions, display_path, is_applicable};

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let mut out = String::new();
    for finding in findings {
        let marker = if is_applicable(finding.report, finding.diagnostic) { " [*]" } else { "" };
        out.push_str(&format!(
            "{}:{}:{}: {}{marker} {}\n",
            display_path(&finding.report.path, options.cwd),
            finding.start.row,
            finding.start.column,
            finding.diagnostic.code,
            finding.diagnostic.message
        ));
    }
    out
}
