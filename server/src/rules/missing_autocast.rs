//! CUL302 missing-autocast.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{CallTarget, LoopInfo, Model, ast, contexts_with_items, model_size, names};
use crate::text::{TextRange, indentation_at, line_ending, line_start};

pub const RULE: Rule = Rule {
    code: "CUL302",
    name: "missing-autocast",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/missing_autocast.scm"),
    prefilter: Prefilter {
        all_of: &[&["backward(", "backward ("], &["cuda", "CUDA", "Cuda", "nccl", "NCCL", "current_accelerator"]],
        scan: None,
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# missing-autocast (CUL302)

## What it does
Flags a training step loop on CUDA whose forward pass runs in full fp32: nothing in the loop, nor
in a helper it calls, enters `torch.autocast` (or `torch.amp.autocast`, `torch.cuda.amp.autocast`,
`accelerator.autocast()`), the model is not cast to fp16/bf16, and no framework mixed-precision
setting applies (Accelerator, Trainer `fp16`/`bf16`, Lightning `precision`, DeepSpeed `fp16`/`bf16`,
apex `amp.initialize`).

## Why is this bad?
Autograd keeps the activations of the forward pass until the backward. In fp32 each one takes four
bytes per element; under autocast most of them are stored in 16 bits, which roughly halves
activation memory and lets tensor cores run the matmuls. A job that runs out of memory in fp32
often fits, unchanged otherwise, with autocast.

`Accelerator()` without `mixed_precision` takes its precision from `accelerate launch` or its config
file, so it counts as configured. Settings passed from flags (`enabled=args.amp`) count as on.
Files that never use CUDA are not checked; an NCCL process group counts as using it. A project
context helper of the same file that returns `torch.autocast(...)` (or `nullcontext()` when
off), or yields inside one, counts as autocast, whatever its name. A loop that calls a helper
culint cannot see might enter autocast there: that finding is a preview finding (shown with
`--preview`), naming the helper.

Not flagged: a model known from its layers' literal sizes to be a small stack of dense layers
(`nn.Linear(10, 32)`, `nn.Linear(32, 5)`), keeping at most 1,024 values a sample for the
backward. Autocast would save at most 2 KB a sample there. A model with convolutions,
embeddings or recurrent layers is never taken for small, since they keep a value per pixel or
token, and the code does not say how many there are.

A model counts as cast when the file moves something to a 16-bit type (`.to(torch.bfloat16)`),
or builds a module with a 16-bit `dtype=`/`torch_dtype=` argument (`MLP(..., dtype=torch.bfloat16)`,
`from_pretrained(..., torch_dtype=torch.float16)`, also through a `**kwargs` dict literal): its
parameters are then created in 16 bits. A dtype the user chooses at run time counts the same way,
as a setting: a model cast to a dtype variable (`module.to(dtype)`, where `dtype` comes from a
flag, a lookup table or a parameter the caller fills), or built with one
(`torch_dtype=DTYPES[cfg.dtype]`). Not a cast: `.to(device)`, `.to(torch.float32)`, `.float()`, a
variable set only to fp32, a tensor cast to a variable dtype (it follows some model's precision),
and a parameter that defaults to `None` or fp32 (`nn.Linear(..., dtype=dtype)` in an `__init__`):
the model stays fp32 unless a caller passes a dtype, and that call is what counts.

## Example
```python
for x, y in loader:
    optimizer.zero_grad()
    out = model(x.cuda())
    loss = criterion(out, y.cuda())
    loss.backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        out = model(x.cuda())
        loss = criterion(out, y.cuda())
    loss.backward()
    optimizer.step()
```
On GPUs without bf16 (compute capability below 8.0) use `dtype=torch.float16` with a
`torch.amp.GradScaler("cuda")`: `scaler.scale(loss).backward()`, `scaler.step(optimizer)`,
`scaler.update()`.

## Fix safety
The fix wraps the statements that compute the loss in `torch.autocast`. It is unsafe: numerics
change, and code that relies on fp32 results inside the block may behave differently. When a probe
(or `--gpus`/`--gpu-memory` with a known device) reports a GPU without bf16, the fix uses fp16 with
a `GradScaler` instead.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch: Automatic mixed precision — https://pytorch.org/docs/stable/amp.html
- PyTorch: AMP examples — https://pytorch.org/docs/stable/notes/amp_examples.html
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let backward = candidate.node;
    let Some(step_loop) = model.enclosing_step_loop(backward) else { return };
    if step_loop.backward_calls.first().map(|c| c.id()) != Some(backward.id()) {
        return;
    }
    if !model.mentions_cuda
        || model.file_fact(file_uses_reduced_precision)
        || optimizes_inputs_only(model, step_loop.node)
    {
        return;
    }
    let unseen_helper = match loop_precision(model, step_loop) {
        LoopPrecision::Reduced => return,
        LoopPrecision::Full => None,
        LoopPrecision::Unknown(helper) => Some(helper),
    };
    let trained = trained_layers(model, step_loop.node);
    if trained.as_ref().is_some_and(is_too_small_to_matter) {
        return;
    }
    let bf16 = checker.hardware.and_then(|h| h.supports_bf16()).unwrap_or(true);
    let fix = if bf16 {
        wrap_forward(model, step_loop, backward, "bfloat16")
    } else {
        fp16_with_scaler(model, step_loop, backward)
    };
    let device = match model.cuda_evidence() {
        Some(quote) => format!("device: CUDA, from {quote}"),
        None => "device: CUDA (the file names it)".to_owned(),
    };
    let diagnostic = checker.report_node(
        backward,
        "This step loop runs its forward pass in fp32 on CUDA: activations take twice the memory of autocast",
    );
    diagnostic.with_fact(device).with_fact(
        "precision: fp32; no autocast in the loop, no 16-bit cast or framework precision setting in the file",
    );
    if let Some(layers) = trained {
        diagnostic.with_fact(format!("model: {}", layers.fact()));
    }
    if let Some(helper) = unseen_helper {
        diagnostic.with_assumption(format!(
            "{} is not followed (culint cannot see its code): taken not to enter autocast",
            model.quote(helper)
        ));
    }
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// Every optimizer the loop steps was built over a list of plain tensors
/// (`torch.optim.SGD([latents], lr=...)`): the loop optimises inputs, as a guided sampler or a
/// pipeline's latent edit does, and trains no model whose activations autocast would shrink.
fn optimizes_inputs_only<'a>(model: &Model<'a>, step_loop: Node<'a>) -> bool {
    let optimizers: Vec<Node<'a>> =
        model.calls_named_within("step", step_loop).filter_map(|call| model.stepped_optimizer(call)).collect();
    !optimizers.is_empty()
        && optimizers.iter().all(|optimizer| {
            let assignments = model.assignments_to(model.node_text(*optimizer));
            !assignments.is_empty()
                && assignments.iter().all(|assignment| {
                    model.assigns_new_optimizer(*assignment)
                        && assignment
                            .field("right")
                            .and_then(|call| ast::positional_args(call).first().copied())
                            .is_some_and(|first| {
                                let mut cursor = first.walk();
                                first.kind() == "list"
                                    && first.named_children(&mut cursor).all(|item| item.kind() == "identifier")
                            })
                })
        })
}

/// Something in the file already lowers precision for the whole model.
fn file_uses_reduced_precision<'a>(model: &Model<'a>) -> bool {
    if model.frameworks().manages_precision() || model.frameworks().hf_trainer {
        return true;
    }
    let half_methods =
        ["half", "bfloat16"].iter().flat_map(|m| model.calls_named(m)).any(|c| ast::receiver(*c).is_some());
    if half_methods || !model.calls_named("GradScaler").is_empty() {
        return true;
    }
    // A loader's or a default dtype: a 16-bit type, a name for one, "auto" (the checkpoint's,
    // 16 bits for nearly every published model), or any value not plainly fp32.
    let is_16_bit = |value: Node<'_>| {
        let text = model.node_text(value);
        names_16_bit_type(model, value)
            || text.contains("half")
            || text.contains("bf16")
            || text.contains("fp16")
            || text.contains("auto")
            || !ast::is_literal(value) && !text.contains("float32")
    };
    let dtype = |call: Node<'a>| {
        ast::keyword_arg(call, "torch_dtype", model.text).or_else(|| ast::keyword_arg(call, "dtype", model.text))
    };
    // By callee name first: reading keyword arguments of every call in a large file costs more
    // than the rest of this rule.
    let moved_to_16_bit = model.calls_named("to").iter().any(|call| {
        // Each of the names looked for holds "16", "half" or "dtype": most calls are turned away
        // by their text.
        let text = model.node_text(*call);
        if !(text.contains("16") || text.contains("half") || text.contains("dtype")) {
            return false;
        }
        // A dtype chosen at run time counts when it casts a model (`module.to(dtype)`): a tensor
        // cast to a variable dtype (`pixels.to(dtype)`) follows some model's precision rather
        // than sets it. A positional argument may be a device (`.to(device)`): only one whose
        // name says it holds a dtype is a setting.
        let casts_a_model = ast::receiver(*call).is_some_and(|r| reads_like_a_model(model, r));
        let positional = ast::positional_args(*call).into_iter().filter(|a| {
            names_16_bit_type(model, *a)
                || casts_a_model && model.node_text(*a).contains("dtype") && is_dtype_setting(model, *a)
        });
        let keyword =
            dtype(*call).filter(|a| names_16_bit_type(model, *a) || casts_a_model && is_dtype_setting(model, *a));
        positional.chain(keyword).next().is_some()
    });
    moved_to_16_bit
        || ["from_pretrained", "from_config", "create_model"]
            .iter()
            .flat_map(|name| model.calls_named(name))
            .any(|call| dtype(*call).is_some_and(is_16_bit))
        || model.calls_named_like(names_a_module_builder).any(|call| builds_module_in_precision(model, call))
        || model
            .calls_named("set_default_dtype")
            .iter()
            .any(|call| ast::positional_args(*call).first().is_some_and(|a| is_16_bit(*a)))
}

