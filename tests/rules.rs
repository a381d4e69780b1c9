//! One harness over the rule registry: every rule has a fixture whose flagged lines are exactly
//! its `# error: CODE` lines, a compiling query, a complete doc, titled fixes, and fixes that
//! parse and converge.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use culint::fix::Applicability;
use culint::hardware::HardwareFacts;
use culint::lint::{LintContext, LintSettings, RuleSet, compile_query, fix_text, lint};
use culint::parse::{error_count, parse};
use culint::rules::{DOC_HEADINGS, RULES, Rule};

/// A rule's fixtures: `tests/fixtures/CODE.py`, and every `.py` file under `tests/fixtures/CODE/`
/// (rules that report once per file, and cross-file layouts, need several files).
fn fixture_paths(rule: &Rule) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths = Vec::new();
    let single = root.join(format!("{}.py", rule.code));
    if single.is_file() {
        paths.push(single);
    }
    let mut stack = vec![root.join(rule.code)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// A fixture may declare the hardware its hardware-aware rule sees:
/// `# culint-test: gpus=2 gpu-memory-gib=24 cc=8.0`.
fn hardware_from_header(text: &str) -> Option<HardwareFacts> {
    let line = text.lines().find(|l| l.starts_with("# culint-test:"))?;
    let mut facts = HardwareFacts::default();
    for pair in line.trim_start_matches("# culint-test:").split_whitespace() {
        let (key, value) = pair.split_once('=').expect("key=value in culint-test header");
        match key {
            "gpus" => facts.gpus = Some(value.parse().expect("gpus is a number")),
            "gpu-memory-gib" => facts.memory_bytes = Some(value.parse::<u64>().expect("GiB number") << 30),
            "cc" => {
                let (major, minor) = value.split_once('.').expect("cc=MAJOR.MINOR");
                facts.compute_capability = Some((major.parse().unwrap(), minor.parse().unwrap()));
            }
            other => panic!("unknown culint-test key {other}"),
        }
    }
    Some(facts)
}

fn settings_for(rule: &Rule, text: &str) -> LintSettings {
    LintSettings {
        rules: RuleSet::from_selectors(&[rule.code]),
        hardware: hardware_from_header(text),
        ..Default::default()
    }
}

fn marked_lines(text: &str, code: &str) -> BTreeSet<usize> {
    lines_marked(text, "# error:", code)
}

/// Lines marked `# preview: CUL302`: flagged only with preview on, as preview findings.
fn preview_lines(text: &str, code: &str) -> BTreeSet<usize> {
    lines_marked(text, "# preview:", code)
}

fn lines_marked(text: &str, marker: &str, code: &str) -> BTreeSet<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.split_once(marker).is_some_and(|(_, codes)| codes.split([',', ' ']).any(|c| c.trim() == code))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn every_rule_flags_exactly_its_marked_lines() {
    let mut failures = Vec::new();
    for rule in RULES {
        let paths = fixture_paths(rule);
        assert!(
            !paths.is_empty(),
            "{} has no fixture (tests/fixtures/{}.py or tests/fixtures/{}/)",
            rule.code,
            rule.code,
            rule.code
        );
        let texts: Vec<String> = paths.iter().map(|p| std::fs::read_to_string(p).expect("fixture is UTF-8")).collect();
        assert!(texts.iter().any(|t| t.contains("# OK")), "{}: fixtures need `# OK` near-misses", rule.code);
        assert!(
            texts.iter().any(|t| !marked_lines(t, rule.code).is_empty()),
            "{}: no fixture marks a line with `# error: {}`",
            rule.code,
            rule.code
        );
        for (path, text) in paths.iter().zip(&texts) {
            let expected = marked_lines(text, rule.code);
            let tree = parse(text, None);
            let context = LintContext { path: Some(path), project: None, code_kind: None, preview: false };
            let diagnostics = lint(text, &tree, context, &settings_for(rule, text));
            let index = culint::text::LineIndex::new(text);
            let flagged: BTreeSet<usize> =
                diagnostics.iter().map(|d| index.location(text, d.range.start).row).collect();
            if flagged != expected {
                let missed: Vec<_> = expected.difference(&flagged).collect();
                let extra: Vec<_> = flagged.difference(&expected).collect();
                failures.push(format!("{}: missed lines {missed:?}, unexpected lines {extra:?}", path.display()));
            }
            // With preview on, the preview-marked lines are flagged too, and only they as previews.
            let previewed = lint(text, &tree, LintContext { preview: true, ..context }, &settings_for(rule, text));
            let preview_expected = preview_lines(text, rule.code);
            let flagged_as_preview: BTreeSet<usize> =
                previewed.iter().filter(|d| d.is_preview()).map(|d| index.location(text, d.range.start).row).collect();
            let flagged_with_preview: BTreeSet<usize> =
                previewed.iter().map(|d| index.location(text, d.range.start).row).collect();
            let expected_with_preview: BTreeSet<usize> = expected.union(&preview_expected).copied().collect();
            if flagged_as_preview != preview_expected || flagged_with_preview != expected_with_preview {
                failures.push(format!(
                    "{}: with preview, flagged {flagged_with_preview:?} (as preview {flagged_as_preview:?}), \
                     expected {expected_with_preview:?} (as preview {preview_expected:?})",
                    path.display()
                ));
            }
            for diagnostic in previewed.iter().filter(|d| d.is_preview()) {
                assert!(
                    !diagnostic.assumptions.iter().any(|a| a.trim().is_empty()),
                    "{}: an empty assumption",
                    rule.code
                );
            }
            for diagnostic in &diagnostics {
                assert_eq!(diagnostic.code, rule.code);
                if let Some(fix) = &diagnostic.fix {
                    assert!(!fix.title.trim().is_empty(), "{}: a fix without a title", rule.code);
                    assert!(!fix.edits.is_empty(), "{}: a fix without edits", rule.code);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_query_compiles_and_names_a_violation() {
    for rule in RULES {
        let query = compile_query(rule).unwrap_or_else(|e| panic!("{}: query does not compile: {e}", rule.code));
        assert!(query.capture_index_for_name("violation").is_some(), "{}: query has no @violation capture", rule.code);
        let header = format!("; {} {}", rule.code, rule.name);
        assert!(rule.query.starts_with(&header), "{}: query must start with `{header}`", rule.code);
    }
}

#[test]
fn every_doc_has_every_heading_in_order() {
    for rule in RULES {
        assert!(rule.doc.starts_with(&format!("# {} ({})", rule.name, rule.code)), "{}: doc title", rule.code);
        let mut from = 0;
        for heading in DOC_HEADINGS {
            let at = rule.doc[from..]
                .find(&format!("\n{heading}\n"))
                .unwrap_or_else(|| panic!("{}: doc lacks `{heading}` (or it is out of order)", rule.code));
            from += at + heading.len();
        }
    }
}

#[test]
fn registry_codes_and_names_are_unique_and_well_formed() {
    let mut codes = BTreeSet::new();
    let mut names = BTreeSet::new();
    for rule in RULES {
        assert!(
            rule.code.len() == 6 && rule.code.starts_with("CUL") && rule.code[3..].bytes().all(|b| b.is_ascii_digit())
        );
        assert!(
            rule.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{}: name must be kebab-case",
            rule.code
        );
        assert!(codes.insert(rule.code), "duplicate code {}", rule.code);
        assert!(names.insert(rule.name), "duplicate name {}", rule.name);
    }
    let mut sorted: Vec<_> = RULES.iter().map(|r| r.code).collect();
    sorted.sort();
    assert_eq!(sorted, RULES.iter().map(|r| r.code).collect::<Vec<_>>(), "RULES must be in code order");
}

#[test]
fn fixes_parse_converge_and_match_snapshots() {
    for rule in RULES {
        for path in fixture_paths(rule) {
            let text = std::fs::read_to_string(&path).expect("fixture is UTF-8");
            let settings = settings_for(rule, &text);
            let context = LintContext { path: Some(&path), project: None, code_kind: None, preview: false };
            let before_errors = error_count(&parse(&text, None));
            let outcome = fix_text(&text, context, &settings, Applicability::Unsafe);
            assert!(!outcome.refused_unparsable, "{}: a fix pass made the file parse worse", path.display());
            let after = parse(&outcome.text, None);
            assert!(error_count(&after) <= before_errors, "{}: fixed text has new syntax errors", path.display());
            assert_python_accepts(&outcome.text, &path);
            let again = fix_text(&outcome.text, context, &settings, Applicability::Unsafe);
            assert_eq!(again.fixed, 0, "{}: a second fix pass still changed the text", path.display());
            assert_eq!(again.text, outcome.text, "{}: fixes do not reach a fixed point", path.display());
            if outcome.fixed > 0 {
                let diff = similar::TextDiff::from_lines(&text, &outcome.text)
                    .unified_diff()
                    .context_radius(2)
                    .header("before", "after")
                    .to_string();
                let name = path.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")).unwrap();
                insta::assert_snapshot!(format!("fix__{}", name.display().to_string().replace(['/', '.'], "_")), diff);
            }
        }
    }
}

/// tree-sitter recovers from some errors that Python rejects (a block left without a body), so
/// fixed text is also checked by Python's own parser.
fn assert_python_accepts(text: &str, path: &Path) {
    let mut child = std::process::Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed by the fix tests");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write to python3");
    let output = child.wait_with_output().expect("python3 runs");
    assert!(
        output.status.success(),
        "{}: Python rejects the fixed text: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}
