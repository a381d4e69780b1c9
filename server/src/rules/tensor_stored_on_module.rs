//! CUL403 tensor-stored-on-module.

use std::cell::Cell;

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::prefilter::{self, Enclosing};
use crate::semantic::{CallTarget, Model, ast};
use crate::text::line_start;

pub const RULE: Rule = Rule {
    code: "CUL403",
    name: "tensor-stored-on-module",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/tensor_stored_on_module.scm"),
    prefilter: Prefilter { all_of: &[&["forward"], &["self"]], scan: Some(could_store_in_forward) },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# tensor-stored-on-module (CUL403)

## What it does
Flags `self.<attr> = <value>` inside `forward` of an `nn.Module` subclass (including Lightning
modules and Hugging Face `PreTrainedModel`s) when the value is computed from the inputs (by a
layer, an operator or a tensor function) and is not detached.

Not flagged: attributes named like a loss (`self.aux_loss`, the mixture-of-experts idiom, stored
for the training step to read and backpropagate), attributes registered with `register_buffer`,
stores under `torch.no_grad()` or `if not self.training:`, plain numbers and shapes
(`x.shape[0]`, `x.size(1)`), comparisons, and the raw input itself.

## Why is this bad?
The stored tensor keeps its autograd graph, and with it the activations of the whole forward
pass that produced it, until the next call overwrites the attribute. Peak memory then holds two
iterations' activations at once; in evaluation, where nothing else would keep them, it holds
memory that should have been freed right away. Storing attention maps or features "for later
inspection" is the usual cause.

## Example
```python
class Attention(nn.Module):
    def forward(self, q, k):
        attn = (q @ k.transpose(-2, -1)).softmax(-1)
        self.attn_weights = attn
        return attn
```

## Use instead
```python
class Attention(nn.Module):
    def forward(self, q, k):
        attn = (q @ k.transpose(-2, -1)).softmax(-1)
        self.attn_weights = attn.detach()
        return attn
```

## Fix safety
The fix appends `.detach()` to the stored value. It is unsafe: code that backpropagates through
the stored attribute (a loss computed from it in the training step) would no longer reach the
parameters that produced it.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch FAQ: "Don't hold onto tensors and variables you don't need" — https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
- PyTorch: `torch.nn.Module.register_buffer` — https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
"#;

/// How many local assignments back a value is traced. Steps within one expression do not count:
/// `self.attn = F.softmax(attn.masked_fill(mask, 0), -1).clone()` is one assignment.
const TRACE_DEPTH: usize = 5;

/// How many expressions one trace reads at most: each assignment it follows may name several
/// locals, each traced back in turn. Past it the value counts as unrelated (no finding).
const TRACE_BUDGET: usize = 1_000;

/// How many local base classes are followed to find `nn.Module`.
const BASE_DEPTH: usize = 5;

/// Base classes that make a class an `nn.Module`, besides anything under `torch.nn.`.
const MODULE_BASES: &[&str] = &[
    "lightning.LightningModule",
    "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.LightningModule",
    "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule",
];

/// Calls whose result carries no autograd history, whatever their inputs.
const UNTRACKED_CALLS: &[&str] = &[
    "detach",
    "item",
    "tolist",
    "numpy",
    "size",
    "dim",
    "numel",
    "nelement",
    "stride",
    "data_ptr",
    "get_device",
    "is_contiguous",
    "element_size",
    "argmax",
    "argmin",
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "isnan",
    "isinf",
    "nonzero",
    "long",
    "int",
    "bool",
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
    "new_tensor",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
];

/// Built-ins whose result is a Python value.
const TO_PYTHON: &[&str] = &["len", "isinstance", "hasattr", "getattr", "type", "id", "float", "int", "bool", "str"];

/// Attributes that are not tensors with history.
const UNTRACKED_ATTRIBUTES: &[&str] =
    &["shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "training", "data", "grad", "indices"];

/// Where a value comes from, ordered: only `Computed` values are flagged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    /// Constants, attributes of `self`, shapes, anything without history from the inputs.
    Unrelated,
    /// An input of `forward`, or a view of it (`x`, `x[0]`, `x.T`).
    Input,
    /// The result of a layer, an operator or a tensor function applied to the inputs.
    Computed,
}

/// Some line of a `forward` body (or a line the scan cannot place) assigns to `self.<attr>` a
/// value that could hold a tensor.
fn could_store_in_forward(text: &str) -> bool {
    // Most texts with `forward` and `self` call a forward and define none.
    if !prefilter::could_define(text, "forward") {
        return false;
    }
    // Whether each `forward` (by the offset of its name) can be in a module: read once, however
    // many stores it holds.
    let mut in_module: std::collections::HashMap<usize, bool> = std::collections::HashMap::new();
    // The stores are met in order, and most lie in runs in one function.
    let mut enclosing_functions = prefilter::EnclosingFunctions::new(text);
    memchr::memmem::find_iter(text.as_bytes(), b"self.").any(|at| {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| prefilter::is_name_char(c) || c == '.') || !starts_a_target(text, at) {
            return false;
        }
        // Most stores are in `__init__`: the function around one is read before its value.
        let enclosing = enclosing_functions.of(line_start(text, at));
        let in_forward = match enclosing {
            Enclosing::Function(name) => name == "forward",
            Enclosing::NoFunction => false,
            Enclosing::Unknown => true,
        };
        if !in_forward || !assigns_attribute(&text[at + 5..]) {
            return false;
        }
        match enclosing {
            Enclosing::Function(name) => *in_module
                .entry(name.as_ptr() as usize - text.as_ptr() as usize)
                .or_insert_with(|| could_be_in_a_module(text, name)),
            _ => true,
        }
    })
}

