//! Environment variables that the script sets for its own process: `os.environ[K] = v`,
//! `os.environ.setdefault(K, v)`, `os.environ.update({K: v})` / `update(K=v)` and
//! `os.putenv(K, v)`, reached through any import (`from os import environ`, `import os as o`).
//! Only literal names count: a key computed at run time cannot be judged.

use tree_sitter::Node;

use super::{Model, ast};
use crate::grammar_ids::FieldChild;

/// How a variable is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvWrite {
    /// `os.environ[K] = v`
    Subscript,
    /// `os.environ.setdefault(K, v)`
    SetDefault,
    /// `os.environ.update({K: v})` or `os.environ.update(K=v)`
    Update,
    /// `os.putenv(K, v)`: changes the C environment only, so `os.environ` does not see it.
    Putenv,
}

/// One variable set by one statement.
#[derive(Clone, Copy, Debug)]
pub struct EnvSetting<'a> {
    /// The assignment or call that sets it: where findings are reported.
    pub node: Node<'a>,
    pub name: &'a str,
    /// The string literal (or keyword name) that holds the variable's name.
    pub name_node: Node<'a>,
    /// The value expression, when there is one to read.
    pub value: Option<Node<'a>>,
    pub how: EnvWrite,
}

impl<'a> EnvSetting<'a> {
    /// The value when it is a plain string literal.
    pub fn literal_value(&self, model: &Model<'a>) -> Option<String> {
        self.value.and_then(|v| ast::string_value(v, model.text))
    }

    /// The statement that holds the setting.
    pub fn statement(&self) -> Node<'a> {
        ast::statement_of(self.node)
    }
}

const ENVIRON: &[&str] = &["os.environ"];
const PUTENV: &[&str] = &["os.putenv"];

