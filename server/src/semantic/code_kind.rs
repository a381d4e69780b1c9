//! What the code is: a test, an example, a training or evaluation entry point, or library code.
//!
//! Resource rules speak where training or evaluation really runs. A test is held only to what a
//! test can cause: its fp32 reference loop, its two-step smoke run on tiny tensors or its
//! `torch.load` of a fixture is not a memory bug, while a deprecated API or a malformed allocator
//! setting breaks it as it breaks anything else.
//!
//! The judgement is made per file (from its path and its imports, or from the configuration's
//! `code-kind` for its path) and per function (a pytest test, a `unittest.TestCase` method or a
//! pytest fixture is test code in any file).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

use tree_sitter::Node;

use super::{Model, ast};
use crate::grammar_ids::FieldChild;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// pytest or unittest code, and what `conftest.py` sets up for it.
    Test,
    /// A script under `examples/`, `tutorials/`, `scripts/` or `recipes/`: code people copy.
    Example,
    /// A script that runs when executed (`if __name__ == "__main__":`, or statements at module
    /// level that train).
    EntryPoint,
    /// Anything else: model definitions, framework internals.
    Library,
}

impl CodeKind {
    pub const NAMES: &[&str] = &["test", "example", "entry-point", "library"];

    pub fn as_str(self) -> &'static str {
        match self {
            CodeKind::Test => "test",
            CodeKind::Example => "example",
            CodeKind::EntryPoint => "entry-point",
            CodeKind::Library => "library",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "test" => Some(CodeKind::Test),
            "example" => Some(CodeKind::Example),
            "entry-point" => Some(CodeKind::EntryPoint),
            "library" => Some(CodeKind::Library),
            _ => None,
        }
    }
}

/// What a file was judged to be, and why (shown by `culint check --show-context` and in the JSON
/// output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    pub kind: CodeKind,
    pub reason: String,
}

/// Folders whose Python files are tests when they use a test framework.
const TEST_FOLDERS: &[&str] = &["tests", "test", "testing", "unittests"];
/// Folders under a test folder whose files are test inputs, not tests (a linter's own fixtures).
const TEST_INPUT_FOLDERS: &[&str] = &["fixtures", "data", "resources", "assets"];
const EXAMPLE_FOLDERS: &[&str] = &["examples", "example", "tutorials", "tutorial", "scripts", "recipes", "notebooks"];

/// The judgement of a file from its path and text, before any configured override.
pub fn judge(path: Option<&Path>, text: &str) -> Judgement {
    let name = path.and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or_default();
    let stem = name.strip_suffix(".py").unwrap_or(name);
    if name == "conftest.py" {
        return judgement(CodeKind::Test, "`conftest.py` sets up pytest tests");
    }
    if stem.starts_with("test_") || stem.ends_with("_test") {
        return judgement(CodeKind::Test, format!("pytest collects `{name}` by its name"));
    }
    let folders: Vec<&str> = path
        .and_then(Path::parent)
        .map(|p| p.components().filter_map(|c| if let Component::Normal(s) = c { s.to_str() } else { None }).collect())
        .unwrap_or_default();
    let test_folder = folders.iter().rposition(|f| TEST_FOLDERS.contains(f));
    if let Some(i) = test_folder
        && !folders[i + 1..].iter().any(|f| TEST_INPUT_FOLDERS.contains(f))
    {
        if uses_a_test_framework(text) {
            return judgement(CodeKind::Test, format!("it is in `{}/` and imports a test framework", folders[i]));
        }
        // A script that the test suite launches (`torchrun tests/training/lora_tp.py`) lives beside
        // the suite's `conftest.py`.
        let depth = folders.len() - i - 1;
        let test_root = path.and_then(Path::parent).and_then(|p| p.ancestors().nth(depth));
        if test_root.is_some_and(has_conftest) {
            return judgement(CodeKind::Test, format!("it is in a test suite (`{}/` has a `conftest.py`)", folders[i]));
        }
    }
    if let Some(folder) = folders.iter().rev().find(|f| EXAMPLE_FOLDERS.contains(f)) {
        return judgement(CodeKind::Example, format!("it is in `{folder}/`"));
    }
    if text.contains("__name__ == \"__main__\"") || text.contains("__name__ == '__main__'") {
        return judgement(CodeKind::EntryPoint, "it runs as a script (`if __name__ == \"__main__\":`)");
    }
    judgement(CodeKind::Library, "it defines code for others to call and does not run as a script")
}

/// Whether `folder` holds a `conftest.py`, asked of the file system once per folder.
fn has_conftest(folder: &Path) -> bool {
    static KNOWN: LazyLock<Mutex<HashMap<PathBuf, bool>>> = LazyLock::new(Default::default);
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    *known.entry(folder.to_path_buf()).or_insert_with(|| folder.join("conftest.py").is_file())
}

fn judgement(kind: CodeKind, reason: impl Into<String>) -> Judgement {
    Judgement { kind, reason: reason.into() }
}

/// `import pytest`, `import unittest` or `from unittest import ...` at the start of a line.
fn uses_a_test_framework(text: &str) -> bool {
    text.lines().any(|line| {
        ["import pytest", "from pytest", "import unittest", "from unittest"]
            .iter()
            .any(|start| line.starts_with(start) && line[start.len()..].starts_with([' ', '.', '\n', '\r']))
            || line == "import pytest"
            || line == "import unittest"
    })
}