/// The class around the `def` whose name is `name` (a slice of `text`) could derive from a
/// module class. Read from its `class Name(bases):` line as [`is_module_class`] reads the tree:
/// a base bound only by relative imports (`from ..modeling_utils import PreTrainedModel`) never
/// resolves to `torch.nn` or `transformers`, and one that no import binds is a module only
/// through a class of this file. Anything the scan cannot read counts as a module.
fn could_be_in_a_module(text: &str, name: &str) -> bool {
    let def_at = name.as_ptr() as usize - text.as_ptr() as usize;
    let def_line = line_start(text, def_at);
    let indent = prefilter::indentation(&text[def_line..]);
    let mut end = def_line;
    while end > 0 {
        let start = line_start(text, end - 1);
        let line = &text[start..end - 1];
        end = start;
        let code = line.trim_start_matches([' ', '\t']);
        if code.trim().is_empty() || prefilter::indentation(line) >= indent {
            continue;
        }
        // Bases read at most: a file of many same-named classes could otherwise fan out.
        let mut budget = 64;
        return class_bases(code).is_none_or(|bases| bases_could_be_modules(text, bases, 0, &mut budget));
    }
    false
}

/// The bases of a one-line `class Name(bases):` header; `None` for any other line.
fn class_bases(code: &str) -> Option<&str> {
    let header = code.strip_prefix("class")?.trim_end().strip_suffix(':')?;
    let (_, bases) = header.split_once('(')?;
    let bases = bases.strip_suffix(')')?;
    (!bases.contains(['(', ')'])).then_some(bases)
}

fn bases_could_be_modules(text: &str, bases: &str, depth: usize, budget: &mut usize) -> bool {
    bases.split(',').map(str::trim).filter(|b| !b.is_empty() && !b.contains('=')).any(|base| {
        if *budget == 0 || !base.chars().all(|c| prefilter::is_name_char(c) || c == '.') {
            return true;
        }
        *budget -= 1;
        let root = base.split('.').next().unwrap_or(base);
        if root.is_empty() {
            return true;
        }
        let (relative, absolute) = import_bindings(text, root);
        if absolute {
            return true;
        }
        if relative {
            return false;
        }
        // A class of this file: a module if its own bases are.
        depth < BASE_DEPTH
            && local_class_headers(text, root).any(|header| {
                class_bases(header).is_none_or(|bases| bases_could_be_modules(text, bases, depth + 1, budget))
            })
    })
}

