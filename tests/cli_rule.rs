//! `culint rule` end to end, and the generated rule reference: `docs/rules/<CODE>.md`, its index
//! and the README's rule table must equal what the registry renders. Run with `UPDATE_DOCS=1` to
//! regenerate them (this test is the generator).

mod cli_support;

use std::path::Path;

use cli_support::{culint, project, repo_root};
use culint::cli::rule::{index_page, rules_table};
use culint::rules::RULES;

const README_START: &str = "<!-- section: rules -->\n";
const README_END: &str = "<!-- /section: rules -->";

fn updating() -> bool {
    std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1")
}

#[test]
fn rule_by_code_or_name_prints_its_page() {
    let dir = project(&[]);
    for rule in RULES {
        let by_code = culint(dir.path(), &["rule", rule.code]);
        assert_eq!(by_code.code, 0, "{}", by_code.stderr);
        assert!(by_code.stdout.starts_with(&format!("# {} {}\n", rule.code, rule.name)), "{}", by_code.stdout);
        for heading in culint::rules::DOC_HEADINGS {
            assert!(by_code.stdout.contains(heading), "{} lacks {heading}", rule.code);
        }
        let by_name = culint(dir.path(), &["rule", &rule.name.to_uppercase()]);
        assert_eq!(by_name.stdout, by_code.stdout);
    }
    let unknown = culint(dir.path(), &["rule", "CUL999"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("unknown rule `CUL999`"), "{}", unknown.stderr);
    assert_eq!(culint(dir.path(), &["rule"]).code, 2, "a rule or --all is required");
}

#[test]
fn all_rules_as_markdown_and_json() {
    let dir = project(&[]);
    let markdown = culint(dir.path(), &["rule", "--all"]);
    assert_eq!(markdown.code, 0);
    assert!(markdown.stdout.contains("| Code | Name | Default severity | Fix |"));
    for rule in RULES {
        assert!(markdown.stdout.contains(&format!("| [{code}]({code}.md) | {} |", rule.name, code = rule.code)));
        assert!(markdown.stdout.contains(&format!("\n# {} {}\n", rule.code, rule.name)));
    }
    let json = culint(dir.path(), &["rule", "--all", "--output-format", "json"]);
    let rules: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(rules.as_array().unwrap().len(), RULES.len());
    if let Some(first) = RULES.first() {
        let one = culint(dir.path(), &["rule", first.code, "--output-format", "json"]);
        let value: serde_json::Value = serde_json::from_str(&one.stdout).expect("JSON");
        assert_eq!(value["code"], first.code);
        assert_eq!(value["doc"], first.doc);
        assert_eq!(value, rules[0]);
    }
}

/// Compare `path` with `expected`, or write it under `UPDATE_DOCS=1`.
fn check_generated(path: &Path, expected: &str, stale: &mut Vec<String>) {
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, expected).unwrap();
    } else if std::fs::read_to_string(path).ok().as_deref() != Some(expected) {
        stale.push(path.display().to_string());
    }
}

#[test]
fn rule_reference_matches_the_registry() {
    let root = repo_root();
    let docs = root.join("docs/rules");
    let mut stale = Vec::new();
    let dir = project(&[]);
    for rule in RULES {
        let page = culint(dir.path(), &["rule", rule.code]).stdout;
        check_generated(&docs.join(format!("{}.md", rule.code)), &page, &mut stale);
    }
    check_generated(&docs.join("README.md"), &index_page(), &mut stale);

    // No page for a rule that no longer exists.
    let expected: Vec<String> =
        RULES.iter().map(|r| format!("{}.md", r.code)).chain(["README.md".to_owned()]).collect();
    for entry in std::fs::read_dir(&docs).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !expected.contains(&name) {
            if updating() {
                std::fs::remove_file(entry.path()).unwrap();
            } else {
                stale.push(format!("{} (no such rule)", entry.path().display()));
            }
        }
    }

    let readme_path = root.join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let start = readme.find(README_START).expect("README has the rules section") + README_START.len();
    let end = readme.find(README_END).expect("README closes the rules section");
    let section = readme_rules_section();
    if readme[start..end] != section {
        if updating() {
            std::fs::write(&readme_path, format!("{}{section}{}", &readme[..start], &readme[end..])).unwrap();
        } else {
            stale.push("README.md (rules section)".to_owned());
        }
    }
    assert!(
        stale.is_empty(),
        "out of date with the registry: {stale:?}; run `UPDATE_DOCS=1 cargo test --test cli_rule`"
    );
}

fn readme_rules_section() -> String {
    format!(
        "## Rules\n\n\
         Every rule has a page under [`docs/rules/`](docs/rules/README.md), the same text that \
         `culint rule <CODE>` prints and that hover shows in editors. This table is generated from \
         the rule registry.\n\n{}\n",
        rules_table("docs/rules/")
    )
}
