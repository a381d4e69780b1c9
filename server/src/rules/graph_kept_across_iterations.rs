//! CUL401 graph-kept-across-iterations.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::prefilter::STEP_TOKENS;
use crate::semantic::training::mentions;
use crate::semantic::{CallTarget, Model, ast};

pub const RULE: Rule = Rule {
    code: "CUL401",
    name: "graph-kept-across-iterations",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/graph_kept_across_iterations.scm"),
    prefilter: Prefilter { all_of: &[STEP_TOKENS], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# graph-kept-across-iterations (CUL401)

## What it does
Flags a step loop (or Lightning `training_step`) that keeps a tensor with autograd history past
the iteration: `total += loss`, `total = total + loss`, `losses.append(loss)`,
`outputs_list.append(logits)`, `history["loss"] = loss`, or `self.losses.append(loss)`. The value
is a loss (what `.backward()` is called on, a criterion or `*_loss` call, `outputs.loss`) or a
model output, not turned into a plain number or a detached tensor by `.item()`, `.detach()`,
`float(...)`, `.tolist()` or `.cpu().numpy()`. Of a loss function's results unpacked into
several names (`loss, chosen_rewards = loss_fn(...)`), only the first, or one named as a loss, is
taken for a loss: loss functions commonly detach what they report beside the loss.

Not flagged when the accumulator is itself backpropagated later (gradient accumulation by
summing losses, or a pipeline schedule that pops each kept output and hands it to its
`backward_step`), when the loop detaches the value right after its own backward
(`loss.backward()` then `loss = loss.detach()`) and keeps it whole only where it does not
backpropagate it, when the accumulator is created afresh in each iteration, or when the loop runs
under `torch.no_grad()` / `torch.inference_mode()`, or in the `forward` of a custom
`torch.autograd.Function` outside `torch.enable_grad()`.

## Why is this bad?
A tensor that requires grad holds a reference to the graph that produced it. Keeping it in an
accumulator that outlives the iteration keeps that graph alive: `total += loss` chains every
step's graph onto the last, and a list of logits holds every batch's output tensor and its
graph. Until the loss's `.backward()` runs, that graph holds every activation it saved; the
backward frees those (unless `retain_graph=True`), and what stays is the kept tensors and the
graph's nodes: less per step, but never released. Memory grows step after step until the job runs
out of it, often hours in.

## Example
```python
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss
```

## Use instead
```python
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss.detach()
```
`loss.item()` works too, at the cost of a device synchronisation per step.

## Fix safety
The fix appends `.detach()` to the kept value. It is safe: the kept value has the same data, and
nothing backpropagates through the accumulator (the rule stays quiet when something does).

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch FAQ: "Don't accumulate history across your training loop" — https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
- PyTorch: `torch.Tensor.detach` — https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html
"#;

/// How many assignments back a name is traced to decide whether it carries a graph.
const TRACE_DEPTH: usize = 5;

/// Methods whose result carries no autograd history.
const UNTRACKED_METHODS: &[&str] = &[
    "item", "detach", "tolist", "numpy", "argmax", "argmin", "eq", "ne", "gt", "lt", "ge", "le", "size", "numel",
    "dim", "long", "int", "bool", "sign", "round", "isnan", "isinf", "nonzero", "data_ptr",
];

/// Attributes that carry no autograd history.
const UNTRACKED_ATTRIBUTES: &[&str] = &["data", "shape", "dtype", "device", "requires_grad", "grad", "ndim", "is_cuda"];

/// Built-ins that turn a tensor into a Python value.
const TO_PYTHON: &[&str] = &["float", "int", "bool", "len", "round", "str"];

/// Built-ins whose result carries the history of their arguments.
const COMBINING_BUILTINS: &[&str] = &["sum", "max", "min", "abs"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let node = candidate.node;
    let Some((accumulator, value)) = kept_value(model, node) else { return };
    let Some(scope) = model.step_scope(node) else { return };
    if !outlives_iteration(model, scope, accumulator, node)
        || model.grad_disabled(node)
        || !carries_graph(model, scope, value, node, 0)
        || detached_after_its_backward(model, scope, value, node)
        || accumulator_is_backpropagated(model, scope, accumulator)
        || reset_after_its_own_backward(model, scope, accumulator, value)
    {
        return;
    }
    let statement = model.parent(node).filter(|p| p.kind() == "expression_statement").unwrap_or(node);
    let fix = detach_fix(model, scope, value, node);
    let diagnostic = checker.report_node(
        statement,
        format!(
            "`{}` keeps `{}` and its autograd graph alive past the iteration",
            model.node_text(accumulator),
            model.node_text(value)
        ),
    );
    diagnostic.with_fact(format!("training step: {}", model.quote(scope)));
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// The kept value is backpropagated in the same iteration (`current_loss.backward()`) and the
/// accumulator is started afresh inside the loop (`running_loss = 0` at each optimizer step), as
/// torchtune's recipes log their loss. A backward frees the graph's saved activations; what stays
/// is measured at about 3 MiB a step for a 16-layer MLP whose un-backpropagated loss keeps 128 MiB
/// (bench/real_world/gpu/kept_loss_memory.py), and a reset bounds it to one accumulation window.
/// An accumulator never reset in the loop grows for the whole epoch and is still reported.
fn reset_after_its_own_backward<'a>(
    model: &Model<'a>,
    scope: Node<'a>,
    accumulator: Node<'a>,
    value: Node<'a>,
) -> bool {
    let mut names = Vec::new();
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        let is_field = node
            .parent()
            .is_some_and(|p| p.kind() == "attribute" && p.field("attribute").is_some_and(|a| a.id() == node.id()));
        if node.kind() == "identifier" && !is_field && model.node_text(node) != "self" {
            names.push(model.node_text(node));
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    let target = model.node_text(accumulator);
    // The backward's subject (`x.backward()`, `accelerator.backward(x)`) is the kept value, or a
    // name the loop computes from it (`loss = class_loss + kd_loss` then `loss.backward()`).
    let backpropagated = model.calls_named_within("backward", scope).any(|call| {
        let subject = ast::positional_args(call).first().copied().or_else(|| ast::receiver(call));
        let Some(subject) = subject.and_then(ast::root_identifier).map(|s| model.node_text(s)) else { return false };
        names.contains(&subject)
            || model.assignments_to_within(subject, scope).any(|assignment| {
                assignment
                    .field("right")
                    .is_some_and(|right| names.iter().any(|name| mentions(right, model.text, name)))
            })
    });
    let reset = model.assignments_to_within(target, scope).any(|assignment| {
        assignment.kind() == "assignment"
            && assignment.field("right").is_some_and(|right| !model.node_text(right).contains(target))
    });
    backpropagated && reset
}

/// The accumulator and the value kept in it, for each candidate shape.
fn kept_value<'a>(model: &Model<'a>, node: Node<'a>) -> Option<(Node<'a>, Node<'a>)> {
    match node.kind() {
        "augmented_assignment" => Some((node.field("left")?, node.field("right")?)),
        "assignment" => {
            let left = node.field("left")?;
            let right = node.field("right")?;
            if left.kind() == "subscript" {
                return Some((left.field("value")?, right));
            }
            let (a, b) = (right.field("left")?, right.field("right")?);
            let target = model.node_text(left);
            if model.node_text(a) == target {
                Some((left, b))
            } else if model.node_text(b) == target {
                Some((left, a))
            } else {
                None
            }
        }
        "call" => {
            let receiver = ast::receiver(node)?;
            match ast::positional_args(node)[..] {
                [value] if ast::keyword_args(node).is_empty() => Some((receiver, value)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether the accumulator survives into the next iteration: an attribute of `self`, or a name
/// that is not created afresh in the step body before this statement.
fn outlives_iteration<'a>(model: &Model<'a>, scope: Node<'a>, accumulator: Node<'a>, at: Node<'a>) -> bool {
    let Some(root) = ast::root_identifier(accumulator) else { return false };
    let name = model.node_text(root);
    if name == "self" {
        return true;
    }
    if scope.kind() == "function_definition" {
        // A local of `training_step` dies with the call; a module-level collection does not.
        return model.imports.binding(name).is_none() && is_module_level(model, name, scope);
    }
    if loop_targets_between(model, scope, at).contains(&name) {
        return false;
    }
    !model.assignments_to_within(name, scope).any(|a| a.id() != at.id() && ast::precedes(a, at))
}

/// A name assigned at module level and neither a parameter nor a local of `function`.
fn is_module_level(model: &Model<'_>, name: &str, function: Node<'_>) -> bool {
    let assignments = model.assignments_to(name);
    model.assignments_to_within(name, function).next().is_none()
        && assignments.iter().any(|a| model.enclosing_function(*a).is_none())
        && !ast::is_parameter(function, name, model.text)
}

/// Names bound by the `for` targets of the step loop and of loops inside it around `at`.
fn loop_targets_between<'a>(model: &Model<'a>, scope: Node<'a>, at: Node<'a>) -> Vec<&'a str> {
    let mut names = Vec::new();
    for node in std::iter::once(at).chain(model.ancestors(at)) {
        if node.kind() == "for_statement"
            && let Some(left) = node.field("left")
        {
            names.extend(ast::target_names(left, model.text));
        }
        if node.id() == scope.id() {
            break;
        }
    }
    names
}

/// Whether a value carries autograd history: a loss, a model output, or something computed
/// from one, not detached or turned into a Python number.
fn carries_graph<'a>(model: &Model<'a>, scope: Node<'a>, value: Node<'a>, at: Node<'a>, depth: usize) -> bool {
    if depth > TRACE_DEPTH {
        return false;
    }
    let recurse = |v: Node<'a>| carries_graph(model, scope, v, at, depth + 1);
    match value.kind() {
        "parenthesized_expression" => value.named_child(0).is_some_and(recurse),
        "binary_operator" => value.field("left").is_some_and(recurse) || value.field("right").is_some_and(recurse),
        "unary_operator" => value.field("argument").is_some_and(recurse),
        "subscript" => value.field("value").is_some_and(recurse),
        "tuple" | "list" | "conditional_expression" => {
            let mut cursor = value.walk();
            value.named_children(&mut cursor).collect::<Vec<_>>().into_iter().any(recurse)
        }
        "attribute" => {
            let attribute = value.field("attribute").map_or("", |a| model.node_text(a));
            let object = value.field("object");
            if UNTRACKED_ATTRIBUTES.contains(&attribute) {
                return false;
            }
            let is_loss = attribute == "loss" || attribute.ends_with("_loss");
            (is_loss && object.is_some_and(|o| model.node_text(o) != "self")) || object.is_some_and(recurse)
        }
        "call" => {
            // `loss = train_step(batch)`: what a local helper returns.
            if let CallTarget::Local(function) = model.resolve_call(value) {
                return returned_values(function)
                    .into_iter()
                    .any(|returned| carries_graph(model, function, returned, returned, depth + 1));
            }
            call_carries_graph(model, value, recurse)
        }
        "identifier" => {
            let name = model.node_text(value);
            is_backward_subject(model, scope, name)
                || last_assignment(model, name, at).is_some_and(|assignment| {
                    match unpacked_index(model, assignment, name) {
                        Some(index) => unpacked_carries_graph(model, scope, assignment, index, name, at, depth),
                        None => assignment.field("right").is_some_and(recurse),
                    }
                })
        }
        _ => false,
    }
}

/// Where `name` sits among the names that `assignment` unpacks (`loss, metrics = ...`); `None`
/// when it binds the whole value, or sits after a starred name or in a nested pattern.
fn unpacked_index(model: &Model<'_>, assignment: Node<'_>, name: &str) -> Option<usize> {
    let left = assignment.field("left")?;
    if !matches!(left.kind(), "pattern_list" | "tuple_pattern" | "list_pattern") {
        return None;
    }
    let mut cursor = left.walk();
    for (index, target) in left.named_children(&mut cursor).enumerate() {
        match target.kind() {
            "identifier" if model.node_text(target) == name => return Some(index),
            "identifier" | "attribute" | "subscript" => {}
            _ => return None,
        }
    }
    None
}

/// Whether the value unpacked into `name`, the `index`th of the names `assignment` binds,
/// carries autograd history: that element where the value is written out or a local helper
/// returns it; any output of a model. Of a loss function's results only the first, or one named
/// as a loss, is taken for a loss: the others are what it reports beside the loss (rewards,
/// accuracies), which loss functions commonly detach.
fn unpacked_carries_graph<'a>(
    model: &Model<'a>,
    scope: Node<'a>,
    assignment: Node<'a>,
    index: usize,
    name: &str,
    at: Node<'a>,
    depth: usize,
) -> bool {
    let Some(right) = assignment.field("right") else { return false };
    let recurse = |v: Node<'a>| carries_graph(model, scope, v, at, depth + 1);
    match right.kind() {
        _ if is_sequence(right) => element(right, index).is_some_and(recurse),
        "call" => {
            if let CallTarget::Local(function) = model.resolve_call(right) {
                return returned_values(function).into_iter().any(|returned| {
                    let returned = if is_sequence(returned) { element(returned, index) } else { Some(returned) };
                    returned.is_some_and(|returned| carries_graph(model, function, returned, returned, depth + 1))
                });
            }
            if !model.calls_a_model(right) && names_a_loss(model.callee_name(right).unwrap_or_default()) {
                return index == 0 || name.to_ascii_lowercase().contains("loss");
            }
            call_carries_graph(model, right, recurse)
        }
        _ => recurse(right),
    }
}

fn is_sequence(node: Node<'_>) -> bool {
    matches!(node.kind(), "expression_list" | "tuple" | "list")
}

/// The `index`th element of a written-out sequence.
fn element(sequence: Node<'_>, index: usize) -> Option<Node<'_>> {
    let mut cursor = sequence.walk();
    let elements: Vec<Node<'_>> = sequence.named_children(&mut cursor).filter(|e| e.kind() != "comment").collect();
    if elements.iter().any(|e| e.kind() == "list_splat") {
        return None;
    }
    elements.get(index).copied()
}

/// A function named as computing a loss: `criterion`, `compute_loss`, `F.cross_entropy`.
fn names_a_loss(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("loss") || lower.contains("criterion") || lower.contains("cross_entropy") || lower == "kl_div"
}

fn call_carries_graph<'a>(model: &Model<'a>, call: Node<'a>, recurse: impl Fn(Node<'a>) -> bool) -> bool {
    let name = model.callee_name(call).unwrap_or_default();
    if UNTRACKED_METHODS.contains(&name) {
        return false;
    }
    let function = ast::callee(call);
    let is_builtin = function.is_some_and(|f| f.kind() == "identifier")
        && model.imports.binding(name).is_none()
        && model.functions_named(name).is_empty();
    if is_builtin && TO_PYTHON.contains(&name) {
        return false;
    }
    if model.calls_a_model(call) {
        return true;
    }
    if names_a_loss(name) {
        return true;
    }
    if let Some(receiver) = ast::receiver(call).filter(|r| model.qualified_name(*r).is_none()) {
        // A tensor method: `loss.mean()`, `logits.float()`, `loss.detach().cpu()`.
        return recurse(receiver);
    }
    let combines = (is_builtin && COMBINING_BUILTINS.contains(&name))
        || model.call_qualified_name(call).is_some_and(|q| q.starts_with("torch."));
    combines && ast::positional_args(call).into_iter().any(recurse)
}

/// The expressions a function returns, not counting nested functions.
fn returned_values(function: Node<'_>) -> Vec<Node<'_>> {
    let mut values = Vec::new();
    let mut stack = vec![function];
    let mut cursor = function.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "return_statement" {
            values.extend(node.named_child(0));
        }
        if node.id() == function.id() || !ast::is_function_boundary(node) {
            stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
        }
    }
    values
}

/// `loss` in `loss.backward()` (or `scaler.scale(loss).backward()`) in the step body.
fn is_backward_subject(model: &Model<'_>, scope: Node<'_>, name: &str) -> bool {
    model.calls_named_within("backward", scope).any(|c| {
        model.backward_subject(c).and_then(ast::root_identifier).is_some_and(|root| model.node_text(root) == name)
    })
}

/// The last assignment to `name` before `at`, in the same function. Only the assignments inside
/// that function are looked at: a common name (`loss`) is assigned in every function of a long
/// file, and scanning them all for each candidate made the rule's cost grow with the square of
/// the file.
fn last_assignment<'a>(model: &Model<'a>, name: &str, at: Node<'a>) -> Option<Node<'a>> {
    let function = model.enclosing_function(at);
    let same_function = |a: &Node<'a>| model.enclosing_function(*a).map(|f| f.id()) == function.map(|f| f.id());
    let before_at = |a: &Node<'a>| ast::precedes(*a, at);
    match function {
        Some(function) => model.assignments_to_within(name, function).filter(same_function).filter(before_at).last(),
        None => model.assignments_to(name).iter().copied().filter(same_function).filter(before_at).last(),
    }
}

/// The accumulator, or something computed from it, is backpropagated: `total.backward()`,
/// `torch.stack(losses).mean().backward()`, `loss = sum(losses); loss.backward()`.
fn accumulator_is_backpropagated<'a>(model: &Model<'a>, scope: Node<'a>, accumulator: Node<'a>) -> bool {
    // The collection, for a store into one of its entries: `outputs[chunk].append(output)`.
    let collection = match accumulator.kind() {
        "subscript" => accumulator.field("value").unwrap_or(accumulator),
        _ => accumulator,
    };
    let name = model.node_text(collection);
    let function = model.scope_of(scope);
    // A value from the accumulator, or a name assigned one: `loss = sum(losses)` then
    // `loss.backward()`, `output = outputs[chunk].pop(0)` then `backward_step(output)`.
    let from_accumulator = |subject: Node<'a>, call: Node<'a>| {
        mentions(subject, model.text, name)
            || ast::root_identifier(subject).is_some_and(|root| {
                last_assignment(model, model.node_text(root), call)
                    .and_then(|a| a.field("right"))
                    .is_some_and(|value| mentions(value, model.text, name))
            })
    };
    let uses_graph = model
        .calls_named_within("backward", function)
        .chain(
            model.calls_named_within("grad", function).filter(|c| model.call_resolves_to(*c, &["torch.autograd.grad"])),
        )
        .chain(model.calls_named_within("manual_backward", function));
    for call in uses_graph {
        let subject = model.backward_subject(call).or_else(|| ast::positional_args(call).first().copied());
        if subject.is_some_and(|subject| from_accumulator(subject, call)) {
            return true;
        }
    }
    // A helper named for the backward pass that is handed one: the pipeline schedules'
    // `backward_step(optimizer, input_obj, output_obj, output_obj_grad)`.
    BACKWARD_HELPERS.iter().flat_map(|helper| model.calls_named_within(helper, function)).any(|call| {
        let keyword_values = ast::keyword_args(call).into_iter().filter_map(|keyword| keyword.field("value"));
        ast::positional_args(call).into_iter().chain(keyword_values).any(|argument| from_accumulator(argument, call))
    })
}

