//! CUL501 missing-zero-grad.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::Fix;
use crate::prefilter::STEP_TOKENS;
use crate::semantic::training::same_or_nested;
use crate::semantic::{CallTarget, Model, ast};
use crate::text::indentation_at;

pub const RULE: Rule = Rule {
    code: "CUL501",
    name: "missing-zero-grad",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/missing_zero_grad.scm"),
    prefilter: Prefilter { all_of: &[&[".step("], STEP_TOKENS], scan: None },
    check,
    doc: DOC,
    knowledge: None,
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# missing-zero-grad (CUL501)

## What it does
Flags the `step()` of an optimizer (`optimizer.step()` or `scaler.step(optimizer)`) in a step loop,
or in Lightning's `training_step`, when nothing in that loop zeroes the optimizer's gradients.

Zeroing is tracked per optimizer. It counts as `optimizer.zero_grad()`, `model.zero_grad()` on a
model whose parameters the optimizer updates, a loop that sets `p.grad = None` (or calls
`p.grad.zero_()`, or sets `p.grad = torch.zeros_like(p.grad)` as Pyro's `zero_grads` does), or a
helper called from the loop that does one of these. A GAN that zeroes only the discriminator's
optimizer while stepping both is flagged for the generator's. When the loop calls a helper the
checker cannot see, the rule stays quiet, and so it does for an optimizer that is built afresh
inside the loop (each one steps once).

## Why is this bad?
`.backward()` adds into `.grad`; it never overwrites it. Without zeroing, every step applies the
sum of all gradients so far, so updates grow without bound and training diverges. It wastes memory
too: the gradients of every step stay allocated and are summed in place, so `set_to_none=True`
(which frees them between steps) never gets a chance to return their memory.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
```

## Fix safety
The fix inserts `optimizer.zero_grad(set_to_none=True)` right after the step. It is unsafe: code
that deliberately accumulates gradients over several steps, or reads `.grad` after the step, would
behave differently.

## References
- PyTorch: `torch.optim.Optimizer.zero_grad` — https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
- PyTorch: zeroing out gradients — https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    let Some(optimizer) = model.stepped_optimizer(call) else { return };
    let Some(scope) = model.step_scope(call) else { return };
    let name = model.node_text(optimizer);
    // Most step bodies zero the gradients, which is the cheapest of these to see.
    if zeroes_or_may_zero(model, scope, name) {
        return;
    }
    let stepped_before = model
        .own_calls_within(scope)
        .take_while(|c| c.id() != call.id())
        .any(|c| model.stepped_optimizer(c).is_some_and(|o| model.node_text(o) == name));
    // An optimizer built afresh in each iteration usually steps fresh tensors once.
    let built_in_body =
        model.assignments_to_within(name, scope).any(|a| ast::precedes(a, call) && model.assigns_new_optimizer(a));
    if stepped_before || built_in_body {
        return;
    }
    let fix = insert_zero_grad(model, call, name);
    let diagnostic = checker.report_node(
        call,
        format!("`{name}` is stepped in every iteration but its gradients are never zeroed, so they keep accumulating"),
    );
    diagnostic.with_fact(format!("training step: {}, with no `zero_grad` of `{name}` in it", model.quote(scope)));
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// Whether the step body zeroes `optimizer`'s gradients, or calls something that might.
fn zeroes_or_may_zero<'a>(model: &Model<'a>, scope: Node<'a>, optimizer: &str) -> bool {
    // Found only when a zeroing call names something else than the optimizer itself.
    let others = std::cell::OnceCell::new();
    let own_models = std::cell::OnceCell::new();
    let counts_for_this_optimizer = |receiver: &str| {
        if receiver == optimizer
            || own_models.get_or_init(|| model.optimizer_models(optimizer)).iter().any(|m| same_or_nested(receiver, m))
        {
            return true;
        }
        // Another optimizer, or a model only another optimizer updates: zeroing it leaves this
        // optimizer's gradients alone.
        !others
            .get_or_init(|| other_optimizers(model, scope, optimizer))
            .iter()
            .any(|(other, models)| receiver == *other || models.iter().any(|m| same_or_nested(receiver, m)))
    };
    let zeroings = model.gradient_zeroings_within(scope);
    if zeroings.iter().any(|zeroing| zeroing.owner.is_none_or(counts_for_this_optimizer)) {
        return true;
    }
    // What the zeroings above left out (those of other optimizers' gradients) is settled.
    let settled = |call: &Node<'a>| zeroings.iter().any(|zeroing| zeroing.node.id() == call.id());
    model.own_calls_within(scope).filter(|call| !settled(call)).any(|call| match model.resolve_call(call) {
        CallTarget::Local(function) if model.enclosing_function(call).is_none_or(|f| f.id() != function.id()) => {
            let summary = model.function_summary(function);
            summary.zeroes_grads || summary.calls_unseen
        }
        CallTarget::Project(summary) => summary.zeroes_grads || summary.calls_unseen,
        CallTarget::Unseen => true,
        CallTarget::Dynamic => model.callee_name(call).is_some_and(|name| name.contains("zero")),
        _ => false,
    })
}

/// The other optimizers the same step body steps, with the models each updates.
fn other_optimizers<'a>(model: &Model<'a>, scope: Node<'a>, optimizer: &str) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut others: Vec<(&'a str, Vec<&'a str>)> = Vec::new();
    for call in model.own_calls_within(scope) {
        let Some(other) = model.stepped_optimizer(call).map(|o| model.node_text(o)) else { continue };
        if other != optimizer && !others.iter().any(|(o, _)| *o == other) {
            others.push((other, model.optimizer_models(other)));
        }
    }
    others
}

fn insert_zero_grad<'a>(model: &Model<'a>, call: Node<'a>, optimizer: &str) -> Option<Fix> {
    let statement = model.parent(call).filter(|s| s.kind() == "expression_statement")?;
    edits::own_lines(model.text, statement)?;
    let indent = indentation_at(model.text, statement.start_byte());
    let line = format!("{optimizer}.zero_grad(set_to_none=True)");
    let edit = edits::insert_line_after(model.text, statement, indent, &line);
    Some(Fix::unsafe_edits(format!("Call `{line}` after the step"), vec![edit]))
}
