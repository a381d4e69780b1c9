//! CUL502 unscaled-gradient-accumulation.

use std::collections::HashSet;

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::Fix;
use crate::grammar_ids::FieldChild;
use crate::semantic::training::mentions;
use crate::semantic::{CallTarget, Model, ast};

pub const RULE: Rule = Rule {
    code: "CUL502",
    name: "unscaled-gradient-accumulation",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/unscaled_gradient_accumulation.scm"),
    prefilter: Prefilter { all_of: &[&["%"], &["backward(", "backward ("]], scan: None },
    check,
    doc: DOC,
    knowledge: None,
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# unscaled-gradient-accumulation (CUL502)

## What it does
Flags the `.backward()` of a step loop that accumulates gradients (its `optimizer.step()` runs
under `if (i + 1) % accum == 0:`) when the loss is backpropagated on every iteration without being
divided by the accumulation count.

Not flagged when a division happens anywhere on the way from the loss to `.backward()`
(`loss = loss / accum`, `loss /= accum`, `(loss / accum).backward()`, a division where the loss is
computed), when the gradients are divided before the step (`p.grad /= accum`,
`torch._foreach_div_(grads, accum)`, a helper named for it such as
`scale_grads(model, 1 / num_tokens)`, or a helper of the file that does one of these), when
`accelerator.backward(loss)` or a DeepSpeed engine's `backward` does the scaling, or when the
guard zeroes the gradients, backpropagates and steps on its own (TD3's delayed actor update,
beside a critic stepped every iteration).

## Why is this bad?
Gradients add up in `.grad` over the `accum` micro-batches, so the step applies `accum` times the
gradient of one batch. The effective learning rate grows with the accumulation count. People then
lower the learning rate, or shrink the batch further, or turn accumulation off and run out of
memory at the batch size they actually wanted: accumulation exists to reach a large batch in the
memory of a small one, and it only does that when each micro-batch's loss is divided by `accum`.

## Example
```python
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
```

## Use instead
```python
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss = loss / accum
    loss.backward()
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
```

## Fix safety
The fix inserts `loss = loss / accum` before the backward. It is unsafe: it changes the size of
every update, and code after the backward that logs `loss` will log the divided value.

## References
- PyTorch: gradient accumulation with AMP — https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation
- Hugging Face Accelerate: gradient accumulation — https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation
"#;

/// How far the loss is traced back through the names it is computed from.
const PATH_DEPTH: usize = 4;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    // `accelerator.backward(loss)` and `engine.backward(loss)` scale the loss themselves.
    if !ast::positional_args(call).is_empty() {
        return;
    }
    let Some(step_loop) = model.enclosing_step_loop(call).map(|l| l.node) else { return };
    let Some(subject) = model.backward_subject(call) else { return };
    let Some((guard, divisor)) = accumulation_guard(model, step_loop) else { return };
    if ast::contains(guard, call)
        || guard_zeroes_before_its_backward(model, guard)
        || zeroed_before_the_guard(model, step_loop, call, guard)
        || divided_on_path(model, step_loop, subject, call, divisor)
    {
        return;
    }
    if divides_gradients(model, step_loop) {
        return;
    }
    let divisor_text = model.node_text(divisor);
    let fix = insert_division(model, call, subject, divisor);
    let diagnostic = checker.report_node(
        call,
        format!(
            "The optimizer steps every `{divisor_text}` iterations, but each loss is backpropagated undivided: \
             the step applies `{divisor_text}` times the gradient"
        ),
    );
    diagnostic.with_related(crate::text::TextRange::of(guard), "the step is taken here, every few iterations");
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// The guarded step applies only a backward of its own: inside the guard, gradients are zeroed,
/// then backpropagated, then stepped. Stable-Baselines3's TD3 steps its critic every iteration
/// and its actor every `policy_delay` iterations this way.
fn guard_zeroes_before_its_backward<'a>(model: &Model<'a>, guard: Node<'a>) -> bool {
    let calls: Vec<Node<'a>> = model.own_calls_within(guard).collect();
    model.gradient_zeroings_within(guard).iter().any(|zeroing| {
        calls.iter().filter(|c| model.callee_name(**c) == Some("backward")).any(|backward| {
            ast::precedes(zeroing.node, *backward)
                && calls.iter().any(|step| model.stepped_optimizer(*step).is_some() && ast::precedes(*backward, *step))
        })
    })
}

