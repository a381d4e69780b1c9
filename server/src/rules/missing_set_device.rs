//! CUL101 missing-set-device.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Applicability, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{CallTarget, Model, ast, names};
use crate::text::{TextRange, indentation_at};

pub const RULE: Rule = Rule {
    code: "CUL101",
    name: "missing-set-device",
    severity: Severity::Error,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/missing_set_device.scm"),
    prefilter: Prefilter {
        all_of: &[&["init_process_group", "DistributedDataParallel", "init_distributed"], &["cuda", "CUDA", "Cuda"]],
        scan: None,
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-other-processes"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# missing-set-device (CUL101)

## What it does
Flags a distributed script (one that calls `torch.distributed.init_process_group`,
`deepspeed.init_distributed` or wraps a model in `DistributedDataParallel`) that puts a model or
tensors on CUDA without a device index (`.cuda()`, `.to("cuda")`, `torch.device("cuda")`,
`device="cuda"`) and never calls `torch.cuda.set_device` first.

## Why is this bad?
Without an index, `"cuda"` means the current device, and the current device of every process is
GPU 0 until `set_device` says otherwise. Every rank then creates its CUDA context and its model
copy on GPU 0, which runs out of memory while the other GPUs sit idle.

Not flagged: placements that all carry an index (`f"cuda:{local_rank}"`, `.cuda(local_rank)`,
`.to(rank)`), placements inside `with torch.cuda.device(...)`, scripts where a project helper calls
`set_device`, scripts that give each rank one GPU through `CUDA_VISIBLE_DEVICES`, and scripts where
accelerate or Lightning place the model. `torch.set_default_device("cuda:N")` is no exemption: it
steers tensor factories only, while `.cuda()` and `device="cuda"` still land on GPU 0.

## Example
```python
dist.init_process_group("nccl")
model = Net().cuda()
model = DistributedDataParallel(model, device_ids=[local_rank])
```

## Use instead
```python
dist.init_process_group("nccl")
torch.cuda.set_device(local_rank)
model = Net().cuda()
model = DistributedDataParallel(model, device_ids=[local_rank])
```

## Fix safety
The fix inserts `torch.cuda.set_device(...)` right after the process-group call. It is safe when a
local-rank variable is in scope (`local_rank`, `args.local_rank`, or a name holding
`int(os.environ["LOCAL_RANK"])`). It is unsafe when it must fall back to `rank` (the global rank,
which is wrong on more than one node) or to `int(os.environ["LOCAL_RANK"])` (which needs a launcher
that sets it, such as torchrun).

## References
- Knowledge entry: `cuda/oom-other-processes` (`culint explain`)
- PyTorch: `torch.cuda.set_device` — https://pytorch.org/docs/stable/generated/torch.cuda.set_device.html
- PyTorch: DistributedDataParallel notes — https://pytorch.org/docs/stable/notes/ddp.html
"#;

/// Calls whose name suggests distributed set-up: when such a helper cannot be seen, it may well
/// call `set_device`, and the rule stays quiet.
const SETUP_HINTS: &[&str] = &["dist", "device", "setup", "init", "rank", "gpu", "cuda", "env"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    if checker.has_reported() {
        return;
    }
    let model = checker.model;
    let placement = candidate.node;
    if !is_indexless_placement(model, placement) {
        return;
    }
    let Some(process_group) = process_group_call(model) else { return };
    if model.frameworks().accelerator || model.frameworks().lightning_trainer || model.frameworks().fabric {
        return;
    }
    let starts_group = model.call_resolves_to(process_group, names::INIT_PROCESS_GROUP);
    if (starts_group && runs_before(placement, process_group)) || inside_cuda_device_context(model, placement) {
        return;
    }
    if sets_device_first(model, placement) || device_visibility_set(model) || unseen_setup_helper(model) {
        return;
    }
    let fix = insert_set_device(model, process_group);
    let diagnostic = checker.report_node(
        placement,
        "Placed on `cuda` with no device index, and `torch.cuda.set_device` is never called: every rank uses GPU 0",
    );
    diagnostic.with_related(TextRange::of(process_group), "the process group starts here");
    diagnostic
        .with_fact(format!("distributed: {}", model.quote(process_group)))
        .with_fact("device: no `torch.cuda.set_device`, device index or `CUDA_VISIBLE_DEVICES` set in the file");
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// The first call that starts a process group (or wraps a model in DDP).
fn process_group_call<'a>(model: &Model<'a>) -> Option<Node<'a>> {
    model
        .calls_to(names::INIT_PROCESS_GROUP)
        .min_by_key(|c| c.start_byte())
        .or_else(|| model.calls_to(names::DDP).min_by_key(|c| c.start_byte()))
}

/// A placement earlier in the same scope than the process-group call is not "then".
fn runs_before(placement: Node<'_>, process_group: Node<'_>) -> bool {
    let same_scope =
        ast::enclosing_function(placement).map(|f| f.id()) == ast::enclosing_function(process_group).map(|f| f.id());
    same_scope && ast::precedes(placement, process_group)
}

/// `"cuda"`, or `"cuda" if torch.cuda.is_available() else "cpu"`.
fn is_bare_cuda(model: &Model<'_>, value: Node<'_>) -> bool {
    match value.kind() {
        "string" => ast::string_value(value, model.text).is_some_and(|v| v.trim() == "cuda"),
        "conditional_expression" => {
            let mut cursor = value.walk();
            let branches: Vec<_> = value.named_children(&mut cursor).collect();
            // Children: true branch, condition, false branch.
            [branches.first(), branches.get(2)].into_iter().flatten().any(|b| is_bare_cuda(model, *b))
        }
        "parenthesized_expression" => value.named_child(0).is_some_and(|v| is_bare_cuda(model, v)),
        "call" => is_indexless_torch_device(model, value),
        _ => false,
    }
}

fn is_indexless_torch_device(model: &Model<'_>, call: Node<'_>) -> bool {
    if !model.call_resolves_to(call, &["torch.device"]) {
        return false;
    }
    let args = ast::positional_args(call);
    args.len() == 1 && ast::keyword_arg(call, "index", model.text).is_none() && is_bare_cuda(model, args[0])
}

/// Calls that ask about a device rather than put anything on it: `torch.device("cuda")` as their
/// argument places nothing (`max_memory_allocated(torch.device("cuda"))` reads the current
/// device's peak).
const DEVICE_QUERIES: &[&str] = &[
    "max_memory_allocated",
    "memory_allocated",
    "max_memory_reserved",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
    "mem_get_info",
    "get_device_properties",
    "get_device_name",
    "get_device_capability",
    "synchronize",
];

fn is_indexless_placement(model: &Model<'_>, node: Node<'_>) -> bool {
    match node.kind() {
        "call" => {
            let Some(name) = ast::callee_name(node, model.text) else { return false };
            match name {
                "cuda" => {
                    let receiver = ast::receiver(node);
                    receiver.is_some_and(|r| model.qualified_name(r).is_none())
                        && ast::positional_args(node).is_empty()
                        && ast::keyword_arg(node, "device", model.text).is_none()
                }
                "to" => {
                    let device = ast::keyword_arg(node, "device", model.text)
                        .or_else(|| ast::positional_args(node).first().copied());
                    // `.to(torch.device("cuda"))` is reported here, once, rather than at the inner call.
                    device.is_some_and(|d| is_bare_cuda(model, d))
                }
                "device" => {
                    let outer = node.parent().and_then(|p| p.parent()).filter(|c| c.kind() == "call");
                    is_indexless_torch_device(model, node)
                        && !outer.is_some_and(|c| {
                            ast::callee_name(c, model.text).is_some_and(|n| n == "to" || DEVICE_QUERIES.contains(&n))
                        })
                }
                _ => false,
            }
        }
        "keyword_argument" => node.field("value").is_some_and(|v| is_bare_cuda(model, v)),
        "assignment" => {
            let name = node.field("left").map_or("", |l| model.node_text(l)).to_ascii_lowercase();
            name.contains("device") && node.field("right").is_some_and(|v| v.kind() != "call" && is_bare_cuda(model, v))
        }
        _ => false,
    }
}

fn inside_cuda_device_context<'a>(model: &Model<'a>, node: Node<'a>) -> bool {
    model.enclosing_with_items(node).iter().any(|item| {
        item.kind() == "call" && model.call_resolves_to(*item, &["torch.cuda.device", "torch.cuda.device_of"])
    })
}