/// `torch.float16`, `torch.bfloat16`, `torch.half`.
fn names_16_bit_type(model: &Model<'_>, value: Node<'_>) -> bool {
    let text = model.node_text(value);
    text.contains("float16") || text.contains("bfloat16") || text.contains("torch.half")
}

/// `model`, `self.net`, `MixtralModel(config)`: the receiver's name reads like a model's.
fn reads_like_a_model(model: &Model<'_>, receiver: Node<'_>) -> bool {
    let name = match receiver.kind() {
        "identifier" => Some(model.node_text(receiver)),
        "attribute" => receiver.field("attribute").map(|a| model.node_text(a)),
        "call" => model.callee_name(receiver),
        _ => None,
    };
    name.is_some_and(names::is_model_name)
}

/// A dtype the user chooses at run time: a table looked up by a flag (`DTYPES[args.dtype]`), or a
/// variable bound to such a choice (`torch.bfloat16 if args.bf16 else torch.float32`) or to a
/// 16-bit type, or a parameter with no default (the caller picks). A parameter that defaults to
/// `None` or fp32 (`nn.Linear(k, h, dtype=dtype)` in an `__init__`) leaves the model in fp32
/// unless a caller passes a dtype, and that caller's argument is what counts.
fn is_dtype_setting<'a>(model: &Model<'a>, value: Node<'a>) -> bool {
    let is_choice =
        |v: Node<'_>| names_16_bit_type(model, v) || matches!(v.kind(), "subscript" | "conditional_expression");
    match value.kind() {
        "subscript" => true,
        "identifier" => {
            let name = model.node_text(value);
            let function = model.enclosing_function(value);
            if let Some(default) = function.and_then(|f| ast::parameter_default(f, name, model.text)) {
                return default.is_none_or(is_choice);
            }
            model.assignments_seen_from(name, function).iter().any(|a| a.field("right").is_some_and(is_choice))
        }
        _ => false,
    }
}