/// Gradients are zeroed on every iteration after this backward and before the guarded step, so
/// what this backward adds never reaches it: WGAN's critic steps every iteration, then
/// `optimizer_G.zero_grad()`, then the generator steps every `n_critic` iterations on a backward
/// of its own.
fn zeroed_before_the_guard<'a>(model: &Model<'a>, step_loop: Node<'a>, backward: Node<'a>, guard: Node<'a>) -> bool {
    model.gradient_zeroings_within(step_loop).iter().any(|zeroing| {
        ast::precedes(backward, zeroing.node)
            && ast::precedes(zeroing.node, guard)
            && !model
                .ancestors(zeroing.node)
                .take_while(|n| n.id() != step_loop.id())
                .any(|n| matches!(n.kind(), "if_statement" | "for_statement" | "while_statement" | "try_statement"))
    })
}

/// The `if` in the step loop whose condition takes a modulo and whose body steps an optimizer,
/// with the modulo's divisor. An `if` that steps another optimizer in its `else` alternates
/// between optimizers rather than accumulating.
fn accumulation_guard<'a>(model: &Model<'a>, step_loop: Node<'a>) -> Option<(Node<'a>, Node<'a>)> {
    for step in model.own_calls_within(step_loop).filter(|c| model.stepped_optimizer(*c).is_some()) {
        for node in model.ancestors(step).take_while(|n| n.id() != step_loop.id()) {
            if node.kind() == "if_statement"
                && node.field("consequence").is_some_and(|c| ast::contains(c, step))
                && let Some(divisor) = node.field("condition").and_then(|c| modulo_divisor(model, c))
                && !alternative_steps(model, node)
            {
                return Some((node, divisor));
            }
        }
    }
    None
}

/// `accum` in `(i + 1) % accum == 0`; not string formatting, not `% 1`.
fn modulo_divisor<'a>(model: &Model<'a>, condition: Node<'a>) -> Option<Node<'a>> {
    let mut stack = vec![condition];
    let mut cursor = condition.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "binary_operator"
            && node.field("operator").is_some_and(|o| o.kind() == "%")
            && node.field("left").is_some_and(|l| !matches!(l.kind(), "string" | "concatenated_string"))
            && let Some(divisor) = node.field("right")
            && !(divisor.kind() == "integer" && matches!(model.node_text(divisor), "0" | "1"))
        {
            return Some(divisor);
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    None
}

fn alternative_steps(model: &Model<'_>, if_statement: Node<'_>) -> bool {
    let mut cursor = if_statement.walk();
    if_statement
        .children_by_field_name("alternative", &mut cursor)
        .any(|alternative| model.calls_within(alternative).any(|c| model.stepped_optimizer(c).is_some()))
}

/// Whether the loss is divided somewhere between where it is computed and the backward: in the
/// backward's own expression, or in the assignments of the names it is computed from.
fn divided_on_path<'a>(
    model: &Model<'a>,
    step_loop: Node<'a>,
    subject: Node<'a>,
    call: Node<'a>,
    divisor: Node<'a>,
) -> bool {
    let divisor_text = model.node_text(divisor);
    let mut visited = HashSet::new();
    let mut frontier = vec![subject];
    for _ in 0..=PATH_DEPTH {
        let mut next = Vec::new();
        for expression in frontier {
            if divides(model, expression) || mentions(expression, model.text, divisor_text) {
                return true;
            }
            if calls_helper_that_may_divide(model, expression) {
                return true;
            }
            for name in names_read(model, expression) {
                if !visited.insert(name) {
                    continue;
                }
                // `with amp.scale_loss(loss, optimizer) as scaled_loss: scaled_loss.backward()`:
                // the name is bound by the `with` around the backward, from the loss it scales.
                next.extend(with_bindings_around(model, call, name));
                for assignment in assignments_before(model, step_loop, name, call) {
                    if assignment.kind() == "augmented_assignment"
                        && assignment.field("operator").is_some_and(|o| o.kind() == "/=")
                    {
                        return true;
                    }
                    next.extend(assignment.field("right"));
                }
            }
        }
        frontier = next;
    }
    false
}

