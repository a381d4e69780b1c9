//! The Python grammar's node kinds and field names, by numeric id, for the hottest paths.
//!
//! `Node::kind()` finds the length of the kind's C string and checks it is UTF-8 on every call,
//! and `child_by_field_name` searches the grammar's field names each time. Walks over a whole
//! tree ask these of every node, several times, and that cost rivals the walk itself; comparing
//! or passing a number is one load.

use std::sync::LazyLock;

use tree_sitter::Node;

use crate::parse::python;
use crate::text::{is_name_char, starts_like_a_name};

/// A set of named node kinds. A name can stand for several symbols (the grammar aliases
/// keywords such as `match` to `identifier`), so membership is by every symbol of that name.
pub struct KindSet {
    by_symbol: Vec<bool>,
}

impl KindSet {
    pub fn of(names: &[&str]) -> Self {
        let language = python();
        let by_symbol = (0..language.node_kind_count())
            .map(|id| {
                let id = id as u16;
                language.node_kind_is_named(id)
                    && language.node_kind_for_id(id).is_some_and(|kind| names.contains(&kind))
            })
            .collect();
        Self { by_symbol }
    }

    pub fn contains(&self, node: Node<'_>) -> bool {
        self.contains_kind(node.kind_id())
    }

    /// [`KindSet::contains`] for a node whose kind id is known: reading it costs a call into the
    /// C library, which a walk over every node makes once.
    pub fn contains_kind(&self, kind: u16) -> bool {
        self.by_symbol.get(usize::from(kind)).copied().unwrap_or(false)
    }
}

