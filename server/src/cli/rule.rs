//! `culint rule CUL201 | missing-set-device | --all`: the documentation of the rules, rendered
//! from the registry. The same pages are committed under `docs/rules/` (a test keeps them equal).

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::rules::{RULES, Rule};

use super::output::rule_url;

#[derive(clap::Args)]
pub struct RuleArgs {
    /// Rule code (`CUL201`) or name (`empty-cache-in-step-loop`).
    #[arg(value_name = "RULE", required_unless_present = "all", conflicts_with = "all")]
    rule: Option<String>,
    /// Every rule: a table, then each rule's page.
    #[arg(long)]
    all: bool,
    #[arg(long, value_enum, default_value_t = RuleFormat::Markdown)]
    output_format: RuleFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RuleFormat {
    Markdown,
    Json,
}

pub fn run(args: RuleArgs) -> ExitCode {
    let text = if args.all {
        match args.output_format {
            RuleFormat::Markdown => all_rules_markdown(),
            RuleFormat::Json => json_text(&Value::Array(RULES.iter().map(|rule| rule_json(rule)).collect())),
        }
    } else {
        let selector = args.rule.unwrap_or_default();
        let Some(rule) = find_rule(&selector) else {
            eprintln!(
                "error: unknown rule `{selector}`; give a code such as `CUL201` or a rule name (`culint rule --all` lists them)"
            );
            return ExitCode::from(super::EXIT_USAGE);
        };
        match args.output_format {
            RuleFormat::Markdown => rule_page(rule),
            RuleFormat::Json => json_text(&rule_json(rule)),
        }
    };
    print!("{text}");
    ExitCode::SUCCESS
}

/// A rule by code or name, ignoring case.
pub fn find_rule(selector: &str) -> Option<&'static Rule> {
    let selector = selector.trim();
    RULES
        .iter()
        .copied()
        .find(|rule| rule.code.eq_ignore_ascii_case(selector) || rule.name.eq_ignore_ascii_case(selector))
}

/// The text under a `## Heading` of a rule doc, up to the next heading of the same level.
pub fn doc_section<'d>(doc: &'d str, heading: &str) -> Option<&'d str> {
    let start = doc.find(heading)? + heading.len();
    let rest = &doc[start..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// One rule's page: the title, a line of facts, then its doc. This is `culint rule CODE` and
/// `docs/rules/CODE.md`.
pub fn rule_page(rule: &Rule) -> String {
    let mut facts =
        vec![format!("Default severity: {}", rule.severity.as_str()), format!("Fix: {}", rule.fix.as_str())];
    if let Some(knowledge) = rule.knowledge {
        facts.push(format!("Knowledge: `{knowledge}`"));
    }
    if rule.needs_hardware {
        facts.push("Needs hardware facts (`--probe`, `--gpus`, `--gpu-memory`)".to_owned());
    }
    if rule.deprecated {
        facts.push("Reports a deprecated API".to_owned());
    }
    format!("# {} {}\n\n{}.\n\n{}\n", rule.code, rule.name, facts.join(" · "), doc_body(rule.doc))
}

/// A rule doc without its own top-level title, which the page replaces with a uniform one.
fn doc_body(doc: &str) -> &str {
    let doc = doc.trim();
    match doc.strip_prefix("# ") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, body)| body.trim_start()),
        None => doc,
    }
}

/// A markdown table of every rule, linking each to its page under `link_base`.
pub fn rules_table(link_base: &str) -> String {
    let mut out = String::from("| Code | Name | Default severity | Fix |\n|---|---|---|---|\n");
    for rule in RULES {
        out.push_str(&format!(
            "| [{code}]({link_base}{code}.md) | {} | {} | {} |\n",
            rule.name,
            rule.severity.as_str(),
            rule.fix.as_str(),
            code = rule.code
        ));
    }
    out
}

/// `docs/rules/README.md`: the index of the rule pages.
pub fn index_page() -> String {
    format!(
        "# culint rules\n\nGenerated from the rule registry (`culint rule --all`); do not edit by hand.\n\n{}",
        rules_table("")
    )
}

/// `culint rule --all`: the table, then every page.
pub fn all_rules_markdown() -> String {
    let mut out = format!("# culint rules\n\n{}", rules_table(""));
    for rule in RULES {
        out.push('\n');
        out.push_str(&rule_page(rule));
    }
    out
}

fn rule_json(rule: &Rule) -> Value {
    json!({
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "fix": rule.fix.as_str(),
        "knowledge": rule.knowledge,
        "deprecated": rule.deprecated,
        "needs_hardware": rule.needs_hardware,
        "url": rule_url(rule.code),
        "doc": rule.doc,
    })
}

fn json_text(value: &Value) -> String {
    let mut out = serde_json::to_string_pretty(value).expect("JSON values serialise");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_replace_the_doc_title() {
        assert_eq!(doc_body("# x (CUL1)\n\n## What it does\nX"), "## What it does\nX");
        assert_eq!(doc_body("## What it does\nX\n"), "## What it does\nX");
    }

    #[test]
    fn doc_sections_stop_at_the_next_heading() {
        let doc = "## What it does\nFinds X.\n\n### Detail\nmore\n## Why is this bad?\nY";
        assert_eq!(doc_section(doc, "## What it does"), Some("Finds X.\n\n### Detail\nmore"));
        assert_eq!(doc_section(doc, "## Why is this bad?"), Some("Y"));
        assert_eq!(doc_section(doc, "## Example"), None);
    }
}