/// The names that pipeline schedules give their step that runs one micro-batch backward.
const BACKWARD_HELPERS: &[&str] = &["backward_step", "_backward_step", "backward_pass", "run_backward"];

/// `loss.backward()` then `loss = loss.detach()` in the same block, before the value is kept:
/// wherever the loop takes the value backward it keeps a detached copy. Where it does not (a
/// loss computed in chunks, backpropagated chunk by chunk only when asked, as gradient caching
/// does), the whole value is kept for the caller's backward.
fn detached_after_its_backward<'a>(model: &Model<'a>, scope: Node<'a>, value: Node<'a>, at: Node<'a>) -> bool {
    if value.kind() != "identifier" {
        return false;
    }
    let name = model.node_text(value);
    let is_detached_copy = |statement: Node<'a>| {
        let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment");
        assignment.is_some_and(|assignment| {
            assignment.field("left").is_some_and(|left| model.node_text(left) == name)
                && assignment.field("right").is_some_and(|right| {
                    right.kind() == "call"
                        && model.callee_name(right).is_some_and(|method| UNTRACKED_METHODS.contains(&method))
                        && ast::receiver(right).is_some_and(|receiver| model.node_text(receiver) == name)
                })
        })
    };
    let mut backwards = model
        .calls_named_within("backward", scope)
        .filter(|call| model.backward_subject(*call).is_some_and(|subject| model.node_text(subject) == name))
        .peekable();
    backwards.peek().is_some()
        && backwards.all(|call| {
            let statement = model.parent(call).filter(|p| p.kind() == "expression_statement");
            statement.is_some_and(|statement| {
                std::iter::successors(statement.next_named_sibling(), |s| s.next_named_sibling())
                    .take_while(|s| ast::precedes(*s, at))
                    .any(is_detached_copy)
            })
        })
}

/// Append `.detach()` to the kept value (to each element of a kept tuple or list).
fn detach_fix<'a>(model: &Model<'a>, scope: Node<'a>, value: Node<'a>, at: Node<'a>) -> Option<Fix> {
    let targets: Vec<Node<'a>> = match value.kind() {
        "tuple" | "list" => {
            let mut cursor = value.walk();
            let elements: Vec<Node<'a>> = value.named_children(&mut cursor).collect();
            elements.into_iter().filter(|e| carries_graph(model, scope, *e, at, 0)).collect()
        }
        _ => vec![value],
    };
    let mut edits = Vec::new();
    for target in targets {
        match target.kind() {
            "identifier" | "attribute" | "call" | "subscript" | "parenthesized_expression" => {
                edits.push(Edit::insertion(target.end_byte(), ".detach()"));
            }
            "list_splat" | "dictionary_splat" | "keyword_argument" => return None,
            _ => {
                edits.push(Edit::insertion(target.start_byte(), "("));
                edits.push(Edit::insertion(target.end_byte(), ").detach()"));
            }
        }
    }
    (!edits.is_empty()).then(|| Fix::safe("Keep a detached copy: append `.detach()`", edits))
}
