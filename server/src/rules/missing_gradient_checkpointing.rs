//! CUL301 missing-gradient-checkpointing.

use std::sync::LazyLock;

use regex::Regex;
use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{CallTarget, Model, ast, model_size, names};
use crate::text::{TextRange, indentation_at};

pub const RULE: Rule = Rule {
    code: "CUL301",
    name: "missing-gradient-checkpointing",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/missing_gradient_checkpointing.scm"),
    prefilter: Prefilter {
        all_of: &[
            &["from_pretrained", "from_config", "create_model", "forward"],
            &["backward(", "backward (", "Trainer", "training_step"],
        ],
        scan: Some(never_names_checkpointing),
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# missing-gradient-checkpointing (CUL301)

## What it does
Flags a large model that is trained without activation checkpointing. Large is read from facts:
a model of a billion parameters or more by its id's stated size (`7b`, `1.3B`), the table of model
families in `knowledge/model_families.toml`, the literal sizes of a config built in the file
(`LlamaConfig(hidden_size=4096, num_hidden_layers=32)`) or the default of the `--model` argument
it is loaded from; a diffusion backbone (`UNet2DConditionModel`, a `...Transformer2DModel`); a timm
vision model whose name says large, huge or giant; or a module in the file that stacks repeated
blocks and chains them in `forward` (`x = block(x)`), unless each block is a single layer
(`nn.Linear`), whose backward needs only the input checkpointing would keep. A model whose size
is not known is not taken for large. A model handed to a helper culint cannot see, which might
enable checkpointing, gives a preview finding (shown with `--preview`).

## Why is this bad?
Training keeps every layer's activations until the backward pass, so activation memory grows with
depth, batch size and sequence length, and for large models it dwarfs the weights. Checkpointing
keeps only each block's input and recomputes the rest during the backward, trading about a third
more compute for most of that memory.

Not flagged: models known to be smaller (`gpt2`, `facebook/opt-125m`, `google/flan-t5-small`),
test models whose name says tiny (`hf-internal-testing/tiny-random-gpt2`), models of unknown size
(`from_pretrained(args.model)` with no default, `from_config(tiny_config())`), tests, experts
whose outputs are summed rather than chained, files that only define a model without training
it, and files where checkpointing is on in any form (TRL's trainer configs turn it on by default):
`gradient_checkpointing_enable()`, `enable_gradient_checkpointing()`,
`TrainingArguments(gradient_checkpointing=...)`, `torch.utils.checkpoint`,
`apply_activation_checkpointing`, peft's `prepare_model_for_kbit_training`, or a flag that switches
any of these.

## Example
```python
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
for batch in loader:
    model(**batch).loss.backward()
```

## Use instead
```python
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
model.gradient_checkpointing_enable()
for batch in loader:
    model(**batch).loss.backward()
```
For diffusers models use `unet.enable_gradient_checkpointing()`; for your own block stack,
`x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)`.

## Fix safety
The fixes are unsafe: they trade compute for memory (steps get about a third slower), and a model
that caches state across its forward calls can behave differently under recomputation.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch: `torch.utils.checkpoint` — https://pytorch.org/docs/stable/checkpoint.html
- Transformers: gradient checkpointing — https://huggingface.co/docs/transformers/perf_train_gpu_one#gradient-checkpointing
"#;

/// Diffusion backbones, whose every released model is large: the UNets of Stable Diffusion and
/// its kin (about 0.9B parameters and up) and the diffusion transformers (SD3, Flux, PixArt).
static DIFFUSION_BACKBONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(UNet2DConditionModel|UNet3DConditionModel|UNetSpatioTemporalConditionModel|\w*Transformer[23]DModel)$",
    )
    .expect("diffusion backbone regex compiles")
});

/// From this many parameters a model is large: its activations dwarf the weights at any useful
/// batch and sequence length.
const LARGE_PARAMETERS: f64 = 1e9;