/// A callee that builds a module: a class, told by its CapWords name, which tensor factories
/// (`torch.randn(..., dtype=...)`, inputs rather than the model) do not have; or a model loader.
fn names_a_module_builder(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        || matches!(name, "from_pretrained" | "from_config" | "create_model")
}

/// A module built with a 16-bit or chosen `dtype=`/`torch_dtype=` (`MLP(..., dtype=torch.bfloat16)`,
/// `Wrapper.from_pretrained(name, **kwargs)` where `kwargs` holds `"torch_dtype": DTYPES[cfg.dtype]`):
/// its parameters are created in that precision. `call`'s callee passes [`names_a_module_builder`].
fn builds_module_in_precision<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    // A large script builds thousands of layers: most calls are turned away by their text,
    // which is cheaper than finding their keyword arguments.
    let text = model.node_text(call);
    if !text.contains("dtype") && !text.contains("**") {
        return false;
    }
    let lowers = |value: Node<'a>| names_16_bit_type(model, value) || is_dtype_setting(model, value);
    let keyword = ["dtype", "torch_dtype"].iter().filter_map(|k| ast::keyword_arg(call, k, model.text)).any(lowers);
    keyword || splatted_dtypes(model, call).into_iter().any(lowers)
}

/// The `"dtype"`/`"torch_dtype"` values of the dict literals assigned to a name that `call`
/// passes as `**name`.
fn splatted_dtypes<'a>(model: &Model<'a>, call: Node<'a>) -> Vec<Node<'a>> {
    let Some(arguments) = ast::arguments(call) else { return Vec::new() };
    let mut cursor = arguments.walk();
    let splatted: Vec<&str> = arguments
        .named_children(&mut cursor)
        .filter(|a| a.kind() == "dictionary_splat")
        .filter_map(|a| a.named_child(0).filter(|n| n.kind() == "identifier").map(|n| model.node_text(n)))
        .collect();
    let dicts = splatted
        .into_iter()
        .flat_map(|name| model.assignments_to(name))
        .filter_map(|a| a.field("right").filter(|v| v.kind() == "dictionary"));
    let mut values = Vec::new();
    for dict in dicts {
        let mut cursor = dict.walk();
        values.extend(
            dict.named_children(&mut cursor)
                .filter(|pair| {
                    pair.field("key")
                        .and_then(|k| ast::string_value(k, model.text))
                        .is_some_and(|k| matches!(k.as_str(), "dtype" | "torch_dtype"))
                })
                .filter_map(|pair| pair.field("value")),
        );
    }
    values
}

