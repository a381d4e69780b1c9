//! Snapshots of what people read: the full, concise and JSON output of `culint check` on one
//! fixture, the file after `--fix`, and the findings on the shipped examples.

mod cli_support;

use cli_support::{culint, project};

const REPORT: &str = include_str!("fixtures/cli/report.py");

fn run(args: &[&str]) -> (tempfile::TempDir, cli_support::Run) {
    let dir = project(&[("report.py", REPORT.as_bytes())]);
    let mut full_args = vec!["check", "--select", "CUL201,CUL202"];
    full_args.extend_from_slice(args);
    let run = culint(dir.path(), &full_args);
    (dir, run)
}

#[test]
fn full_output() {
    let (_dir, run) = run(&[]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn concise_output() {
    let (_dir, run) = run(&["--output-format", "concise"]);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn json_output() {
    let (dir, run) = run(&["--output-format", "json"]);
    let root = dir.path().canonicalize().unwrap();
    // The absolute file name differs per run; everything else must not.
    let stable =
        run.stdout.replace(&root.display().to_string(), "[TMP]").replace(&dir.path().display().to_string(), "[TMP]");
    insta::assert_snapshot!(stable);
}

#[test]
fn fixed_file() {
    let (dir, run) = run(&["--fix", "--unsafe-fixes"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    insta::assert_snapshot!(format!(
        "{}---\n{}",
        run.stdout,
        std::fs::read_to_string(dir.path().join("report.py")).unwrap()
    ));
}

/// The findings on `examples/`, which the README's first command shows a new user: a rule change
/// that adds or drops one of them shows up here, not only in the README's count.
#[test]
fn shipped_examples() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = culint(root, &["check", "examples/", "--output-format", "concise"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
}
