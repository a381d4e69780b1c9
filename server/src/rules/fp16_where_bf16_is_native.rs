//! CUL802 fp16-where-bf16-is-native.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast, names};
use crate::text::TextRange;

pub const RULE: Rule = Rule {
    code: "CUL802",
    name: "fp16-where-bf16-is-native",
    severity: Severity::Info,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/fp16_where_bf16_is_native.scm"),
    prefilter: Prefilter { all_of: &[&["autocast", "fp16", "precision"]], scan: None },
    check,
    doc: DOC,
    knowledge: None,
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: true,
};

const DOC: &str = r#"# fp16-where-bf16-is-native (CUL802)

## What it does
Flags fp16 mixed precision with loss scaling (`torch.autocast` in float16 plus a `GradScaler`,
`TrainingArguments(fp16=True)`, `Accelerator(mixed_precision="fp16")`, Lightning
`precision="16-mixed"`) on a GPU whose compute capability is 8.0 or higher, where bf16 is native.
The compute capability comes from `culint probe` on this machine.

## Why is this bad?
fp16 has a narrow range: gradients underflow and activations overflow unless a `GradScaler`
rescales the loss, skips steps that produced inf/NaN, and keeps fp32 master state for the
scaling. bf16 has fp32's range at the same 2 bytes per value and the same tensor-core speed on
Ampere and later, so it needs no scaler, never skips a step, and trains large models that diverge
in fp16.

## Example
```python
scaler = torch.amp.GradScaler("cuda")
for batch in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch).loss
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```

## Use instead
```python
for batch in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch).loss
    loss.backward()
    optimizer.step()
```

## Fix safety
The fix switches the dtype to bf16 and removes the scaler (its construction, `update()` and
`unscale_()`, and the `scale()`/`step()` wrappers). It is unsafe: numerics change, and code that
saves or reads the scaler's state needs editing by hand (no fix is offered when the scaler is
used in other ways).

## References
- PyTorch: Automatic mixed precision — https://pytorch.org/docs/stable/amp.html
- PyTorch: `torch.cuda.is_bf16_supported()`
"#;

const GRAD_SCALERS: &[&str] = &[
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.GradScaler",
];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let Some((major, minor)) = checker.hardware.and_then(|facts| facts.compute_capability) else { return };
    if major < 8 {
        return;
    }
    let model = checker.model;
    let node = candidate.node;
    let finding = match node.kind() {
        "call" => autocast_finding(model, node),
        _ => framework_finding(model, node),
    };
    let Some((message, fix)) = finding else { return };
    let diagnostic =
        checker.report_node(node, format!("{message} on a GPU with native bf16 (compute capability {major}.{minor})"));
    diagnostic.with_fact(format!(
        "GPU: compute capability {major}.{minor} (`--compute-capability`, the configuration or the probe), bf16 from 8.0"
    ));
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// fp16 autocast on CUDA in a file that builds a GradScaler.
fn autocast_finding(model: &Model<'_>, call: Node<'_>) -> Option<(String, Option<Fix>)> {
    if !model.call_resolves_to(call, names::AUTOCAST) {
        return None;
    }
    let source = model.text;
    if ast::keyword_arg(call, "enabled", source).is_some_and(|enabled| ast::is_literal_off(enabled, source)) {
        return None;
    }
    let cuda_only = model.call_qualified_name(call).is_some_and(|q| q.starts_with("torch.cuda."));
    let device =
        ast::keyword_arg(call, "device_type", source).or_else(|| ast::positional_args(call).into_iter().next());
    let on_cuda = cuda_only || device.and_then(|d| ast::string_value(d, source)).is_some_and(|d| d == "cuda");
    if !on_cuda {
        return None;
    }
    // Autocast on CUDA defaults to float16; a dtype from a variable is the user's switch.
    let dtype = ast::keyword_arg(call, "dtype", source);
    if let Some(dtype) = dtype
        && !model.resolves_to(dtype, &["torch.float16", "torch.half"])
    {
        return None;
    }
    let scalers: Vec<Node<'_>> = model.calls_to(GRAD_SCALERS).collect();
    if scalers.is_empty() {
        return None;
    }
    let fix = autocast_fix(model, call, dtype, &scalers);
    Some(("fp16 autocast with a `GradScaler`".to_owned(), fix))
}