/// Declares a `LazyLock<KindSet>` per group of kinds.
macro_rules! kind_sets {
    ($($(#[$doc:meta])* $name:ident = [$($kind:literal),+];)+) => {
        $($(#[$doc])* pub static $name: LazyLock<KindSet> = LazyLock::new(|| KindSet::of(&[$($kind),+]));)+
    };
}

kind_sets! {
    CALL = ["call"];
    IMPORT = ["import_statement", "import_from_statement"];
    FUNCTION = ["function_definition"];
    CLASS = ["class_definition"];
    ASSIGNMENT = ["assignment"];
    /// Where the text of a program names things: CUDA and NCCL are looked for in these.
    NAME_OR_STRING = ["string_content", "identifier"];
    LOOP = ["for_statement", "while_statement"];
    /// Scopes a loop or a call belongs to.
    FUNCTION_BOUNDARY = ["function_definition", "class_definition", "lambda"];
    IDENTIFIER = ["identifier"];
    ATTRIBUTE = ["attribute"];
    ARGUMENT_LIST = ["argument_list"];
    KEYWORD_ARGUMENT = ["keyword_argument"];
    WITH = ["with_statement"];
    COMMENT = ["comment"];
    STRING = ["string"];
    STRING_CONTENT = ["string_content"];
    NUMBER = ["integer", "float"];
}

/// Words the lexer may take for a keyword rather than a name, where the grammar allows one:
/// every anonymous token of the grammar spelled like a name (`if`, the soft `match`, `print`,
/// `_`, `__future__`), and the keywords that the grammar makes named tokens of.
pub static KEYWORDS: LazyLock<foldhash::HashSet<String>> = LazyLock::new(|| {
    let language = python();
    let spelled_like_a_name = |kind: &str| starts_like_a_name(kind) && kind.chars().all(is_name_char);
    let anonymous = (0..language.node_kind_count() as u16)
        .filter(|&id| !language.node_kind_is_named(id))
        .filter_map(|id| language.node_kind_for_id(id))
        .filter(|kind| spelled_like_a_name(kind));
    // `none`, `true` and `false` are named nodes whose token is the keyword.
    anonymous.chain(["None", "True", "False"]).map(str::to_owned).collect()
});

/// Declares a `LazyLock<u16>` per field name of the grammar.
macro_rules! fields {
    ($($name:ident = $field:literal;)+) => {
        $(pub static $name: LazyLock<u16> = LazyLock::new(|| {
            python().field_id_for_name($field).map(|id| id.get()).expect(concat!("the grammar has a field ", $field))
        });)+
    };
}

fields! {
    FUNCTION_FIELD = "function";
    ATTRIBUTE_FIELD = "attribute";
    OBJECT_FIELD = "object";
    ARGUMENTS_FIELD = "arguments";
    NAME_FIELD = "name";
    VALUE_FIELD = "value";
}

/// Every field name of the grammar with its id, sorted by name.
static FIELD_IDS: LazyLock<Vec<(String, u16)>> = LazyLock::new(|| {
    let language = python();
    let mut fields: Vec<(String, u16)> = (1..=language.field_count() as u16)
        .filter_map(|id| language.field_name_for_id(id).map(|name| (name.to_owned(), id)))
        .collect();
    fields.sort();
    fields
});

/// The id of the grammar's field `name`.
pub fn field_id(name: &str) -> Option<u16> {
    let fields = &*FIELD_IDS;
    fields.binary_search_by(|(known, _)| known.as_str().cmp(name)).ok().map(|i| fields[i].1)
}

/// A node's child in a field, by the field's name. [`Node::child_by_field_name`] compares the
/// name with each of the grammar's field names in turn on every call, which the rules make
/// thousands of times per lint; this finds it in a sorted table.
pub trait FieldChild<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>>;
}

impl<'t> FieldChild<'t> for Node<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>> {
        self.child_by_field_id(field_id(name)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn fields_by_id_are_the_fields_by_name() {
        let tree = parse("model.fit(x, epochs=3)\n", None);
        let call = tree.root_node().child(0).and_then(|s| s.child(0)).unwrap();
        let function = call.child_by_field_id(*FUNCTION_FIELD).unwrap();
        assert_eq!(Some(function), call.child_by_field_name("function"));
        assert_eq!(call.child_by_field_id(*ARGUMENTS_FIELD), call.child_by_field_name("arguments"));
        assert_eq!(function.child_by_field_id(*OBJECT_FIELD), function.child_by_field_name("object"));
        assert_eq!(function.child_by_field_id(*ATTRIBUTE_FIELD), function.child_by_field_name("attribute"));
        let keyword = call.child_by_field_id(*ARGUMENTS_FIELD).unwrap().named_child(1).unwrap();
        assert_eq!(keyword.child_by_field_id(*NAME_FIELD).map(|n| n.kind()), Some("identifier"));
        assert_eq!(keyword.child_by_field_id(*VALUE_FIELD).map(|n| n.kind()), Some("integer"));
    }

    #[test]
    fn a_child_by_field_is_the_child_by_field_name_for_every_field_of_every_node() {
        let text = include_str!("../../examples/finetune_llm_ddp.py");
        let tree = parse(text, None);
        let names: Vec<String> = FIELD_IDS.iter().map(|(name, _)| name.clone()).collect();
        assert!(names.len() > 20, "{names:?}");
        let mut cursor = tree.walk();
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            for name in names.iter().map(String::as_str).chain(["no_such_field"]) {
                assert_eq!(node.field(name), node.child_by_field_name(name), "{name} of {node:?}");
            }
            stack.extend(node.children(&mut cursor));
        }
    }

    #[test]
    fn membership_agrees_with_kind_names_on_every_node() {
        let text = "import torch\nmatch = 1\nclass A:\n    def f(self):\n        for x in y: g(lambda: x)\nwhile z: s = 'cuda'\nwith a as b: pass\n";
        let tree = parse(text, None);
        let mut seen = 0;
        crate::parse::visit_nodes(&tree, |node| {
            for (set, names) in [
                (&*LOOP, &["for_statement", "while_statement"][..]),
                (&*FUNCTION_BOUNDARY, &["function_definition", "class_definition", "lambda"][..]),
                (&*NAME_OR_STRING, &["string_content", "identifier"][..]),
                (&*CALL, &["call"][..]),
                (&*WITH, &["with_statement"][..]),
            ] {
                assert_eq!(set.contains(node), node.is_named() && names.contains(&node.kind()), "{}", node.kind());
            }
            seen += 1;
            true
        });
        assert!(seen > 40);
    }
}