/// The context expressions that a `with` statement around `call` binds to `name`
/// (`with amp.scale_loss(loss, optimizer) as name:`).
fn with_bindings_around<'a>(model: &Model<'a>, call: Node<'a>, name: &str) -> Vec<Node<'a>> {
    let mut bound = Vec::new();
    for with_statement in model.ancestors(call).filter(|n| n.kind() == "with_statement") {
        let mut cursor = with_statement.walk();
        for clause in with_statement.named_children(&mut cursor).filter(|c| c.kind() == "with_clause") {
            let mut clause_cursor = clause.walk();
            for item in clause.named_children(&mut clause_cursor).filter(|i| i.kind() == "with_item") {
                let Some(pattern) = item.field("value").filter(|v| v.kind() == "as_pattern") else { continue };
                let binds_name = pattern.field("alias").is_some_and(|alias| model.node_text(alias) == name);
                if binds_name && let Some(expression) = pattern.named_child(0) {
                    bound.push(expression);
                }
            }
        }
    }
    bound
}

/// A `/` or `//` operator, or a `div` call, in the expression.
fn divides(model: &Model<'_>, expression: Node<'_>) -> bool {
    let mut stack = vec![expression];
    let mut cursor = expression.walk();
    while let Some(node) = stack.pop() {
        match node.kind() {
            "binary_operator" if node.field("operator").is_some_and(|o| matches!(o.kind(), "/" | "//")) => {
                return true;
            }
            "call" if matches!(model.callee_name(node), Some("div" | "div_" | "true_divide" | "divide")) => {
                return true;
            }
            _ => {}
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

/// A call of a helper in this project whose body divides, or that the checker cannot see.
fn calls_helper_that_may_divide<'a>(model: &Model<'a>, expression: Node<'a>) -> bool {
    model.calls_within(expression).any(|call| match model.resolve_call(call) {
        CallTarget::Local(function) => function.field("body").is_some_and(|b| divides(model, b)),
        CallTarget::Project(_) | CallTarget::Unseen => true,
        _ => false,
    })
}

/// Plain names the expression reads (not attribute or keyword names).
fn names_read<'a>(model: &Model<'a>, expression: Node<'a>) -> Vec<&'a str> {
    let mut names = Vec::new();
    // Each node with its parent, which the walk down knows and `Node::parent` would look up.
    let mut stack = vec![(expression, model.parent(expression))];
    let mut cursor = expression.walk();
    while let Some((node, parent)) = stack.pop() {
        if node.kind() == "identifier" {
            let is_field = parent.is_some_and(|p| {
                (p.kind() == "attribute" && p.field("attribute").is_some_and(|a| a.id() == node.id()))
                    || (p.kind() == "keyword_argument" && p.field("name").is_some_and(|n| n.id() == node.id()))
            });
            if !is_field {
                names.push(model.node_text(node));
            }
        }
        stack.extend(node.named_children(&mut cursor).map(|child| (child, Some(node))).collect::<Vec<_>>());
    }
    names
}

/// Assignments and augmented assignments to `name` before `call`, in the function that holds the
/// step loop (or at module level).
fn assignments_before<'a>(model: &Model<'a>, step_loop: Node<'a>, name: &str, call: Node<'a>) -> Vec<Node<'a>> {
    let scope = model.scope_of(step_loop);
    let mut found = Vec::new();
    let mut stack = vec![scope];
    let mut cursor = scope.walk();
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "assignment" | "augmented_assignment")
            && ast::precedes(node, call)
            && node.field("left").is_some_and(|l| ast::target_names(l, model.text).contains(&name))
        {
            found.push(node);
        }
        if node.id() == scope.id() || !ast::is_function_boundary(node) {
            stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
        }
    }
    found
}