/// `set_device` is called before the placement: directly or in a helper, anywhere except later
/// in the same scope.
fn sets_device_first<'a>(model: &Model<'a>, placement: Node<'a>) -> bool {
    let placement_scope = model.enclosing_function(placement).map(|f| f.id());
    model.all_calls().iter().any(|call| {
        let sets_device = model.call_resolves_to(*call, names::SET_DEVICE)
            || model.callee_summary(*call).is_some_and(|s| s.calls_set_device);
        let later_in_same_scope =
            model.enclosing_function(*call).map(|f| f.id()) == placement_scope && ast::precedes(placement, *call);
        sets_device && !later_in_same_scope
    })
}

/// `os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)` gives each rank exactly one GPU.
fn device_visibility_set(model: &Model<'_>) -> bool {
    model.text.contains("CUDA_VISIBLE_DEVICES\"] =")
        || model.text.contains("CUDA_VISIBLE_DEVICES'] =")
        || model.text.contains("CUDA_VISIBLE_DEVICES\"]=")
        || model.text.contains("CUDA_VISIBLE_DEVICES']=")
}

/// A set-up helper the checker cannot see through: unseen itself, or seen (in this file or the
/// project) but handing over to code that is unseen, as `init_distributed_mode` calling a cluster
/// launcher's `bind_process` does.
fn unseen_setup_helper(model: &Model<'_>) -> bool {
    model.all_calls().iter().any(|call| {
        let opaque = match model.resolve_call(*call) {
            CallTarget::Unseen => true,
            CallTarget::Local(_) | CallTarget::Project(_) => {
                model.callee_summary(*call).is_some_and(|s| s.calls_unseen)
            }
            _ => false,
        };
        opaque
            && ast::callee_name(*call, model.text).is_some_and(|name| {
                let name = name.to_ascii_lowercase();
                SETUP_HINTS.iter().any(|hint| name.contains(hint))
            })
    })
}