/// The judgement the configuration's `code-kind` makes for a path.
pub fn configured(kind: CodeKind) -> Judgement {
    judgement(kind, "the configuration's `code-kind` says so for its path")
}

impl<'a> Model<'a> {
    /// Whether `node` is test code: the file is a test, or `node` lies in a pytest test, a pytest
    /// fixture, a `Test...` class or a `unittest.TestCase` subclass.
    pub fn is_test_code(&self, node: Node<'a>) -> bool {
        if self.file_code_kind() == CodeKind::Test {
            return true;
        }
        // Whether one of the outermost test functions or classes holds the node (not being it).
        let spans = self.test_spans.get_or_init(|| self.outermost_test_spans());
        let start = node.start_byte();
        let at = spans.partition_point(|(span_start, _, _)| *span_start <= start);
        at.checked_sub(1).is_some_and(|i| {
            let (_, end, id) = spans[i];
            node.end_byte() <= end && node.id() != id
        })
    }

    /// The byte ranges (and node ids) of the test functions and classes that no other one holds,
    /// in source order: rules ask [`Model::is_test_code`] of every candidate.
    fn outermost_test_spans(&self) -> Vec<(usize, usize, usize)> {
        let functions = self.walked.functions.iter().filter(|f| self.is_test_function(**f));
        let classes = self.walked.classes.iter().filter(|c| self.is_test_class(**c));
        let mut tests: Vec<Node<'a>> = functions.chain(classes).copied().collect();
        tests.sort_by_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for test in tests {
            if spans.last().is_none_or(|(_, end, _)| test.start_byte() >= *end) {
                spans.push((test.start_byte(), test.end_byte(), test.id()));
            }
        }
        spans
    }

    /// What the whole file is: the configuration's `code-kind`, else culint's judgement, made
    /// once per model (it reads the whole text, and rules ask at every candidate).
    pub fn file_code_kind(&self) -> CodeKind {
        *self
            .file_kind
            .get_or_init(|| self.context.code_kind.unwrap_or_else(|| judge(self.context.path, self.text).kind))
    }

    fn is_test_function(&self, function: Node<'a>) -> bool {
        let decorators = self.decorators(function);
        let decorated = |prefix: &str| decorators.iter().any(|d| self.node_text(*d).starts_with(prefix));
        if decorated("pytest.fixture") {
            return true;
        }
        let Some(name) = ast::function_name(function, self.text) else { return false };
        name.starts_with("test_")
            && (decorated("pytest.")
                || self
                    .method_class(function)
                    .and_then(|class| class.field("name"))
                    .is_some_and(|class| self.node_text(class).starts_with("Test")))
    }

    /// `class TestX:` (pytest collects it) or `class X(unittest.TestCase)` and its kin.
    fn is_test_class(&self, class: Node<'a>) -> bool {
        let named_for_pytest = class.field("name").is_some_and(|name| self.node_text(name).starts_with("Test"));
        let test_case = class.field("superclasses").is_some_and(|bases| {
            let mut cursor = bases.walk();
            bases.named_children(&mut cursor).any(|base| {
                let text = self.node_text(base);
                text.rsplit('.').next().is_some_and(|last| last.ends_with("TestCase"))
            })
        });
        named_for_pytest || test_case
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(path: &str, text: &str) -> CodeKind {
        judge(Some(Path::new(path)), text).kind
    }

    #[test]
    fn files_are_judged_by_name_folder_and_imports() {
        assert_eq!(kind("pkg/tests/test_lora.py", ""), CodeKind::Test);
        assert_eq!(kind("pkg/model_test.py", ""), CodeKind::Test);
        assert_eq!(kind("tests/conftest.py", ""), CodeKind::Test);
        assert_eq!(kind("tests/testing_common.py", "import pytest\n"), CodeKind::Test);
        assert_eq!(kind("tests/testing_common.py", "import pytestish\n"), CodeKind::Library);
        // A linter's own inputs under tests/fixtures are not tests.
        assert_eq!(kind("tests/fixtures/CUL402.py", "import pytest\n"), CodeKind::Library);
        assert_eq!(kind("examples/nlp/train.py", "import torch\n"), CodeKind::Example);
        assert_eq!(kind("train.py", "if __name__ == \"__main__\":\n    main()\n"), CodeKind::EntryPoint);
        assert_eq!(kind("pkg/modeling.py", "class A: pass\n"), CodeKind::Library);
    }

    #[test]
    fn a_script_beside_the_suites_conftest_is_a_test() {
        let root = std::env::temp_dir().join(format!("culint-code-kind-{}", std::process::id()));
        for (suite, has_conftest) in [("with", true), ("without", false)] {
            let training = root.join(suite).join("tests/training");
            std::fs::create_dir_all(&training).unwrap();
            if has_conftest {
                std::fs::write(root.join(suite).join("tests/conftest.py"), "").unwrap();
            }
            let expected = if has_conftest { CodeKind::Test } else { CodeKind::Library };
            assert_eq!(judge(Some(&training.join("lora_tp.py")), "import torch\n").kind, expected, "{suite}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for name in CodeKind::NAMES {
            assert_eq!(CodeKind::parse(name).map(CodeKind::as_str), Some(*name));
        }
    }
}
