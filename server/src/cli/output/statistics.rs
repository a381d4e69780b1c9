//! `--statistics`: how many findings of each rule, most frequent first, as in Ruff.

use std::collections::BTreeMap;

use serde_json::json;

use super::is_applicable;
use crate::cli::check_file::FileReport;

struct Count<'a> {
    code: &'a str,
    name: &'a str,
    count: usize,
    fixable: usize,
}

fn counts(reports: &[FileReport]) -> Vec<Count<'_>> {
    let mut by_code: BTreeMap<&str, Count<'_>> = BTreeMap::new();
    for report in reports {
        for diagnostic in &report.diagnostics {
            let entry = by_code.entry(diagnostic.code).or_insert(Count {
                code: diagnostic.code,
                name: diagnostic.name,
                count: 0,
                fixable: 0,
            });
            entry.count += 1;
            entry.fixable += usize::from(is_applicable(report, diagnostic));
        }
    }
    let mut counts: Vec<Count<'_>> = by_code.into_values().collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    counts
}

/// Aligned columns: count, code, `[*]` when every finding of the rule is fixable (`[-]` when
/// some are), name.
pub fn render_statistics(reports: &[FileReport]) -> String {
    let counts = counts(reports);
    let count_width = counts.iter().map(|c| c.count.to_string().len()).max().unwrap_or(1);
    let code_width = counts.iter().map(|c| c.code.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in &counts {
        let marker = match c.fixable {
            0 => "[ ]",
            n if n == c.count => "[*]",
            _ => "[-]",
        };
        out.push_str(&format!("{:>count_width$}\t{:<code_width$}\t{marker} {}\n", c.count, c.code, c.name));
    }
    out
}

pub fn render_statistics_json(reports: &[FileReport]) -> String {
    let values: Vec<_> = counts(reports)
        .iter()
        .map(|c| json!({ "code": c.code, "name": c.name, "count": c.count, "fixable": c.fixable }))
        .collect();
    let mut out = serde_json::to_string_pretty(&values).expect("JSON values serialise");
    out.push('\n');
    out
}
