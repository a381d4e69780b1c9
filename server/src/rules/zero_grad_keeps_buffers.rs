//! CUL503 zero-grad-keeps-buffers.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast};
use crate::text::{TextRange, line_start};

pub const RULE: Rule = Rule {
    code: "CUL503",
    name: "zero-grad-keeps-buffers",
    severity: Severity::Info,
    fix: FixAvailability::Always,
    query: include_str!("../../../queries/python/zero_grad_keeps_buffers.scm"),
    prefilter: Prefilter { all_of: &[&["zero_grad"], &["False"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# zero-grad-keeps-buffers (CUL503)

## What it does
Flags `zero_grad(set_to_none=False)` and the positional `zero_grad(False)`, on an optimizer or a
module.

## Why is this bad?
With `set_to_none=False`, every parameter keeps a `.grad` tensor the size of the parameter, filled
with zeros, between steps. That is a full copy of the model's size held through the forward pass,
when activation memory peaks, and each step pays for a memset kernel per parameter. With
`set_to_none=True` (the default since PyTorch 2.0) the gradients are freed, the next backward
allocates them fresh, and the forward pass has that memory to spare.

## Example
```python
optimizer.zero_grad(set_to_none=False)
```

## Use instead
```python
optimizer.zero_grad()
```

Not flagged in a file that updates gradients in place (`p.grad += g`, `p.grad /= n`,
`p.grad.add_(g)`), as a parameter server or a hand-written all-reduce does: it accumulates into
the zeroed tensors, and `None` gradients would break it. Nor in a file that captures CUDA graphs (`torch.cuda.graph`, `torch.cuda.CUDAGraph`,
`torch.cuda.make_graphed_callables`, tensordict's `CudaGraphModule`): a captured backward
writes into the `.grad` tensors that existed at capture, so the step needs them kept, zeroed in
place, between replays.

## Fix safety
The fix drops the argument. It is safe for ordinary training loops. Code that reads `p.grad`
between `zero_grad()` and the next backward (expecting zeros, not `None`) relies on the old
behaviour: suppress the finding there.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch: `torch.optim.Optimizer.zero_grad` — https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
- PyTorch: `torch.nn.Module.zero_grad` — https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.zero_grad
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    if defines_own_zero_grad(model, call)
        || model.file_fact(captures_cuda_graphs)
        || model.file_fact(updates_grads_in_place)
    {
        return;
    }
    let Some(arguments) = ast::arguments(call) else { return };
    let fix = drop_argument(model, arguments);
    let diagnostic = checker.report_node(
        call,
        "`zero_grad(set_to_none=False)` keeps a zero-filled gradient tensor allocated for every parameter",
    );
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// `(set_to_none=False)` becomes `()`. With comments inside the parentheses only the argument
/// (and its comma) goes, so the comments stay.
fn drop_argument(model: &Model<'_>, arguments: Node<'_>) -> Option<Fix> {
    let mut cursor = arguments.walk();
    let children: Vec<Node<'_>> = arguments.named_children(&mut cursor).collect();
    let [argument] = children.iter().filter(|c| c.kind() != "comment").copied().collect::<Vec<_>>()[..] else {
        return None;
    };
    let title = "Call `zero_grad()` so the gradients are freed";
    if children.len() == 1 {
        return Some(Fix::safe(title, vec![Edit::replacement(TextRange::of(arguments), "()")]));
    }
    let mut end = argument.end_byte();
    if let Some(comma) = argument.next_sibling().filter(|s| s.kind() == ",") {
        end = comma.end_byte();
    }
    let text = model.text;
    let line_start = line_start(text, argument.start_byte());
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    let alone_on_line =
        text[line_start..argument.start_byte()].trim().is_empty() && text[end..line_end].trim().is_empty();
    let range =
        if alone_on_line { TextRange::new(line_start, line_end) } else { TextRange::new(argument.start_byte(), end) };
    Some(Fix::safe(title, vec![Edit::deletion(range)]))
}

/// The file captures CUDA graphs. A captured backward writes into the `.grad` tensors that
/// existed at capture: `set_to_none=False` keeps them in place for the replays.
fn captures_cuda_graphs(model: &Model<'_>) -> bool {
    const CUDA_GRAPH_CAPTURE: &[&str] = &[
        "torch.cuda.graph",
        "torch.cuda.CUDAGraph",
        "torch.cuda.make_graphed_callables",
        "torch.cuda.graphs.graph",
        "torch.cuda.graphs.CUDAGraph",
        "torch.cuda.graphs.make_graphed_callables",
        "tensordict.nn.CudaGraphModule",
        "tensordict.nn.cudagraphs.CudaGraphModule",
    ];
    model.calls_to(CUDA_GRAPH_CAPTURE).next().is_some()
}

/// The file adds into, or scales, `.grad` tensors in place (`p.grad += g`, `p.grad /= n`,
/// `p.grad.add_(g)`): a parameter server or a manual all-reduce accumulates into the zeroed
/// gradients, which `set_to_none=True` would turn into `None` and break.
fn updates_grads_in_place(model: &Model<'_>) -> bool {
    if !model.text.contains(".grad") {
        return false;
    }
    let is_grad = |node: Node<'_>| {
        node.kind() == "attribute" && node.field("attribute").is_some_and(|a| model.node_text(a) == "grad")
    };
    let in_place_call = ["add_", "sub_", "mul_", "div_", "copy_"]
        .iter()
        .flat_map(|name| model.calls_named(name))
        .any(|call| ast::receiver(*call).is_some_and(is_grad));
    if in_place_call {
        return true;
    }
    let mut stack = vec![model.tree.root_node()];
    let mut cursor = model.tree.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "augmented_assignment" && node.field("left").is_some_and(is_grad) {
            return true;
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

/// `self.zero_grad(False)` inside a class that defines its own `zero_grad` calls that method,
/// whose parameter may mean something else.
fn defines_own_zero_grad<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    let Some(receiver) = ast::receiver(call) else { return true };
    if model.node_text(receiver) != "self" {
        return false;
    }
    let class = model.enclosing_function(call).and_then(|f| model.method_class(f));
    class.is_some_and(|class| {
        model.functions_named("zero_grad").iter().any(|f| model.method_class(*f).is_some_and(|c| c.id() == class.id()))
    })
}