/// Whether the loop's forward runs in reduced precision, as far as the code shows.
enum LoopPrecision<'a> {
    /// Autocast around the loop, inside it, or in a helper it calls.
    Reduced,
    Full,
    /// The loop calls a helper the checker cannot see, which might enter autocast.
    Unknown(Node<'a>),
}

fn loop_precision<'a>(model: &Model<'a>, step_loop: &LoopInfo<'a>) -> LoopPrecision<'a> {
    if loop_uses_autocast(model, step_loop) {
        return LoopPrecision::Reduced;
    }
    let unseen = model.own_calls_within(step_loop.node).find(|call| match model.resolve_call(*call) {
        CallTarget::Unseen => true,
        CallTarget::Local(_) | CallTarget::Project(_) => model.callee_summary(*call).is_some_and(|s| s.calls_unseen),
        _ => false,
    });
    unseen.map_or(LoopPrecision::Full, LoopPrecision::Unknown)
}

/// The most values per sample a model of dense layers may keep for autocast to be worth
/// nothing: autocast stores them in 2 bytes instead of 4, so at 1,024 it saves at most 2 KB a
/// sample, 2 MB at a batch of 1,024, nothing next to the CUDA context's few hundred MB. Set
/// low on purpose: an MNIST VAE (784-400-20-400-784, about 1,600 values a sample) is still
/// flagged, as the hand review and labels of bench/real_world count it.
const NEGLIGIBLE_KEPT_PER_SAMPLE: f64 = 1024.0;

