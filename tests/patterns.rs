//! culint matches the rules' patterns itself, in the model's walk (`culint::patterns`); tree-sitter's
//! own query cursor is the reference. On every fixture and example, and on generated scripts, each
//! rule's candidates are exactly the cursor's, in the same order.
//!
//! `CULINT_PATTERN_CORPUS=DIR cargo test --test patterns` adds every `.py` file under DIR (the
//! benchmark corpus of `bench/corpus.sh`, a real-world checkout).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use culint::lint::{candidates_by_rule, compile_query};
use culint::parse::parse;
use culint::patterns::Candidate;
use culint::rules::{RULES, Rule};
use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, Tree};

/// A candidate as plain data: the `@violation`'s kind and range, then each capture's name, kind
/// and range, sorted (tree-sitter and culint may list a match's captures in different orders;
/// rules look them up by name).
type Plain = (u16, (usize, usize), Vec<(String, u16, (usize, usize))>);

fn plain(candidate: &Candidate<'_>) -> Plain {
    let mut captures: Vec<_> =
        candidate.captures.iter().map(|(name, node)| ((*name).to_owned(), node.kind_id(), span(*node))).collect();
    captures.sort();
    (candidate.node.kind_id(), span(candidate.node), captures)
}

fn span(node: Node<'_>) -> (usize, usize) {
    (node.start_byte(), node.end_byte())
}

fn inside_error(node: Node<'_>) -> bool {
    let mut current = Some(node);
    while let Some(n) = current {
        if n.is_error() {
            return true;
        }
        current = n.parent();
    }
    false
}

/// What tree-sitter's cursor finds for `rule`: its matches with a `@violation`, outside syntax
/// errors, in source order (outer nodes first; a stable sort).
fn cursor_candidates(rule: &Rule, text: &str, tree: &Tree) -> Vec<Plain> {
    static QUERIES: LazyLock<Vec<Query>> =
        LazyLock::new(|| RULES.iter().map(|rule| compile_query(rule).expect("the query compiles")).collect());
    let query = &QUERIES[culint::rules::index_of(rule)];
    let violation = query.capture_index_for_name("violation").expect("@violation");
    let names = query.capture_names();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    let mut found = Vec::new();
    while let Some(m) = matches.next() {
        let Some(node) = m.captures().iter().find(|c| c.index == violation).map(|c| c.node) else { continue };
        if tree.root_node().has_error() && inside_error(node) {
            continue;
        }
        let mut captures: Vec<_> =
            m.captures().iter().map(|c| (names[c.index as usize].to_owned(), c.node.kind_id(), span(c.node))).collect();
        captures.sort();
        found.push((node.kind_id(), span(node), captures));
    }
    found.sort_by_key(|(_, (start, end), _)| (*start, std::cmp::Reverse(*end)));
    found
}

fn python_files(root: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            python_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "py") {
            into.push(path);
        }
    }
}

/// Texts to compare on: fixtures, examples, a corpus if one is named, and a generated script
/// that holds the shapes of all of them many times over (a large file is walked in parts).
fn texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    python_files(&root.join("tests/fixtures"), &mut paths);
    python_files(&root.join("examples"), &mut paths);
    paths.sort();
    let read = |paths: &[PathBuf]| -> Vec<(String, String)> {
        paths
            .iter()
            .filter_map(|path| Some((path.display().to_string(), std::fs::read_to_string(path).ok()?)))
            .collect()
    };
    let mut texts = read(&paths);
    let parses = |text: &String| !parse(text, None).root_node().has_error();
    let joined: Vec<&str> =
        texts.iter().map(|(_, text)| text).filter(|text| parses(text)).map(String::as_str).collect();
    let joined = joined.join("\n").repeat(3);
    texts.push(("every fixture and example, joined".to_owned(), joined));
    if let Some(corpus) = std::env::var_os("CULINT_PATTERN_CORPUS") {
        let mut more = Vec::new();
        python_files(Path::new(&corpus), &mut more);
        more.sort();
        texts.extend(read(&more));
    }
    texts
}

#[test]
fn each_rule_finds_what_tree_sitters_cursor_finds() {
    let mut compared = 0;
    for (name, text) in texts() {
        let tree = parse(&text, None);
        let every: Vec<&'static Rule> = RULES.to_vec();
        let together = candidates_by_rule(&text, &tree, &every);
        for (rule, found) in every.iter().zip(&together) {
            let expected = cursor_candidates(rule, &text, &tree);
            let ours: Vec<Plain> = found.iter().map(plain).collect();
            assert_eq!(ours, expected, "{} in {name}", rule.code);
            // Alone, the rule finds the same.
            let alone: Vec<Plain> = candidates_by_rule(&text, &tree, &[rule])[0].iter().map(plain).collect();
            assert_eq!(alone, ours, "{} alone in {name}", rule.code);
            compared += ours.len();
        }
    }
    assert!(compared > 5000, "only {compared} candidates compared");
}

/// Matches inside a region the parser could not read are left out; the rest are kept.
#[test]
fn matches_inside_syntax_errors_are_left_out() {
    let text = "import torch\nloss.backward()\nfor x in (:\n    loss.backward() +* )\n";
    let tree = parse(text, None);
    assert!(tree.root_node().has_error());
    let rule = culint::rules::by_code("CUL302").expect("CUL302");
    let found = candidates_by_rule(text, &tree, &[rule]);
    assert_eq!(found[0].len(), 1);
    assert_eq!(found[0][0].node.start_position().row, 1);
}

/// No rule, no candidates.
#[test]
fn no_rules_have_no_candidates() {
    let text = "import torch\ntorch.cuda.empty_cache()\n";
    assert!(candidates_by_rule(text, &parse(text, None), &[]).is_empty());
}