/// Whether some relative and some absolute import statement bind `name` (it is a word after
/// their `import`).
fn import_bindings(text: &str, name: &str) -> (bool, bool) {
    let (mut relative, mut absolute) = (false, false);
    for found in prefilter::whole_words(text, name) {
        let Some(start) = import_statement_start(text, found) else { continue };
        let statement = &text[start..found];
        let after_import = statement.starts_with("import") || statement.contains(" import") || start == found;
        if !after_import {
            continue;
        }
        if statement.starts_with("from .") {
            relative = true;
        } else {
            absolute = true;
        }
    }
    (relative, absolute)
}

/// Where the `import`/`from` statement holding `at` starts: on `at`'s own line, or on the line
/// that opens the parenthesised name list `at` is in. `None` for a name outside any import. A
/// line continued with a backslash cannot be placed: it answers `at` itself, which counts as an
/// absolute import.
fn import_statement_start(text: &str, at: usize) -> Option<usize> {
    let is_import = |line: usize| {
        let code = text[line..].trim_start_matches([' ', '\t']);
        (prefilter::starts_with_word(code, "from") || prefilter::starts_with_word(code, "import"))
            .then(|| text.len() - code.len())
    };
    let line = line_start(text, at);
    if let Some(start) = is_import(line) {
        return Some(start);
    }
    if text[..line].trim_end_matches(['\n', '\r']).ends_with('\\') {
        return Some(at);
    }
    // A name on a continuation line of `from x import (\n    a,\n)`.
    let open = text[..at].rfind('(')?;
    if text[open..at].contains([')', '=']) {
        return None;
    }
    is_import(line_start(text, open))
}

/// The `class name...` lines of the text.
fn local_class_headers<'t>(text: &'t str, name: &'t str) -> impl Iterator<Item = &'t str> {
    text.lines().map(|line| line.trim_start_matches([' ', '\t'])).filter(move |code| {
        code.strip_prefix("class").is_some_and(|rest| {
            let rest = rest.trim_start_matches([' ', '\t']);
            rest.len() < code.len() - "class".len()
                && rest.strip_prefix(name).is_some_and(|after| after.starts_with(['(', ':', ' ']))
        })
    })
}

/// `self.` at `at` begins an assignment's target: it opens its line or follows `=` (a chained
/// assignment), `;` or `:` (a one-line block); in a tuple, a call or an expression it does not.
fn starts_a_target(text: &str, at: usize) -> bool {
    let before = text[line_start(text, at)..at].trim_matches([' ', '\t']);
    before.is_empty() || before.ends_with(['=', ';', ':'])
}

/// `<attr> = ...` or `<attr>: T = ...` follows, not a comparison or a call, with a value that
/// could be computed: an attribute named like a loss, or a value that is a literal constant on
/// its own line (`self.cache = None`), never holds a tensor the rule reports.
fn assigns_attribute(rest: &str) -> bool {
    let name_end = rest.find(|c: char| !prefilter::is_name_char(c)).unwrap_or(rest.len());
    let after = rest[name_end..].trim_start_matches([' ', '\t']);
    let line = after.split('\n').next().unwrap_or(after);
    let assigns =
        (after.starts_with('=') && !after.starts_with("==")) || (after.starts_with(':') && line.contains('='));
    if name_end == 0 || !assigns || rest[..name_end].to_ascii_lowercase().contains("loss") {
        return false;
    }
    let Some((_, value)) = after.split_once('=') else { return false };
    let line = value.split('\n').next().unwrap_or(value).trim_matches([' ', '\t', '\r']);
    let is_number = line.starts_with(|c: char| c.is_ascii_digit()) && line.replace('_', "").parse::<f64>().is_ok();
    !(matches!(line, "None" | "True" | "False") || is_number || is_a_test(value))
}

