//! CUL801 device-index-out-of-range.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast, names};

pub const RULE: Rule = Rule {
    code: "CUL801",
    name: "device-index-out-of-range",
    severity: Severity::Error,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/device_index_out_of_range.scm"),
    prefilter: Prefilter { all_of: &[&["cuda", "device_ids", "output_device"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/invalid-device-ordinal"),
    deprecated: false,
    quiet_in_test_code: false,
    needs_hardware: true,
};

const DOC: &str = r#"# device-index-out-of-range (CUL801)

## What it does
Flags a literal CUDA device index (`"cuda:3"`, `torch.cuda.set_device(3)`, `.cuda(3)`,
`torch.device("cuda", 3)`, `device_ids=[0, 1, 2, 3]`) that is not below the number of GPUs the
job will see. The count comes from `culint probe` on this machine, or from `--gpus`.

## Why is this bad?
CUDA numbers only the visible devices, from 0, after `CUDA_VISIBLE_DEVICES`. An index past the
end fails at the first use with `CUDA error: invalid device ordinal`, after the job has queued,
started and loaded its data. On a shared machine where `CUDA_VISIBLE_DEVICES` picks two GPUs,
`cuda:3` fails even though the server has eight.

## Example
```python
# on a machine with 2 visible GPUs
model = model.to("cuda:3")
```

## Use instead
```python
local_rank = int(os.environ["LOCAL_RANK"])
model = model.to(f"cuda:{local_rank}")
```
or choose the GPU from outside: `CUDA_VISIBLE_DEVICES=3 python train.py` with `cuda:0` in code.

## Fix safety
No fix: which device was meant depends on the machine the job runs on.

## References
- Knowledge entry: `cuda/invalid-device-ordinal` (`culint explain`)
- CUDA: `CUDA_VISIBLE_DEVICES` — https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
"#;

/// Calls whose first integer argument is a device index.
const DEVICE_INDEX_CALLS: &[&str] = &["torch.cuda.set_device", "torch.cuda.device", "torch.device"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let Some(gpus) = checker.hardware.and_then(|facts| facts.gpus) else { return };
    let model = checker.model;
    let node = candidate.node;
    let Some(index) = device_index(model, node) else { return };
    if index < gpus {
        return;
    }
    let shown = model.node_text(node);
    let visible = match gpus {
        0 => "no GPU is visible".to_owned(),
        1 => "1 GPU is visible (index 0)".to_owned(),
        n => format!("{n} GPUs are visible (indices 0 to {})", n - 1),
    };
    checker.report_node(
        node,
        format!("`{shown}` names GPU {index}, but {visible}: CUDA fails with \"invalid device ordinal\""),
    );
}

/// The device index a candidate names, when it really is one.
fn device_index(model: &Model<'_>, node: Node<'_>) -> Option<usize> {
    if node.kind() == "string" {
        let value = ast::string_value(node, model.text)?;
        return is_value_position(node).then(|| value.strip_prefix("cuda:")?.parse().ok()).flatten();
    }
    let index: usize = model.node_text(node).parse().ok()?;
    let parent = node.parent()?;
    match parent.kind() {
        "argument_list" => {
            let call = parent.parent()?;
            let is_device_call = model.call_resolves_to(call, DEVICE_INDEX_CALLS)
                || model.call_resolves_to(call, names::SET_DEVICE)
                || is_tensor_cuda_method(model, call);
            if model.call_resolves_to(call, &["torch.device"]) {
                // torch.device("cuda", 3): only with "cuda" as the type.
                let first = ast::positional_args(call).into_iter().next()?;
                return (ast::string_value(first, model.text)? == "cuda").then_some(index);
            }
            is_device_call.then_some(index)
        }
        // device_ids=[...] and output_device=N of DataParallel / DistributedDataParallel.
        "list" | "keyword_argument" => {
            let call = enclosing_call(node)?;
            let parallel = model.call_resolves_to(call, names::DDP)
                || model.call_resolves_to(call, &["torch.nn.DataParallel", "torch.nn.parallel.DataParallel"]);
            parallel.then_some(index)
        }
        _ => None,
    }
}

/// `x.cuda(3)` on something other than the torch module: a tensor or module method.
fn is_tensor_cuda_method(model: &Model<'_>, call: Node<'_>) -> bool {
    let Some(function) = ast::callee(call) else { return false };
    function.kind() == "attribute"
        && function.field("attribute").is_some_and(|a| model.node_text(a) == "cuda")
        && model.call_qualified_name(call).is_none_or(|q| !q.starts_with("torch.cuda"))
}

/// A string used as a value: a call argument, a keyword value, an assignment's right side or a
/// default parameter, not part of a comparison or a larger expression.
fn is_value_position(string: Node<'_>) -> bool {
    string.parent().is_some_and(|parent| {
        matches!(parent.kind(), "argument_list" | "keyword_argument" | "assignment" | "default_parameter" | "pair")
    })
}

fn enclosing_call(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == "call" {
            return Some(n);
        }
        if ast::is_function_boundary(n) {
            return None;
        }
        current = n.parent();
    }
    None
}