static LARGE_VISION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[-_/.])(large|huge|giant|gigantic)(?:$|[-_/.\d])").expect("vision regex compiles")
});

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let node = candidate.node;
    // Cheap shape tests first: `checkpointing_is_on` looks at every call of the file.
    if node.kind() == "assignment" {
        let Some((block, input)) = chained_block_in_forward(model, node) else { return };
        if !model.is_training_context() || checker.memo(0, || checkpointing_is_on(model)) {
            return;
        }
        let fix = checkpoint_block(model, node, block, input);
        let diagnostic = checker.report_node(node, "This stack of blocks runs without activation checkpointing: every block's activations stay alive until the backward");
        if let Some(fix) = fix {
            diagnostic.with_fix(fix);
        }
        return;
    }
    let Some((kind, fact)) = large_model_kind(model, node) else { return };
    if !model.is_training_context()
        || checker.memo(0, || checkpointing_is_on(model))
        || returned_to_another_module(model, node)
    {
        return;
    }
    let unseen_helper = model_reaches_unseen_helper(model, node);
    let fix = enable_after_load(model, node, kind);
    let diagnostic = checker.report_node(
        node,
        format!("A large model ({fact}) is trained without gradient checkpointing: its activations can exceed the weights many times over"),
    );
    diagnostic.with_fact(format!("model: {fact}")).with_fact(
        "checkpointing: not enabled anywhere in the file (no `gradient_checkpointing_enable()`, `torch.utils.checkpoint` or setting)",
    );
    if let Some(helper) = unseen_helper {
        diagnostic.with_assumption(format!(
            "the model goes to {}, which culint cannot follow: taken not to enable checkpointing",
            model.quote(helper)
        ));
    }
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LargeModel {
    Transformers,
    Diffusers,
    Other,
}

/// The kind of a large model the call loads, and the fact that says it is large: a size of at
/// least a billion parameters from [`model_size`], a diffusion backbone's class, or a timm vision
/// model named large, huge or giant. A model of unknown size is not taken for large.
fn large_model_kind<'a>(model: &Model<'a>, call: Node<'a>) -> Option<(LargeModel, String)> {
    let qualified = model.call_qualified_name(call)?;
    let library = qualified.split('.').next().unwrap_or_default();
    let method = qualified.rsplit('.').next().unwrap_or_default();
    let class = qualified.rsplit('.').nth(1).unwrap_or_default();
    let kind = match library {
        "transformers" | "peft" | "trl" => LargeModel::Transformers,
        "diffusers" => LargeModel::Diffusers,
        "timm" if method == "create_model" => LargeModel::Other,
        _ => return None,
    };
    let size = model_size::of_load(model, call);
    if let Some(size) = &size {
        let is_model = method == "create_model" || class.contains("Model") || class.contains("For");
        return (is_model && size.parameters >= LARGE_PARAMETERS)
            .then(|| (kind, format!("{}, about {}", size.fact, model_size::parameters_text(size.parameters))));
    }
    match kind {
        LargeModel::Diffusers if method != "create_model" && DIFFUSION_BACKBONE.is_match(class) => {
            Some((kind, format!("a `{class}`")))
        }
        LargeModel::Other => {
            let name = ast::positional_args(call).first().and_then(|a| ast::string_value(*a, model.text))?;
            LARGE_VISION.is_match(&name).then(|| (kind, format!("`{name}`")))
        }
        _ => None,
    }
}

/// Checkpointing is on, or switchable, anywhere in the file or in a helper it calls.
/// Flag-gated and config forms (`if args.gradient_checkpointing:`, a DeepSpeed
/// "activation_checkpointing" section, `model.gradient_checkpointing = True`) all name
/// checkpointing; a file that does is taken to turn it on, so the rule never fires there.
fn never_names_checkpointing(text: &str) -> bool {
    !["gradient_checkpointing", "activation_checkpointing", "grad_checkpointing"].iter().any(|word| text.contains(word))
}

fn checkpointing_is_on(model: &Model<'_>) -> bool {
    let frameworks = model.frameworks();
    if frameworks.hf_gradient_checkpointing || frameworks.peft_kbit_checkpointing {
        return true;
    }
    if !never_names_checkpointing(model.text) {
        return true;
    }
    if model.calls_to(names::CHECKPOINT_FUNCTIONS).next().is_some()
        || model.imports.imports_module("torch.utils.checkpoint")
    {
        return true;
    }
    if model.all_calls().iter().any(|call| is_trl_trainer_config(model, *call)) {
        return true;
    }
    model.all_calls().iter().any(|call| model.callee_summary(*call).is_some_and(|s| s.enables_checkpointing))
}