/// The value (the text after `=`) is a comparison, `and`/`or` or `not` at its top level, which
/// holds a bool, never a tensor with history. Read up to the end of its logical line, with
/// strings and bracketed parts left out; anything the scan cannot read counts as not a test.
fn is_a_test(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut top = String::from(" ");
    let (mut depth, mut at) = (0usize, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                let Some(outer) = depth.checked_sub(1) else { return false };
                depth = outer;
                top.push(' ');
            }
            quote @ (b'"' | b'\'') => {
                let Some(end) = prefilter::string_end(bytes, at, quote) else { return false };
                at = end;
                top.push_str(" S ");
                continue;
            }
            b'#' => {
                at = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                continue;
            }
            b'\\' => return false,
            b'\n' | b';' if depth == 0 => break,
            byte if depth == 0 => top.push(char::from(byte)),
            _ => {}
        }
        at += 1;
    }
    if !top.is_ascii() {
        return false;
    }
    top.push(' ');
    let top = top.replace("<<", " ").replace(">>", " ").replace('\t', " ");
    let is_conditional = top.contains(" if ") || top.contains(" lambda ");
    let is_test = [" == ", "!=", "<", ">", " is ", " in ", " and ", " or "].iter().any(|op| top.contains(op))
        || top.trim_start().starts_with("not ");
    !is_conditional && is_test
}

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let assignment = candidate.node;
    let (Some(target), Some(value)) = (assignment.field("left"), assignment.field("right")) else {
        return;
    };
    let Some(forward) =
        model.enclosing_function(assignment).filter(|f| ast::function_name(*f, model.text) == Some("forward"))
    else {
        return;
    };
    let Some(class) = model.method_class(forward) else { return };
    let attribute = target.field("attribute").map_or("", |a| model.node_text(a));
    if attribute.to_ascii_lowercase().contains("loss")
        || !is_module_class(model, class, 0)
        || registers_buffer(model, class, attribute)
        || model.grad_disabled(assignment)
        || only_when_not_training(model, assignment, forward)
        || origin_of(model, forward, value, assignment) != Origin::Computed
        || read_before(model, forward, target, assignment)
    {
        return;
    }
    // Detaching a value that `forward` goes on to use would cut the model's own graph.
    let fix = if read_later(model, forward, target, assignment) {
        None
    } else {
        detach_fix(model, forward, value, assignment)
    };
    let statement = model.parent(assignment).filter(|p| p.kind() == "expression_statement").unwrap_or(assignment);
    let diagnostic = checker.report_node(
        statement,
        format!("`self.{attribute}` keeps a tensor computed in `forward`, and its autograd graph, alive past the call"),
    );
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// `self.<attr>` is read in `forward` before the assignment: state that each call reads from the
/// one before (a decoder's key/value cache, a causal convolution's last frames), kept on purpose
/// for the next step to read and backpropagate through.
fn read_before(model: &Model<'_>, forward: Node<'_>, target: Node<'_>, assignment: Node<'_>) -> bool {
    read_in_forward(model, forward, target, assignment, Side::Before)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

/// `self.<attr>` (`target`) is read, not stored to, in `forward` on `side` of the assignment.
fn read_in_forward(model: &Model<'_>, forward: Node<'_>, target: Node<'_>, assignment: Node<'_>, side: Side) -> bool {
    let target_text = model.node_text(target);
    let mut stack = vec![forward];
    let mut cursor = forward.walk();
    while let Some(node) = stack.pop() {
        let outside = match side {
            Side::Before => node.start_byte() >= assignment.start_byte(),
            Side::After => node.end_byte() <= assignment.end_byte() && !ast::contains(node, assignment),
        };
        if outside {
            continue;
        }
        let on_side = side == Side::Before || node.start_byte() >= assignment.end_byte();
        if node.kind() == "attribute" && on_side && model.node_text(node) == target_text {
            let is_store = node
                .parent()
                .is_some_and(|p| p.kind() == "assignment" && p.field("left").is_some_and(|l| l.id() == node.id()));
            if !is_store {
                return true;
            }
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

/// `values, indices = torch.topk(...)` (or `sort`, `max`/`min` over a dim, `kthvalue`, `mode`):
/// `name` is the second name, the integer indices, which carry no autograd graph.
fn unpacks_indices(model: &Model<'_>, assignment: Node<'_>, name: &str) -> bool {
    let Some(left) = assignment.field("left").filter(|l| matches!(l.kind(), "pattern_list" | "tuple_pattern")) else {
        return false;
    };
    let second = left.named_child(1).is_some_and(|n| model.node_text(n) == name);
    let call = assignment.field("right").filter(|r| r.kind() == "call");
    second
        && call
            .and_then(|c| ast::callee_name(c, model.text))
            .is_some_and(|callee| matches!(callee, "topk" | "sort" | "max" | "min" | "kthvalue" | "mode" | "median"))
}

/// `self.<attr>` is read again in `forward` after the assignment.
fn read_later(model: &Model<'_>, forward: Node<'_>, target: Node<'_>, assignment: Node<'_>) -> bool {
    read_in_forward(model, forward, target, assignment, Side::After)
}

/// The class derives from `torch.nn.Module` (or a Lightning module), directly or through local
/// classes. A base the checker cannot resolve makes it unknown, and unknown is not a module.
fn is_module_class(model: &Model<'_>, class: Node<'_>, depth: usize) -> bool {
    let Some(bases) = class.field("superclasses") else { return false };
    let mut cursor = bases.walk();
    let bases: Vec<Node<'_>> = bases.named_children(&mut cursor).collect();
    bases.into_iter().any(|base| {
        if let Some(qualified) = model.qualified_name(base) {
            return qualified.starts_with("torch.nn.")
                || MODULE_BASES.contains(&qualified.as_str())
                || (qualified.starts_with("transformers.") && qualified.ends_with("PreTrainedModel"));
        }
        depth < BASE_DEPTH
            && base.kind() == "identifier"
            && model.all_classes().iter().any(|c| {
                c.field("name").is_some_and(|n| model.node_text(n) == model.node_text(base))
                    && c.id() != class.id()
                    && is_module_class(model, *c, depth + 1)
            })
    })
}

/// `self.register_buffer("name", ...)` anywhere in the class.
fn registers_buffer(model: &Model<'_>, class: Node<'_>, attribute: &str) -> bool {
    model.calls_named_within("register_buffer", class).any(|call| {
        ast::positional_args(call).first().and_then(|a| ast::string_value(*a, model.text)).as_deref() == Some(attribute)
    })
}

/// Under `if not self.training:`: evaluation only, where the caller usually disables autograd.
fn only_when_not_training<'a>(model: &Model<'a>, node: Node<'a>, forward: Node<'a>) -> bool {
    for n in model.ancestors(node).take_while(|n| n.id() != forward.id()) {
        if n.kind() == "if_statement"
            && n.field("consequence").is_some_and(|c| ast::contains(c, node))
            && n.field("condition").is_some_and(|c| {
                let condition = model.node_text(c);
                condition.contains("not self.training") || condition.contains("self.training is False")
            })
        {
            return true;
        }
    }
    false
}

/// Where the value of `value`, evaluated at `at` in `forward`, comes from.
fn origin_of<'a>(model: &Model<'a>, forward: Node<'a>, value: Node<'a>, at: Node<'a>) -> Origin {
    origin(model, forward, value, at, 0, &Cell::new(TRACE_BUDGET))
}

fn origin<'a>(
    model: &Model<'a>,
    forward: Node<'a>,
    value: Node<'a>,
    at: Node<'a>,
    depth: usize,
    budget: &Cell<usize>,
) -> Origin {
    if depth > TRACE_DEPTH || budget.get() == 0 {
        return Origin::Unrelated;
    }
    budget.set(budget.get() - 1);
    let of = |v: Node<'a>| origin(model, forward, v, at, depth, budget);
    let computed_if_any = |children: Vec<Node<'a>>| {
        if children.into_iter().map(of).max().unwrap_or(Origin::Unrelated) >= Origin::Input {
            Origin::Computed
        } else {
            Origin::Unrelated
        }
    };
    match value.kind() {
        "parenthesized_expression" => value.named_child(0).map_or(Origin::Unrelated, of),
        "identifier" => {
            let name = model.node_text(value);
            if name == "self" {
                return Origin::Unrelated;
            }
            // The latest binding wins: `x = block(x)` rebinds the parameter `x`.
            match last_local_assignment(model, forward, name, at) {
                Some(assignment) if unpacks_indices(model, assignment, name) => Origin::Unrelated,
                Some(assignment) => assignment
                    .field("right")
                    .map_or(Origin::Unrelated, |right| origin(model, forward, right, assignment, depth + 1, budget)),
                None if ast::is_parameter(forward, name, model.text) => Origin::Input,
                None => Origin::Unrelated,
            }
        }
        "attribute" => {
            let attribute = value.field("attribute").map_or("", |a| model.node_text(a));
            match value.field("object") {
                Some(object) if !UNTRACKED_ATTRIBUTES.contains(&attribute) => of(object),
                _ => Origin::Unrelated,
            }
        }
        "subscript" => value.field("value").map_or(Origin::Unrelated, of),
        "binary_operator" => {
            computed_if_any([value.field("left"), value.field("right")].into_iter().flatten().collect())
        }
        "unary_operator" => computed_if_any(value.field("argument").into_iter().collect()),
        "tuple" | "list" | "expression_list" | "conditional_expression" => {
            let mut cursor = value.walk();
            let children: Vec<Node<'a>> = value.named_children(&mut cursor).collect();
            children.into_iter().map(of).max().unwrap_or(Origin::Unrelated)
        }
        "call" => {
            let name = ast::callee_name(value, model.text).unwrap_or_default();
            let is_builtin = ast::callee(value).is_some_and(|f| f.kind() == "identifier");
            if UNTRACKED_CALLS.contains(&name) || (is_builtin && TO_PYTHON.contains(&name)) {
                return Origin::Unrelated;
            }
            let arguments = call_arguments(value);
            let Some(function) = ast::callee(value) else { return Origin::Unrelated };
            match function.kind() {
                "attribute" => {
                    let receiver = function.field("object");
                    let is_library_function = model.qualified_name(function).is_some();
                    let is_submodule_call = receiver.is_some_and(|r| model.node_text(r) == "self");
                    if is_library_function || is_submodule_call {
                        // `torch.cat([a, b])`, `F.softmax(x)`, `self.backbone(x)`.
                        computed_if_any(arguments)
                    } else {
                        // A tensor method: `x.float()`, `self.pos.to(device)` (not from the inputs).
                        computed_if_any(receiver.into_iter().collect())
                    }
                }
                "identifier" => match model.resolve_call(value) {
                    // A helper the checker cannot see, or a non-torch library: no tensor known.
                    CallTarget::Unseen | CallTarget::Project(_) => Origin::Unrelated,
                    CallTarget::Library(qualified) if !qualified.starts_with("torch.") => Origin::Unrelated,
                    // torch functions, local helpers and callable layers (`block(x)`).
                    _ => computed_if_any(arguments),
                },
                // `self.blocks[i](x)`
                _ => computed_if_any(arguments),
            }
        }
        _ => Origin::Unrelated,
    }
}