/// Switch the autocast to bf16 and take the scaler out, when every use of it is one the fix
/// understands.
fn autocast_fix<'a>(model: &Model<'a>, call: Node<'_>, dtype: Option<Node<'_>>, scalers: &[Node<'a>]) -> Option<Fix> {
    let (torch, import) = edits::module_reference(model, "torch");
    let bf16 = format!("{torch}.bfloat16");
    let mut fix_edits: Vec<Edit> = import.into_iter().collect();
    match dtype {
        Some(dtype) => fix_edits.push(Edit::replacement(TextRange::of(dtype), bf16)),
        None => {
            let arguments = ast::arguments(call)?;
            let close = arguments.end_byte() - 1;
            let separator = if arguments.named_child_count() == 0 { "" } else { ", " };
            fix_edits.push(Edit::insertion(close, format!("{separator}dtype={bf16}")));
        }
    }
    for scaler in scalers {
        fix_edits.extend(remove_scaler(model, *scaler)?);
    }
    Some(Fix::unsafe_edits("Use bf16 autocast and drop the `GradScaler`", fix_edits))
}

/// Edits that remove `scaler = GradScaler(...)` and unwrap every use of `scaler`; `None` when a
/// use is not one of `scale(x)`, `step(opt)`, `update()` or `unscale_(opt)`.
fn remove_scaler<'a>(model: &Model<'a>, construction: Node<'a>) -> Option<Vec<Edit>> {
    let source = model.text;
    let assignment = construction.parent().filter(|p| p.kind() == "assignment")?;
    let name = model.node_text(assignment.field("left")?);
    if name.contains(['.', '[', ',']) {
        return None;
    }
    let statement = assignment.parent().filter(|s| s.kind() == "expression_statement")?;
    let mut fix_edits = vec![edits::delete_statement(model, statement)?];
    let uses = identifiers_named(model.tree.root_node(), name, source);
    for identifier in uses {
        if identifier.start_byte() == assignment.start_byte() {
            continue;
        }
        let attribute = identifier.parent().filter(|p| p.kind() == "attribute")?;
        let method_call = attribute.parent().filter(|p| p.kind() == "call")?;
        let method = model.node_text(attribute.field("attribute")?);
        let argument = ast::positional_args(method_call).into_iter().next();
        match (method, argument) {
            ("scale", Some(value)) => {
                fix_edits.push(Edit::replacement(TextRange::of(method_call), model.node_text(value)));
            }
            ("step", Some(optimizer)) => fix_edits
                .push(Edit::replacement(TextRange::of(method_call), format!("{}.step()", model.node_text(optimizer)))),
            ("update" | "unscale_", _) => {
                let statement = method_call.parent().filter(|s| s.kind() == "expression_statement")?;
                fix_edits.push(edits::delete_statement(model, statement)?);
            }
            _ => return None,
        }
    }
    Some(fix_edits)
}

fn identifiers_named<'t>(root: Node<'t>, name: &str, source: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" && ast::text(node, source) == name {
            found.push(node);
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    found
}

/// `fp16=True` for transformers/TRL, `mixed_precision="fp16"` for accelerate, `precision=16`
/// (or `"16"`, `"16-mixed"`) for Lightning.
fn framework_finding(model: &Model<'_>, keyword: Node<'_>) -> Option<(String, Option<Fix>)> {
    let source = model.text;
    let name = model.node_text(keyword.field("name")?);
    let value = keyword.field("value")?;
    let call = keyword.parent()?.parent().filter(|c| c.kind() == "call")?;
    let qualified = model.call_qualified_name(call)?;
    let root = qualified.split('.').next().unwrap_or_default();
    let last = qualified.rsplit('.').next().unwrap_or_default();
    let replace = |content: &str, title: &str| {
        Some(Fix::unsafe_edits(title, vec![Edit::replacement(TextRange::of(keyword), content)]))
    };
    match name {
        "fp16" if matches!(root, "transformers" | "trl") && value.kind() == "true" => Some((
            format!("`{last}(fp16=True)` trains in fp16 with loss scaling"),
            replace("bf16=True", "Use `bf16=True`"),
        )),
        "mixed_precision" if root == "accelerate" && ast::string_value(value, source).as_deref() == Some("fp16") => {
            Some((
                "`Accelerator(mixed_precision=\"fp16\")` trains in fp16 with loss scaling".to_owned(),
                replace("mixed_precision=\"bf16\"", "Use `mixed_precision=\"bf16\"`"),
            ))
        }
        "precision" if matches!(root, "lightning" | "pytorch_lightning") && matches!(last, "Trainer" | "Fabric") => {
            let fp16 = match value.kind() {
                "integer" => model.node_text(value) == "16",
                "string" => matches!(ast::string_value(value, source).as_deref(), Some("16" | "16-mixed")),
                _ => false,
            };
            fp16.then(|| {
                (
                    format!(
                        "Lightning `{last}(precision={})` trains in fp16 with loss scaling",
                        model.node_text(value)
                    ),
                    replace("precision=\"bf16-mixed\"", "Use `precision=\"bf16-mixed\"`"),
                )
            })
        }
        _ => None,
    }
}
