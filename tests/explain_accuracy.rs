//! Top-1 accuracy of `explain` on real error texts, and silence on ordinary tracebacks.
//!
//! Three sets, kept apart from the fixtures the entries were tuned on:
//! - `bench/explain_accuracy/gpu_labels.tsv`: the logs produced on an H200 by
//!   `bench/explain_errors/run.sh` (tests/fixtures/explain/gpu/), each with the entry it must be
//!   explained as first;
//! - `bench/explain_accuracy/public.jsonl`: short error texts quoted from public issue threads,
//!   each with its URL and label;
//! - `bench/explain_accuracy/ordinary/*.log`: tracebacks of ordinary Python errors, which must
//!   match nothing (as must the `none` lines of the GPU set).
//!
//! `bench/explain_accuracy/score.py` prints the same figures through the CLI.

use std::path::{Path, PathBuf};

use culint::explain::{ExplainOptions, explain};
use culint::knowledge::builtin;

/// The target for both sets.
const TARGET: f64 = 0.97;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn top1(text: &str) -> Option<String> {
    explain(text, builtin(), &ExplainOptions::default()).findings.first().map(|f| f.entry.id.clone())
}

/// `(name, expected, got)` for each case; `expected` is `None` for texts that must not match.
fn score(cases: &[(String, Option<String>, String)]) -> (f64, Vec<String>) {
    let mut misses = Vec::new();
    for (name, expected, text) in cases {
        let got = top1(text);
        if &got != expected {
            misses.push(format!("{name}: expected {expected:?}, got {got:?}"));
        }
    }
    let right = cases.len() - misses.len();
    (right as f64 / cases.len().max(1) as f64, misses)
}

fn gpu_cases() -> Vec<(String, Option<String>, String)> {
    let labels = std::fs::read_to_string(root().join("bench/explain_accuracy/gpu_labels.tsv")).unwrap();
    labels
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (file, label) = line.split_once('\t').unwrap_or_else(|| panic!("bad label line `{line}`"));
            let path = root().join("tests/fixtures/explain/gpu").join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (file.to_owned(), (label != "none").then(|| label.to_owned()), text)
        })
        .collect()
}

fn public_cases() -> Vec<(String, Option<String>, String)> {
    let lines = std::fs::read_to_string(root().join("bench/explain_accuracy/public.jsonl")).unwrap();
    lines
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let url = case["url"].as_str().unwrap();
            assert!(url.starts_with("https://github.com/"), "every public text names its thread: {line}");
            (
                format!("#{} {url}", case["n"]),
                Some(case["label"].as_str().unwrap().to_owned()),
                case["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ordinary_cases(dir: &Path) -> Vec<(String, Option<String>, String)> {
    let mut cases: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .map(|path| (path.display().to_string(), None, std::fs::read_to_string(&path).unwrap()))
        .collect();
    cases.sort();
    cases
}

#[test]
fn gpu_produced_errors_are_explained_as_labelled() {
    let cases = gpu_cases();
    assert!(cases.iter().filter(|(_, label, _)| label.is_some()).count() >= 15, "the GPU set shrank");
    let (accuracy, misses) = score(&cases);
    assert!(
        accuracy >= TARGET,
        "top-1 accuracy {:.1}% on the GPU set; misses:\n{}",
        accuracy * 100.0,
        misses.join("\n")
    );
}

#[test]
fn public_reports_are_explained_as_labelled() {
    let cases = public_cases();
    assert!(cases.len() >= 60, "the issue asks for at least 60 public texts, found {}", cases.len());
    let (accuracy, misses) = score(&cases);
    assert!(
        accuracy >= TARGET,
        "top-1 accuracy {:.1}% on {} public texts; misses:\n{}",
        accuracy * 100.0,
        cases.len(),
        misses.join("\n")
    );
}

#[test]
fn ordinary_tracebacks_match_nothing() {
    let cases = ordinary_cases(&root().join("bench/explain_accuracy/ordinary"));
    assert!(cases.len() >= 20, "the ordinary set shrank");
    let (_, misses) = score(&cases);
    assert!(misses.is_empty(), "ordinary tracebacks matched:\n{}", misses.join("\n"));
}