impl<'a> Model<'a> {
    /// The variables an assignment or call sets in this process's environment; empty for
    /// anything else.
    pub fn env_settings(&self, node: Node<'a>) -> Vec<EnvSetting<'a>> {
        match node.kind() {
            "assignment" => self.subscript_setting(node).into_iter().collect(),
            "call" => self.call_settings(node),
            _ => Vec::new(),
        }
    }

    /// Whether the file hides every GPU from its own process before anything else runs: a
    /// module-level `os.environ["CUDA_VISIBLE_DEVICES"] = ""` (or `"-1"`), as CPU-only test
    /// modules do. Such a file uses no CUDA, whatever it names. A setting inside a function is
    /// left out: it may be for a child process, or run after the GPU was taken.
    pub fn hides_every_gpu(&self) -> bool {
        self.top_level().iter().filter_map(|statement| statement.named_child(0)).any(|expression| {
            self.env_settings(expression).iter().any(|setting| {
                setting.name == "CUDA_VISIBLE_DEVICES"
                    && setting.how != EnvWrite::Putenv
                    && setting.literal_value(self).is_some_and(|value| matches!(value.trim(), "" | "-1"))
            })
        })
    }

    fn subscript_setting(&self, assignment: Node<'a>) -> Option<EnvSetting<'a>> {
        let left = assignment.field("left").filter(|l| l.kind() == "subscript")?;
        let environ = left.field("value")?;
        if !self.resolves_to(environ, ENVIRON) {
            return None;
        }
        let key = left.field("subscript")?;
        let name = self.literal_name(key)?;
        let value = assignment.field("right").filter(|r| r.kind() != "assignment");
        Some(EnvSetting { node: assignment, name, name_node: key, value, how: EnvWrite::Subscript })
    }

    fn call_settings(&self, call: Node<'a>) -> Vec<EnvSetting<'a>> {
        let Some(callee) = ast::callee(call) else { return Vec::new() };
        let args = ast::positional_args(call);
        let pair = |how| {
            let key = args.first().copied()?;
            let name = self.literal_name(key)?;
            Some(EnvSetting { node: call, name, name_node: key, value: args.get(1).copied(), how })
        };
        if self.resolves_to(callee, PUTENV) {
            return pair(EnvWrite::Putenv).into_iter().collect();
        }
        if callee.kind() != "attribute" || !callee.field("object").is_some_and(|o| self.resolves_to(o, ENVIRON)) {
            return Vec::new();
        }
        match callee.field("attribute").map(|a| self.node_text(a)) {
            Some("setdefault") => pair(EnvWrite::SetDefault).into_iter().collect(),
            Some("update") => self.update_settings(call, &args),
            _ => Vec::new(),
        }
    }

    fn update_settings(&self, call: Node<'a>, args: &[Node<'a>]) -> Vec<EnvSetting<'a>> {
        let mut settings = Vec::new();
        if let Some(dictionary) = args.first().filter(|a| a.kind() == "dictionary") {
            let mut cursor = dictionary.walk();
            for pair in dictionary.named_children(&mut cursor).filter(|p| p.kind() == "pair") {
                let Some(key) = pair.field("key") else { continue };
                let Some(name) = self.literal_name(key) else { continue };
                let value = pair.field("value");
                settings.push(EnvSetting { node: call, name, name_node: key, value, how: EnvWrite::Update });
            }
        }
        for keyword in ast::keyword_args(call) {
            let (Some(key), value) = (keyword.field("name"), keyword.field("value")) else {
                continue;
            };
            let name = self.node_text(key);
            settings.push(EnvSetting { node: call, name, name_node: key, value, how: EnvWrite::Update });
        }
        settings
    }

    /// The text of a plain string literal that can be a variable name, borrowed from the source.
    fn literal_name(&self, key: Node<'a>) -> Option<&'a str> {
        if key.kind() != "string" {
            return None;
        }
        let mut cursor = key.walk();
        let mut contents =
            key.named_children(&mut cursor).filter(|c| c.kind() != "string_start" && c.kind() != "string_end");
        let content = contents.next().filter(|c| c.kind() == "string_content")?;
        let prefix = self.node_text(key).split(['"', '\'']).next().unwrap_or_default();
        if contents.next().is_some() || prefix.contains(['b', 'B']) {
            // `b"..."` is bytes, which `os.environ` rejects.
            return None;
        }
        let name = self.node_text(content);
        name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_').then_some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::EnvWrite;
    use crate::lint::LintContext;
    use crate::parse::parse;
    use crate::semantic::Model;

    /// `(name, value text, how)` of every setting in the source, in order.
    fn settings(source: &str) -> Vec<(String, Option<String>, EnvWrite)> {
        let tree = parse(source, None);
        let model = Model::new(source, &tree, LintContext::default());
        let mut nodes: Vec<_> = model.all_calls().to_vec();
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.kind() == "assignment" {
                nodes.push(node);
            }
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
        nodes.sort_by_key(|n| n.start_byte());
        nodes
            .into_iter()
            .flat_map(|n| model.env_settings(n))
            .map(|s| (s.name.to_owned(), s.value.map(|v| model.node_text(v).to_owned()), s.how))
            .collect()
    }

    #[test]
    fn every_way_of_setting_a_variable_resolves_through_imports() {
        let source = r#"
import os as o
from os import environ as env, putenv
o.environ["A"] = "1"
env.setdefault("B", "2")
o.environ.update({"C": "3"}, D="4")
putenv("E", "5")
o.putenv("F", x)
"#;
        let found = settings(source);
        let names: Vec<_> = found.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["A", "B", "C", "D", "E", "F"]);
        assert_eq!(found[1].2, EnvWrite::SetDefault);
        assert_eq!(found[3], ("D".to_owned(), Some("\"4\"".to_owned()), EnvWrite::Update));
        assert_eq!(found[5].1.as_deref(), Some("x"));
    }

    #[test]
    fn copies_reads_computed_names_and_bare_spellings_are_not_settings() {
        let source = r#"
import os
env = dict(os.environ)
env["A"] = "1"
os.environ[name] = "1"
os.environ[f"CUDA_{x}"] = "1"
os.environ[b"B"] = "1"
x = os.environ["C"]
os.environ.get("D", "1")
environ["E"] = "1"
"#;
        assert_eq!(settings(source), Vec::new());
    }
}