/// A model known from its layers to be a small stack of dense layers (a 10-32-5 MLP, a
/// CartPole policy): its activations are a few values per sample, whatever the precision.
/// Convolutions, embeddings and recurrent layers keep a value per pixel or token, which the code
/// does not state, so they never count as too small.
fn is_too_small_to_matter(layers: &model_size::Layers) -> bool {
    layers.dense_only && layers.kept_per_sample <= NEGLIGIBLE_KEPT_PER_SAMPLE
}

/// The layers of the model the loop runs, when every model call of the loop goes to a module
/// whose layers are known from the code: the largest of them.
fn trained_layers<'a>(model: &Model<'a>, step_loop: Node<'a>) -> Option<model_size::Layers> {
    let mut largest: Option<model_size::Layers> = None;
    for call in model.own_calls_within(step_loop).filter(|c| model.calls_a_model(*c)) {
        let callee = ast::callee(call)?;
        let module = if callee.kind() == "attribute" && model.callee_name(call) == Some("forward") {
            callee.field("object")?
        } else {
            callee
        };
        let layers = model_size::layers_of_value(model, module, 0)?;
        if largest.as_ref().is_none_or(|l| layers.parameters > l.parameters) {
            largest = Some(layers);
        }
    }
    largest
}

/// Autocast around the loop, inside it, or in a helper it calls.
fn loop_uses_autocast<'a>(model: &Model<'a>, step_loop: &LoopInfo<'a>) -> bool {
    let node = step_loop.node;
    if model.under_autocast(node) {
        return true;
    }
    let enters_autocast = |with_statement: Node<'a>| {
        contexts_with_items(with_statement).iter().any(|item| {
            model.is_autocast(*item)
                || (item.kind() == "call" && model.callee_name(*item).is_some_and(|n| n.contains("autocast")))
        })
    };
    if model.own_with_statements_within(node).any(enters_autocast) {
        return true;
    }
    model.own_calls_within(node).any(|call| match model.resolve_call(call) {
        CallTarget::Local(_) | CallTarget::Project(_) => model.callee_summary(call).is_some_and(|s| s.enters_autocast),
        _ => false,
    })
}

/// The statements of the loop body that compute the loss: from the first that calls a model up
/// to the statement with the backward call.
fn forward_statements<'a>(
    model: &Model<'a>,
    step_loop: Node<'a>,
    backward: Node<'a>,
) -> Option<(Node<'a>, Node<'a>, Node<'a>)> {
    let body = step_loop.field("body")?;
    let backward_statement = model.statement_of(backward);
    if model.parent(backward_statement)?.id() != body.id() {
        return None;
    }
    let mut cursor = body.walk();
    let statements: Vec<Node<'a>> = body.named_children(&mut cursor).filter(|s| s.kind() != "comment").collect();
    let end = statements.iter().position(|s| s.id() == backward_statement.id())?;
    let start = statements[..end].iter().position(|s| model.calls_within(*s).any(|c| model.calls_a_model(c)))?;
    Some((statements[start], statements[end - 1], backward_statement))
}