/// A TRL trainer config (`SFTConfig(...)`, `DPOConfig(...)`, `GRPOConfig(...)`, ...): TRL's
/// `_BaseConfig`, which they all extend, defaults `gradient_checkpointing` to `True`
/// (trl/trainer/base_config.py, since February 2026).
fn is_trl_trainer_config(model: &Model<'_>, call: Node<'_>) -> bool {
    model.call_qualified_name(call).is_some_and(|qualified| {
        let class = qualified.rsplit('.').next().unwrap_or_default();
        qualified.starts_with("trl.") && class.ends_with("Config") && !matches!(class, "ModelConfig" | "LoraConfig")
    })
}

/// The loaded model is handed to a helper the checker cannot see, which may enable checkpointing:
/// an unseen one, or a local or project helper that passes it on to unseen code.
fn model_reaches_unseen_helper<'a>(model: &Model<'a>, load: Node<'a>) -> Option<Node<'a>> {
    let target = load_target(load)?;
    let name = model.node_text(target);
    model.all_calls().iter().copied().find(|call| {
        let opaque = match model.resolve_call(*call) {
            CallTarget::Unseen => true,
            CallTarget::Local(_) | CallTarget::Project(_) => {
                model.callee_summary(*call).is_some_and(|s| s.calls_unseen)
            }
            _ => false,
        };
        opaque
            && ast::positional_args(*call)
                .iter()
                .chain(&ast::keyword_args(*call))
                .any(|a| model.node_text(*a).contains(name))
    })
}

/// The load sits in a factory that returns the model (`def setup_model(name): ... return model,
/// tokenizer`) and nothing in this file calls it: the caller lives in another module and decides
/// about checkpointing there (pytorch/examples' FSDP T5 example wraps the model and applies
/// activation checkpointing in its main script).
fn returned_to_another_module<'a>(model: &Model<'a>, load: Node<'a>) -> bool {
    let Some(function) = model.enclosing_function(load) else { return false };
    let Some(name) = ast::function_name(function, model.text) else { return false };
    let target = load_target(load).map(|t| model.node_text(t));
    let called_here = model
        .calls_named(name)
        .iter()
        .any(|call| matches!(model.resolve_call(*call), CallTarget::Local(f) if f.id() == function.id()));
    !called_here && returns_loaded_model(model, function, load, target)
}

/// Whether a `return` of `function` (not of a nested function) hands back the loaded model: the
/// load call itself, or the name it was assigned to, alone or in a tuple.
fn returns_loaded_model(model: &Model<'_>, function: Node<'_>, load: Node<'_>, target: Option<&str>) -> bool {
    let mut stack = vec![function];
    let mut cursor = function.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "return_statement" {
            let Some(value) = node.named_child(0) else { continue };
            let returned: Vec<Node<'_>> = match value.kind() {
                "expression_list" | "tuple" => {
                    let mut items = value.walk();
                    value.named_children(&mut items).collect()
                }
                _ => vec![value],
            };
            if returned.iter().any(|r| ast::contains(*r, load) || target.is_some_and(|t| model.node_text(*r) == t)) {
                return true;
            }
            continue;
        }
        if node.id() == function.id() || !ast::is_function_boundary(node) {
            stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
        }
    }
    false
}

/// `model` in `model = AutoModel...from_pretrained(...)` (possibly with `.to(...)` chained).
fn load_target(load: Node<'_>) -> Option<Node<'_>> {
    let statement = ast::statement_of(load);
    let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
    let left = assignment.field("left")?;
    matches!(left.kind(), "identifier" | "attribute").then_some(left)
}

fn enable_after_load<'a>(model: &Model<'a>, load: Node<'a>, kind: LargeModel) -> Option<Fix> {
    let method = match kind {
        LargeModel::Transformers => "gradient_checkpointing_enable",
        LargeModel::Diffusers => "enable_gradient_checkpointing",
        LargeModel::Other => return None,
    };
    let target = load_target(load)?;
    let statement = model.statement_of(load);
    edits::own_lines(model.text, statement)?;
    let line = format!("{}.{method}()", model.node_text(target));
    let indent = indentation_at(model.text, statement.start_byte());
    Some(Fix::unsafe_edits(
        format!("Call `{line}` after loading"),
        vec![edits::insert_line_after(model.text, statement, indent, &line)],
    ))
}