/// The gradients are scaled instead, in the loop: `p.grad /= accum`, `p.grad.div_(accum)`,
/// `torch._foreach_div_(grads, accum)`, a helper named for it (`scale_grads(model, 1 / tokens)`,
/// as torchtune's recipes normalise by the tokens of the whole accumulation), or a helper of this
/// file that does one of these.
fn divides_gradients<'a>(model: &Model<'a>, step_loop: Node<'a>) -> bool {
    scales_gradients_within(model, step_loop, true)
}

fn scales_gradients_within<'a>(model: &Model<'a>, within: Node<'a>, follow_helpers: bool) -> bool {
    let is_grad = |n: Node<'_>| {
        let text = model.node_text(n);
        text.ends_with(".grad") || text.ends_with(".grad.data")
    };
    let mut stack = vec![within];
    let mut cursor = within.walk();
    while let Some(node) = stack.pop() {
        let scales = match node.kind() {
            "augmented_assignment" => {
                node.field("operator").is_some_and(|o| matches!(o.kind(), "/=" | "*="))
                    && node.field("left").is_some_and(is_grad)
            }
            "call" => match model.callee_name(node) {
                Some("div_" | "mul_") => ast::receiver(node).is_some_and(is_grad),
                Some("_foreach_div_" | "_foreach_mul_") => true,
                Some(name) if names_gradient_scaling(name) => true,
                _ => {
                    follow_helpers
                        && matches!(model.resolve_call(node), CallTarget::Local(helper)
                            if scales_gradients_within(model, helper, false))
                }
            },
            _ => false,
        };
        if scales {
            return true;
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

/// A function named for scaling gradients, by the words of its name: `scale_grads`,
/// `rescale_gradients`, `divide_grads`, `normalize_gradients`. Not clipping (`clip_grad_norm_`),
/// not mixed precision's unscaling (`unscale_grads`), and not `average_gradients`, which in a
/// data-parallel script divides by the number of processes, not by the accumulation.
fn names_gradient_scaling(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let words = || lower.split('_').filter(|word| !word.is_empty());
    words().any(|word| word.starts_with("grad"))
        && words().any(|word| ["scale", "rescale", "div", "normaliz"].iter().any(|verb| word.starts_with(verb)))
}

/// `loss = loss / accum` before the backward, when the loss is a plain name.
fn insert_division<'a>(model: &Model<'a>, call: Node<'a>, subject: Node<'_>, divisor: Node<'_>) -> Option<Fix> {
    if subject.kind() != "identifier" {
        return None;
    }
    // Around a syntax error the parser may not see the inserted line as an assignment before the
    // backward, so the finding would stay and each `--fix` pass would insert the line again.
    let scope = model.scope_of(call);
    if scope.has_error() {
        return None;
    }
    let statement = model.parent(call).filter(|s| s.kind() == "expression_statement")?;
    edits::own_lines(model.text, statement)?;
    let loss = model.node_text(subject);
    let divisor = match divisor.kind() {
        "identifier" | "attribute" | "integer" | "call" | "subscript" | "parenthesized_expression" => {
            model.node_text(divisor).to_owned()
        }
        _ => format!("({})", model.node_text(divisor)),
    };
    let line = format!("{loss} = {loss} / {divisor}");
    let edit = edits::insert_line_before(model.text, statement, &line)?;
    Some(Fix::unsafe_edits(format!("Divide the loss before the backward: `{line}`"), vec![edit]))
}
