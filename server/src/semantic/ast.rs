//! Small, pure questions about tree-sitter-python nodes that every rule asks.

use tree_sitter::{Node, Tree};

use crate::grammar_ids::{self, FieldChild};

/// The module's statements, in order. Reaching each through a cursor costs hundreds of
/// instructions in a large module (the cursor climbs through the grammar's hidden repetition
/// nodes), so a lint lists them once and shares the list.
pub fn top_level_statements(tree: &Tree) -> Vec<Node<'_>> {
    let root = tree.root_node();
    let mut cursor = root.walk();
    // Sized at once: grown step by step, the list of a large module is copied a dozen times.
    let mut statements = Vec::with_capacity(root.child_count() as usize);
    statements.extend(root.children(&mut cursor));
    statements
}

pub fn text<'a>(node: Node<'_>, source: &'a str) -> &'a str {
    &source[node.byte_range()]
}

/// The callee of a call: `f` in `f(x)`, `a.b.f` in `a.b.f(x)`.
pub fn callee(call: Node<'_>) -> Option<Node<'_>> {
    call.child_by_field_id(*grammar_ids::FUNCTION_FIELD)
}

/// The final name of a call's callee: `f` for `f(x)` and `a.b.f(x)`.
pub fn callee_name<'a>(call: Node<'_>, source: &'a str) -> Option<&'a str> {
    let function = callee(call)?;
    if grammar_ids::IDENTIFIER.contains(function) {
        Some(text(function, source))
    } else if grammar_ids::ATTRIBUTE.contains(function) {
        function.child_by_field_id(*grammar_ids::ATTRIBUTE_FIELD).map(|a| text(a, source))
    } else {
        None
    }
}

/// The object a method is called on: `opt` in `opt.step()`.
pub fn receiver(call: Node<'_>) -> Option<Node<'_>> {
    let function = callee(call)?;
    grammar_ids::ATTRIBUTE.contains(function).then(|| function.child_by_field_id(*grammar_ids::OBJECT_FIELD)).flatten()
}

pub fn arguments(call: Node<'_>) -> Option<Node<'_>> {
    call.child_by_field_id(*grammar_ids::ARGUMENTS_FIELD).filter(|a| grammar_ids::ARGUMENT_LIST.contains(*a))
}

pub fn positional_args(call: Node<'_>) -> Vec<Node<'_>> {
    let Some(args) = arguments(call) else { return Vec::new() };
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment" | "list_splat" | "dictionary_splat"))
        .collect()
}

pub fn keyword_args(call: Node<'_>) -> Vec<Node<'_>> {
    let Some(args) = arguments(call) else { return Vec::new() };
    let mut cursor = args.walk();
    args.named_children(&mut cursor).filter(|a| grammar_ids::KEYWORD_ARGUMENT.contains(*a)).collect()
}

/// The value passed as `name=` to a call.
pub fn keyword_arg<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    keyword_args(call).into_iter().find_map(|kw| {
        let key = kw.child_by_field_id(*grammar_ids::NAME_FIELD)?;
        (text(key, source) == name).then(|| kw.child_by_field_id(*grammar_ids::VALUE_FIELD)).flatten()
    })
}

/// Whether the call passes `**kwargs`, which may hold any keyword.
pub fn has_dictionary_splat(call: Node<'_>) -> bool {
    let Some(args) = arguments(call) else { return false };
    let mut cursor = args.walk();
    args.named_children(&mut cursor).any(|a| a.kind() == "dictionary_splat")
}

/// The value of a plain string literal (no interpolation, no concatenation).
pub fn string_value(node: Node<'_>, source: &str) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let mut value = String::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "string_start" | "string_end" => {}
            "string_content" | "escape_sequence" => value.push_str(text(child, source)),
            _ => return None,
        }
    }
    Some(value)
}

/// `False`, `None` or `0`: a switch that is literally off.
pub fn is_literal_off(node: Node<'_>, source: &str) -> bool {
    match node.kind() {
        "false" | "none" => true,
        "integer" => text(node, source) == "0",
        "string" => {
            string_value(node, source).is_some_and(|v| matches!(v.as_str(), "" | "no" | "fp32" | "32" | "32-true"))
        }
        _ => false,
    }
}

/// A literal constant, as opposed to a value the user can switch from a flag or config.
pub fn is_literal(node: Node<'_>) -> bool {
    matches!(node.kind(), "true" | "false" | "none" | "integer" | "float" | "string" | "concatenated_string")
}

pub fn is_function_boundary(node: Node<'_>) -> bool {
    grammar_ids::FUNCTION_BOUNDARY.contains(node)
}

/// Whether a named node in the subtree of `node` (the node included) satisfies `found`, not
/// looking inside nested functions, classes or lambdas. A cursor walk: it allocates nothing per
/// node, where collecting children does.
pub fn any_in_scope<'t>(node: Node<'t>, mut found: impl FnMut(Node<'t>) -> bool) -> bool {
    let mut cursor = node.walk();
    // Counted here: the cursor's own depth is recomputed from its whole stack on each call.
    let mut depth = 0usize;
    loop {
        let current = cursor.node();
        if current.is_named() && found(current) {
            return true;
        }
        let descend = depth == 0 || !is_function_boundary(current);
        if descend && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return false;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

pub fn is_loop(node: Node<'_>) -> bool {
    grammar_ids::LOOP.contains(node)
}

/// The innermost loop around a node, not crossing a function, class or lambda boundary.
pub fn innermost_loop(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if is_function_boundary(n) {
            return None;
        }
        if is_loop(n) {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

/// The innermost function definition around a node.
pub fn enclosing_function(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

pub fn function_name<'a>(function: Node<'_>, source: &'a str) -> Option<&'a str> {
    function.child_by_field_id(*grammar_ids::NAME_FIELD).map(|n| text(n, source))
}

/// The class a function is a method of.
pub fn method_class(function: Node<'_>) -> Option<Node<'_>> {
    method_class_among(parents(function))
}

/// The ancestors of `node` by [`Node::parent`], innermost first.
fn parents(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(node.parent(), Node::parent)
}

/// [`method_class`] of a function with ancestors `up`, innermost first (the model has a faster
/// way to find them than [`Node::parent`]).
pub fn method_class_among<'t>(mut up: impl Iterator<Item = Node<'t>>) -> Option<Node<'t>> {
    let block = up.next()?;
    let holder = if block.kind() == "decorated_definition" { up.next()? } else { block };
    let class = up.next()?;
    (holder.kind() == "block" && class.kind() == "class_definition").then_some(class)
}

/// Decorator expressions of a function or class (`torch.no_grad()` in `@torch.no_grad()`), given
/// its parent.
pub fn decorators_under<'t>(parent: Option<Node<'t>>) -> Vec<Node<'t>> {
    let Some(decorated) = parent.filter(|p| p.kind() == "decorated_definition") else {
        return Vec::new();
    };
    let mut cursor = decorated.walk();
    decorated.named_children(&mut cursor).filter(|c| c.kind() == "decorator").filter_map(|d| d.named_child(0)).collect()
}

/// The statement that holds a node: the ancestor whose parent is a block or the module.
pub fn statement_of(node: Node<'_>) -> Node<'_> {
    statement_of_among(node, parents(node))
}

/// [`statement_of`] for a node with ancestors `up`, innermost first.
pub fn statement_of_among<'t>(node: Node<'t>, up: impl Iterator<Item = Node<'t>>) -> Node<'t> {
    let mut current = node;
    for holder in up {
        if matches!(holder.kind(), "block" | "module") {
            return current;
        }
        current = holder;
    }
    current
}

/// Whether `ancestor` contains `node` (or is it).
pub fn contains(ancestor: Node<'_>, node: Node<'_>) -> bool {
    ancestor.start_byte() <= node.start_byte() && node.end_byte() <= ancestor.end_byte()
}

/// The body block of a loop, function, with or if statement.
pub fn body(node: Node<'_>) -> Option<Node<'_>> {
    node.field("body").or_else(|| node.field("consequence"))
}

/// Whether `name` is one of `function`'s parameters: `x`, `x: int`, `x=1`, `x: int = 1`,
/// `*args`, `**kwargs`.
pub fn is_parameter(function: Node<'_>, name: &str, source: &str) -> bool {
    parameter_named(function, name, source).is_some()
}

/// The value `name` defaults to when it is one of `function`'s parameters: `Some(None)` for a
/// parameter without a default.
pub fn parameter_default<'t>(function: Node<'t>, name: &str, source: &str) -> Option<Option<Node<'t>>> {
    parameter_named(function, name, source).map(|parameter| parameter.field("value"))
}

fn parameter_named<'t>(function: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let parameters = function.field("parameters")?;
    let mut cursor = parameters.walk();
    parameters.named_children(&mut cursor).find(|parameter| {
        let mut bound = match parameter.kind() {
            "identifier" => Some(*parameter),
            _ => parameter.field("name").or_else(|| parameter.named_child(0)),
        };
        // `*args: int` holds its name one level further down.
        if let Some(splat) = bound.filter(|b| matches!(b.kind(), "list_splat_pattern" | "dictionary_splat_pattern")) {
            bound = splat.named_child(0);
        }
        bound.is_some_and(|b| b.kind() == "identifier" && text(b, source) == name)
    })
}

/// Names bound by an assignment target: `x`, `a, b`, `(a, b)`; attributes give `self.x`.
pub fn target_names<'a>(target: Node<'_>, source: &'a str) -> Vec<&'a str> {
    match target.kind() {
        "identifier" | "attribute" => vec![text(target, source)],
        "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list" => {
            let mut cursor = target.walk();
            target.named_children(&mut cursor).flat_map(|t| target_names(t, source)).collect()
        }
        _ => Vec::new(),
    }
}

/// The root name of an attribute chain or call chain: `model` in `model.module.foo()`.
pub fn root_identifier(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node;
    loop {
        current = match current.kind() {
            "identifier" => return Some(current),
            "attribute" => current.field("object")?,
            "call" => current.field("function")?,
            "subscript" => current.field("value")?,
            "parenthesized_expression" => current.named_child(0)?,
            _ => return None,
        }
    }
}

/// Whether `node` comes before `other` in the text.
pub fn precedes(node: Node<'_>, other: Node<'_>) -> bool {
    node.end_byte() <= other.start_byte()
}