/// For `x = block(x)` inside `for block in self.blocks:` in `forward`, where `self.blocks` is a
/// `ModuleList`/`Sequential` of repeated blocks: the block and its input.
fn chained_block_in_forward<'a>(model: &Model<'a>, assignment: Node<'a>) -> Option<(Node<'a>, Node<'a>)> {
    let call = assignment.field("right")?;
    let block = ast::callee(call)?;
    let input = *ast::positional_args(call).first()?;
    if ast::positional_args(call).len() != 1 || !ast::keyword_args(call).is_empty() {
        return None;
    }
    let for_loop = ancestor_loop_over(model, assignment, model.node_text(block))?;
    let iterable = for_loop.field("right")?;
    let stack_attribute = model.node_text(iterable).strip_prefix("self.")?;
    let function = model.enclosing_function(assignment)?;
    if ast::function_name(function, model.text) != Some("forward") {
        return None;
    }
    let class = model.method_class(function)?;
    is_repeated_block_stack(model, class, stack_attribute).then_some((block, input))
}

fn ancestor_loop_over<'a>(model: &Model<'a>, node: Node<'a>, variable: &str) -> Option<Node<'a>> {
    let mut current = node.parent();
    while let Some(n) = current {
        if ast::is_function_boundary(n) {
            return None;
        }
        if n.kind() == "for_statement" && n.field("left").is_some_and(|l| model.node_text(l) == variable) {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

/// `self.<attribute> = nn.ModuleList([Block() for _ in range(n)])` (or `nn.Sequential(*[...])`)
/// somewhere in the class.
fn is_repeated_block_stack(model: &Model<'_>, class: Node<'_>, attribute: &str) -> bool {
    model.assignments_to_within(&format!("self.{attribute}"), class).any(|assignment| {
        assignment.field("right").is_some_and(|value| {
            value.kind() == "call"
                && model.call_resolves_to(
                    value,
                    &["torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.modules.container.ModuleList"],
                )
                && {
                    let text = model.node_text(value);
                    text.contains(" for ") && text.contains(" in range(")
                }
                && !repeats_a_single_layer(model, value)
        })
    })
}

/// `nn.ModuleList([nn.Linear(d, d) for _ in range(n)])`: each "block" is one layer, whose
/// backward needs just the input that checkpointing would keep anyway, so checkpointing it saves
/// nothing (DeepSpeed's offload demo chains such a stack).
fn repeats_a_single_layer(model: &Model<'_>, container: Node<'_>) -> bool {
    let mut cursor = container.walk();
    let mut stack = vec![container];
    while let Some(node) = stack.pop() {
        if node.kind() == "list_comprehension" || node.kind() == "generator_expression" {
            return node.field("body").is_some_and(|element| {
                element.kind() == "call"
                    && model.callee_name(element).is_some_and(|name| {
                        matches!(name, "Linear" | "Conv1d" | "Conv2d" | "Conv3d" | "Embedding" | "LayerNorm")
                    })
            });
        }
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

fn checkpoint_block(model: &Model<'_>, assignment: Node<'_>, block: Node<'_>, input: Node<'_>) -> Option<Fix> {
    let call = assignment.field("right")?;
    let (torch, _) = edits::module_reference(model, "torch");
    let replacement = format!(
        "{torch}.utils.checkpoint.checkpoint({}, {}, use_reentrant=False)",
        model.node_text(block),
        model.node_text(input)
    );
    let mut fix_edits = vec![Edit::replacement(TextRange::of(call), replacement)];
    if !model.imports.imports_module("torch.utils.checkpoint") {
        fix_edits.push(edits::add_import(model, "import torch.utils.checkpoint"));
    }
    Some(Fix::unsafe_edits("Checkpoint each block with `torch.utils.checkpoint.checkpoint`", fix_edits))
}