/// Wrap the forward statements in `with torch.autocast(device_type="cuda", dtype=torch.<dtype>):`.
fn wrap_edit(
    model: &Model<'_>,
    step_loop: Node<'_>,
    first: Node<'_>,
    last: Node<'_>,
    torch: &str,
    dtype: &str,
) -> Option<Edit> {
    let text = model.text;
    let start = line_start(text, first.start_byte());
    let region_end = edits::own_lines(text, last)?.end;
    edits::own_lines(text, first)?;
    if edits::has_multiline_string(model, TextRange::new(start, region_end)) {
        return None;
    }
    let indent = indentation_at(text, first.start_byte());
    let unit = edits::indent_unit(text, step_loop);
    let mut region = text[start..region_end].to_owned();
    if !region.ends_with('\n') {
        region.push_str(line_ending(text));
    }
    let header =
        format!("{indent}with {torch}.autocast(device_type=\"cuda\", dtype={torch}.{dtype}):{}", line_ending(text));
    let mut replacement = header + &edits::indent_lines(&region, &unit);
    if region_end == text.len() && !text.ends_with('\n') {
        replacement.truncate(replacement.trim_end_matches(['\r', '\n']).len());
    }
    Some(Edit::replacement(TextRange::new(start, region_end), replacement))
}

fn wrap_forward<'a>(model: &Model<'a>, step_loop: &LoopInfo<'a>, backward: Node<'a>, dtype: &str) -> Option<Fix> {
    let (first, last, _) = forward_statements(model, step_loop.node, backward)?;
    let (torch, import) = edits::module_reference(model, "torch");
    let wrap = wrap_edit(model, step_loop.node, first, last, &torch, dtype)?;
    let title = format!("Run the forward pass under `{torch}.autocast(device_type=\"cuda\", dtype={torch}.{dtype})`");
    Some(Fix::unsafe_edits(title, [Some(wrap), import].into_iter().flatten().collect()))
}

/// fp16 needs a gradient scaler: create one before the loop, scale the loss, step through it.
fn fp16_with_scaler<'a>(model: &Model<'a>, step_loop: &LoopInfo<'a>, backward: Node<'a>) -> Option<Fix> {
    let node = step_loop.node;
    let (first, last, _) = forward_statements(model, node, backward)?;
    let loss = ast::receiver(backward)?;
    let optimizer_step = model.own_calls_within(node).find(|c| {
        model.callee_name(*c) == Some("step")
            && ast::receiver(*c).is_some_and(|r| model.node_text(r).to_ascii_lowercase().contains("opt"))
            && ast::positional_args(*c).is_empty()
    })?;
    let step_statement = model.statement_of(optimizer_step);
    if step_statement.kind() != "expression_statement" || step_statement.named_child(0)?.id() != optimizer_step.id() {
        return None;
    }
    edits::own_lines(model.text, step_statement)?;
    let scaler = if model.is_visible_at("scaler", node) { "grad_scaler" } else { "scaler" };
    let (torch, import) = edits::module_reference(model, "torch");
    let wrap = wrap_edit(model, node, first, last, &torch, "float16")?;
    let optimizer = model.node_text(ast::receiver(optimizer_step)?);
    let backward_args = ast::arguments(backward).map_or("()", |a| model.node_text(a));
    let step_indent = indentation_at(model.text, step_statement.start_byte());
    let edits = vec![
        edits::insert_line_before(model.text, node, &format!("{scaler} = {torch}.amp.GradScaler(\"cuda\")"))?,
        wrap,
        Edit::replacement(
            TextRange::of(backward),
            format!("{scaler}.scale({}).backward{backward_args}", model.node_text(loss)),
        ),
        Edit::replacement(TextRange::of(optimizer_step), format!("{scaler}.step({optimizer})")),
        edits::insert_line_after(model.text, step_statement, step_indent, &format!("{scaler}.update()")),
    ];
    let title =
        format!("Run the forward pass under fp16 `{torch}.autocast` with a `GradScaler` (this GPU has no bf16)");
    Some(Fix::unsafe_edits(title, edits.into_iter().chain(import).collect()))
}