/// Positional and keyword argument values, splats unpacked.
fn call_arguments(call: Node<'_>) -> Vec<Node<'_>> {
    let mut inputs = Vec::new();
    let Some(arguments) = ast::arguments(call) else { return inputs };
    let mut cursor = arguments.walk();
    for argument in arguments.named_children(&mut cursor) {
        match argument.kind() {
            "keyword_argument" => inputs.extend(argument.field("value")),
            "list_splat" | "dictionary_splat" => inputs.extend(argument.named_child(0)),
            "comment" => {}
            _ => inputs.push(argument),
        }
    }
    inputs
}

/// The last assignment to a local of `forward` before `at`.
fn last_local_assignment<'a>(model: &Model<'a>, forward: Node<'a>, name: &str, at: Node<'a>) -> Option<Node<'a>> {
    model
        .assignments_to_within(name, forward)
        .filter(|a| model.enclosing_function(*a).is_some_and(|f| f.id() == forward.id()) && ast::precedes(*a, at))
        .max_by_key(|a| a.start_byte())
}

/// Append `.detach()` to the stored value (to each computed element of a stored tuple or list).
fn detach_fix<'a>(model: &Model<'a>, forward: Node<'a>, value: Node<'a>, at: Node<'a>) -> Option<Fix> {
    let targets: Vec<Node<'a>> = match value.kind() {
        "tuple" | "list" | "expression_list" => {
            let mut cursor = value.walk();
            let elements: Vec<Node<'a>> = value.named_children(&mut cursor).collect();
            elements.into_iter().filter(|e| origin_of(model, forward, *e, at) == Origin::Computed).collect()
        }
        _ => vec![value],
    };
    let mut edits = Vec::new();
    for target in targets {
        match target.kind() {
            "identifier" | "attribute" | "call" | "subscript" | "parenthesized_expression" => {
                edits.push(Edit::insertion(target.end_byte(), ".detach()"));
            }
            "list_splat" => return None,
            _ => {
                edits.push(Edit::insertion(target.start_byte(), "("));
                edits.push(Edit::insertion(target.end_byte(), ").detach()"));
            }
        }
    }
    (!edits.is_empty()).then(|| Fix::unsafe_edits("Store a detached tensor: append `.detach()`", edits))
}

