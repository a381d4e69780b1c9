//! `path:line:col: CODE [*] message`, one line per finding; `[*]` marks what `--fix` repairs, and
//! a preview finding ends with `(preview)`. In a
//! notebook, `path:cell N:line:col`, as Ruff writes it.

use super::{Located, RenderOptions, cell_prefix, display_path, is_applicable, shown_message};

pub fn render(findings: &[Located<'_>], options: &RenderOptions<'_>) -> String {
    let mut out = String::new();
    for finding in findings {
        let marker = if is_applicable(finding.report, finding.diagnostic) { " [*]" } else { "" };
        out.push_str(&format!(
            "{}:{}{}:{}: {}{marker} {}\n",
            display_path(&finding.report.path, options.cwd),
            cell_prefix(finding.cell),
            finding.start.row,
            finding.start.column,
            finding.diagnostic.code,
            shown_message(finding.diagnostic)
        ));
    }
    out
}
