//! The closing lines of the text formats: how many findings, how many `--fix` would repair, and
//! how many more `--unsafe-fixes` would.

use crate::fix::Applicability;

use super::is_applicable;
use crate::cli::check_file::FileReport;

/// The counts the summary reports.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FixSummary {
    pub remaining: usize,
    /// Fixes applied in this run (`--fix`).
    pub fixed: usize,
    /// Remaining findings that `--fix` would repair.
    pub fixable: usize,
    /// Remaining findings with an unsafe fix that `--unsafe-fixes` would enable.
    pub hidden: usize,
}

impl FixSummary {
    pub fn of(reports: &[FileReport]) -> Self {
        let mut summary = Self::default();
        for report in reports {
            summary.fixed += report.fixed;
            for diagnostic in &report.diagnostics {
                summary.remaining += 1;
                if is_applicable(report, diagnostic) {
                    summary.fixable += 1;
                } else if diagnostic.fix.as_ref().is_some_and(|f| f.applicability == Applicability::Unsafe) {
                    summary.hidden += 1;
                }
            }
        }
        summary
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Ruff's wording: "Found 3 errors.", "[*] 2 fixable with the `--fix` option.", and the hint
/// about hidden unsafe fixes. `applying` is set for `--fix` runs.
pub fn render_summary(summary: &FixSummary, applying: bool) -> String {
    let total = summary.remaining + summary.fixed;
    if total == 0 {
        return "All checks passed!\n".to_owned();
    }
    let mut out = if summary.fixed > 0 {
        format!(
            "Found {} ({} fixed, {} remaining).\n",
            plural(total, "error", "errors"),
            summary.fixed,
            summary.remaining
        )
    } else {
        format!("Found {}.\n", plural(total, "error", "errors"))
    };
    let hidden = match summary.hidden {
        0 => String::new(),
        n => format!("{} can be enabled with the `--unsafe-fixes` option", plural(n, "hidden fix", "hidden fixes")),
    };
    if summary.fixable > 0 && !applying {
        out.push_str(&format!("[*] {} fixable with the `--fix` option", summary.fixable));
        if hidden.is_empty() {
            out.push_str(".\n");
        } else {
            out.push_str(&format!(" ({hidden}).\n"));
        }
    } else if !hidden.is_empty() {
        out.push_str(&format!("No fixes available ({hidden}).\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording_follows_ruff() {
        let s = |remaining, fixed, fixable, hidden| FixSummary { remaining, fixed, fixable, hidden };
        assert_eq!(render_summary(&s(0, 0, 0, 0), false), "All checks passed!\n");
        assert_eq!(render_summary(&s(1, 0, 0, 0), false), "Found 1 error.\n");
        assert_eq!(
            render_summary(&s(3, 0, 2, 1), false),
            "Found 3 errors.\n[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
        );
        assert_eq!(render_summary(&s(1, 2, 0, 0), true), "Found 3 errors (2 fixed, 1 remaining).\n");
        assert_eq!(
            render_summary(&s(2, 0, 0, 2), false),
            "Found 2 errors.\nNo fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
        );
    }
}