#[cfg(test)]
mod tests {
    use super::could_store_in_forward;

    fn in_forward(statement: &str) -> String {
        format!(
            "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        {statement}\n        return x\n"
        )
    }

    /// The class must be able to derive from a module, as the check reads its bases.
    #[test]
    fn classes_that_cannot_be_modules_are_left_out() {
        let store = "    def forward(self, x):\n        self.h = x * 2\n";
        for kept in [
            "from torch import nn\n\nclass M(nn.Module):\n",
            "from transformers import PreTrainedModel as Base\n\nclass M(Base):\n",
            "from transformers import (\n    PreTrainedModel,\n)\n\nclass M(PreTrainedModel):\n",
            "from transformers import Config, \\\n    PreTrainedModel\n\nclass M(PreTrainedModel):\n",
            "import torch\n\nclass Base(torch.nn.Module):\n    pass\n\nclass M(Base):\n",
            "class M(Generic[T], Mixin):\n",
            "class M(\n    Base,\n):\n",
        ] {
            assert!(could_store_in_forward(&format!("{kept}{store}")), "{kept}");
        }
        for left_out in [
            "from ..modeling_utils import PreTrainedModel\n\nclass M(PreTrainedModel):\n",
            "from ..modeling_utils import (\n    PreTrainedModel,\n)\n\nclass M(PreTrainedModel):\n",
            "from ..modeling_utils import PreTrainedModel\n\nclass Base(PreTrainedModel):\n    pass\n\nclass M(Base):\n",
            "class M(object):\n",
            "class M(Mixin, metaclass=Meta):\n",
        ] {
            assert!(!could_store_in_forward(&format!("{left_out}{store}")), "{left_out}");
        }
        // Not Python, but the scan reads any text: an empty name must not stall the search, nor
        // many classes of one name fan out.
        let many = "class A(A, A, A):\n    pass\n\n".repeat(50);
        for broken in ["class M(.x):\n", "class M(a, .b):\n", &format!("{many}class M(A):\n")] {
            assert!(could_store_in_forward(&format!("{broken}{store}")), "{broken}");
        }
    }

