//! CUL404 retain-graph-in-loop.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::grammar_ids::FieldChild;
use crate::semantic::training::mentions;
use crate::semantic::{CallTarget, Model, ast};

pub const RULE: Rule = Rule {
    code: "CUL404",
    name: "retain-graph-in-loop",
    severity: Severity::Info,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/retain_graph_in_loop.scm"),
    prefilter: Prefilter { all_of: &[&["retain_graph"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# retain-graph-in-loop (CUL404)

## What it does
Flags `.backward(retain_graph=True)` in a step loop when nothing uses that graph again: no other
`.backward()` or `torch.autograd.grad` in the loop, no tensor carried from one iteration to the
next (an RNN's hidden state), and no graph built before the loop that the next iteration reuses.

## Why is this bad?
`backward()` normally frees the activations the graph saved as soon as it has used them.
`retain_graph=True` keeps all of them until the loss tensor is rebound in the next iteration, so
the saved activations of one step are still allocated while the next forward pass builds its
own: peak memory can double. When no second backward needs them, they are kept for nothing.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward(retain_graph=True)
    optimizer.step()
    optimizer.zero_grad()
```

## Use instead
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

## Fix safety
There is no automatic fix: whether a later backward needs the graph can depend on code the
checker cannot see. Remove the argument by hand if no second backward uses the graph; PyTorch
raises "Trying to backward through the graph a second time" if one does.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch: `torch.Tensor.backward` — https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
- PyTorch: autograd mechanics, saved tensors — https://pytorch.org/docs/stable/notes/autograd.html#saved-tensors
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    let Some(step_loop) = model.enclosing_step_loop(call).map(|l| l.node) else { return };
    let Some(subject) = model.backward_subject(call) else { return };
    if other_use_of_graph(model, step_loop, call)
        || subject_built_outside(model, step_loop, subject, call)
        || carries_state(model, step_loop)
        || reuses_graph_from_before(model, step_loop)
    {
        return;
    }
    checker.report_node(
        call,
        "`retain_graph=True` keeps this step's saved activations alive, and nothing uses the graph again",
    );
}

/// Another backward or `torch.autograd.grad` in the loop, or a helper that may run one.
fn other_use_of_graph<'a>(model: &Model<'a>, step_loop: Node<'a>, call: Node<'a>) -> bool {
    model.own_calls_within(step_loop).filter(|c| c.id() != call.id()).any(|c| {
        if runs_backward(model, c) {
            return true;
        }
        match model.resolve_call(c) {
            CallTarget::Local(function) => model.own_calls_within(function).any(|inner| runs_backward(model, inner)),
            CallTarget::Unseen => true,
            _ => false,
        }
    })
}

fn runs_backward(model: &Model<'_>, call: Node<'_>) -> bool {
    matches!(ast::callee_name(call, model.text), Some("backward" | "manual_backward"))
        || model.call_resolves_to(call, &["torch.autograd.grad", "torch.autograd.backward"])
}

/// The differentiated tensor is not rebuilt inside the loop: every iteration backpropagates
/// through the same graph again.
fn subject_built_outside<'a>(model: &Model<'a>, step_loop: Node<'a>, subject: Node<'a>, call: Node<'a>) -> bool {
    if model.calls_within(subject).next().is_some() {
        return false;
    }
    let Some(root) = ast::root_identifier(subject) else { return true };
    let name = model.node_text(root);
    !assignments_in(step_loop).iter().any(|a| {
        ast::precedes(*a, call) && a.field("left").is_some_and(|l| ast::target_names(l, model.text).contains(&name))
    })
}

/// A name assigned in the loop from an expression that reads it (`out, h = rnn(x, h)`) and is
/// not detached: the next iteration's graph runs through this one.
fn carries_state<'a>(model: &Model<'a>, step_loop: Node<'a>) -> bool {
    assignments_in(step_loop).into_iter().any(|assignment| {
        let (Some(left), Some(right)) = (assignment.field("left"), assignment.field("right")) else {
            return false;
        };
        let has_call = model.calls_within(right).next().is_some();
        let detached = model.calls_within(right).any(|c| ast::callee_name(c, model.text) == Some("detach"));
        has_call
            && !detached
            && ast::target_names(left, model.text).into_iter().any(|name| mentions(right, model.text, name))
    })
}

/// The loop reads a model output computed before the loop: every iteration backpropagates
/// through that shared part of the graph.
fn reuses_graph_from_before<'a>(model: &Model<'a>, step_loop: Node<'a>) -> bool {
    let scope = model.enclosing_function(step_loop);
    let in_loop = assignments_in(step_loop);
    model.assignment_targets().into_iter().any(|(name, assignments)| {
        let built_before = assignments.iter().any(|a| {
            model.enclosing_function(*a).map(|f| f.id()) == scope.map(|f| f.id())
                && ast::precedes(*a, step_loop)
                && a.field("right").is_some_and(|r| is_model_output(model, r))
        });
        built_before
            && !in_loop.iter().any(|a| assignments.iter().any(|b| b.id() == a.id()))
            && mentions(step_loop, model.text, name)
    })
}

/// `encoder(x)` or `model(x).logits`, not detached; `Net()` (a class) is a constructor.
fn is_model_output(model: &Model<'_>, value: Node<'_>) -> bool {
    let calls: Vec<Node<'_>> = model.calls_within(value).collect();
    !calls.iter().any(|c| matches!(ast::callee_name(*c, model.text), Some("detach" | "item" | "tolist")))
        && calls.iter().any(|c| {
            model.calls_a_model(*c)
                && ast::callee_name(*c, model.text).is_some_and(|n| !n.starts_with(|ch: char| ch.is_ascii_uppercase()))
        })
}

/// Assignments in the loop, not inside nested functions.
fn assignments_in(step_loop: Node<'_>) -> Vec<Node<'_>> {
    let mut found = Vec::new();
    let mut stack = vec![step_loop];
    let mut cursor = step_loop.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "assignment" {
            found.push(node);
        }
        if !ast::is_function_boundary(node) {
            stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
        }
    }
    found
}