/// Insert `torch.cuda.set_device(<local rank>)` after the process-group statement.
fn insert_set_device<'a>(model: &Model<'a>, process_group: Node<'a>) -> Option<Fix> {
    if !model.call_resolves_to(process_group, names::INIT_PROCESS_GROUP) {
        return None;
    }
    let statement = process_group.parent().filter(|s| s.kind() == "expression_statement")?;
    edits::own_lines(model.text, statement)?;
    let (rank, applicability, mut extra) = local_rank_expression(model, statement);
    let (torch, import_torch) = edits::module_reference(model, "torch");
    extra.extend(import_torch);
    let indent = indentation_at(model.text, statement.start_byte());
    let line = format!("{torch}.cuda.set_device({rank})");
    let title = format!("Call `{line}` after the process group starts");
    let mut all = vec![edits::insert_line_after(model.text, statement, indent, &line)];
    all.extend(extra);
    Some(Fix::new(title, applicability, all))
}

/// The local-rank expression to pass to `set_device`, how far it can be trusted, and any import
/// it needs.
fn local_rank_expression<'a>(model: &Model<'a>, at: Node<'a>) -> (String, Applicability, Vec<crate::fix::Edit>) {
    if model.is_visible_at("local_rank", at) {
        return ("local_rank".to_owned(), Applicability::Safe, Vec::new());
    }
    // `args.local_rank`, `opt.local_rank`, ... on a name that is visible here.
    for (start, _) in model.text.match_indices(".local_rank") {
        let Some(node) = model.descendant_for_byte_range(start + 1, start + 1) else { continue };
        let Some(attribute) = node.parent().filter(|p| p.kind() == "attribute") else { continue };
        if let Some(object) = attribute.field("object").filter(|o| o.kind() == "identifier")
            && model.is_visible_at(model.node_text(object), at)
        {
            return (model.node_text(attribute).to_owned(), Applicability::Safe, Vec::new());
        }
    }
    for (name, assignments) in model.assignment_targets() {
        let holds_local_rank =
            assignments.iter().any(|a| a.field("right").is_some_and(|r| model.node_text(r).contains("LOCAL_RANK")));
        if holds_local_rank && !name.contains('.') && model.is_visible_at(name, at) {
            return (name.to_owned(), Applicability::Safe, Vec::new());
        }
    }
    if model.is_visible_at("rank", at) {
        return ("rank".to_owned(), Applicability::Unsafe, Vec::new());
    }
    let (os, import_os) = edits::module_reference(model, "os");
    (format!("int({os}.environ[\"LOCAL_RANK\"])"), Applicability::Unsafe, import_os.into_iter().collect())
}