    /// The prefilter lets through what the rule could report, and only constants, tests, loss
    /// attributes and `self.` outside an assignment's target are left out.
    #[test]
    fn only_constants_tests_and_losses_are_left_out_of_forward_stores() {
        for kept in [
            "self.h = x",
            "self.h: Tensor = x * 2",
            "self.h = torch.zeros(3)",
            "self.h = None if x else x",
            "self.h = x[x > 0]",
            "self.h = f(x) + ' > '",
            "self.h = x << 2",
            "self.h = (\n    x > 0\n) + x",
            "self.h = x > \\\n    0",
            "y = self.h = x",
            "if x: self.h = x",
        ] {
            assert!(could_store_in_forward(&in_forward(kept)), "{kept}");
        }
        for left_out in [
            "self.cache = None",
            "self.ready = True",
            "self.n = 0",
            "self.scale: float = 1.5e-3",
            "self.causal = mask is not None",
            "self.big = x.numel() > 10 and x.ndim == 2  # why",
            "self.off = not x.requires_grad",
            "y = torch.cat([x[:, 0:self.h], x[:, self.h:]], dim=1)",
            "a, self.h = x, x",
        ] {
            assert!(!could_store_in_forward(&in_forward(left_out)), "{left_out}");
        }
        assert!(!could_store_in_forward(&in_forward("self.aux_loss = x.mean()")));
        assert!(!could_store_in_forward(&in_forward("self.h == x")));
    }
}
