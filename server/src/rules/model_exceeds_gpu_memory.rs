//! CUL803 model-exceeds-gpu-memory.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::grammar_ids::FieldChild;
use crate::probe::format::bytes;
use crate::semantic::model_size::{self, parameters_text};
use crate::semantic::{Model, ast};

pub const RULE: Rule = Rule {
    code: "CUL803",
    name: "model-exceeds-gpu-memory",
    severity: Severity::Warning,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/model_exceeds_gpu_memory.scm"),
    prefilter: Prefilter { all_of: &[&["from_pretrained"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: true,
};

const DOC: &str = r#"# model-exceeds-gpu-memory (CUL803)

## What it does
Estimates the memory a `from_pretrained` model needs for what the script does with it, and flags
the load when the estimate exceeds the GPU's total memory (from `culint probe`, or
`--gpu-memory`). The parameter count comes from the model id (`Llama-2-13b-hf` is 13B) or from
the table of model families in `knowledge/model_families.toml` (Mixtral-8x7B is 46.7B, gpt2-xl
is 1.5B).

The estimate follows accelerate's `estimate-memory`:
- full training with AdamW in mixed precision: about 16 bytes per parameter (fp32 weights,
  gradients and the two Adam moments), 8 with the weights in bf16;
- LoRA (peft): the frozen base weights, 2 bytes per parameter in bf16, 1 in 8-bit, 0.5 in 4-bit;
- inference: the weights alone, likewise.

Activations come on top, so a model that only just fits is not flagged but may still fail.

A `Trainer`, `Accelerator`, DeepSpeed or Lightning script takes its sharding (FSDP, ZeRO-3) from a
launch configuration culint does not see. Where the node's GPUs together (`--gpus`) would hold
the model, the finding assumes the launch does not shard: it is a preview finding, shown with
`--preview`.

## Why is this bad?
The job loads for minutes, then dies with `CUDA out of memory` before the first step, on every
retry: no batch size fixes weights, gradients and optimizer state that do not fit.

## Example
```python
# on an 80 GiB GPU
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-13b-hf")
for batch in loader:
    model(**batch).loss.backward()
```

## Use instead
```python
model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-2-13b-hf", torch_dtype=torch.bfloat16,
)
model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
```
or shard it with FSDP / DeepSpeed ZeRO-3 across as many GPUs as the message names.

## Fix safety
No fix: the choice between LoRA, quantisation and sharding changes what is trained.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- accelerate: model memory estimator — https://huggingface.co/docs/accelerate/main/en/usage_guides/model_size_estimator
- Model families and their sizes: `knowledge/model_families.toml`
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let Some(memory) = checker.hardware.and_then(|facts| facts.memory_bytes) else { return };
    let model = checker.model;
    let call = candidate.node;
    if !loads_a_transformers_model(model, call) {
        return;
    }
    let Some(id) = model_id(model, call) else { return };
    let Some(parameters) = model_size::parameters_of_id(&id) else { return };
    let usage = Usage::of(model, call);
    let needed = usage.bytes_per_parameter * parameters;
    if needed <= memory as f64 {
        return;
    }
    let gpus = (needed / memory as f64).ceil();
    let weights_bf16 = bytes((2.0 * parameters) as u64);
    let weights_4bit = bytes((0.5 * parameters) as u64);
    let node_gpus = checker.hardware.and_then(|facts| facts.gpus);
    let diagnostic = checker.report_node(
        call,
        format!(
            "`{id}` (about {}) needs about {} for {} ({} bytes per parameter), more than the GPU's {}. Options: LoRA on bf16 weights (about {weights_bf16}), 4-bit loading (about {weights_4bit}), or FSDP / ZeRO-3 across at least {gpus} GPUs; gradient checkpointing saves only activations",
            parameters_text(parameters),
            bytes(needed as u64),
            usage.what,
            usage.bytes_per_parameter,
            bytes(memory),
        ),
    );
    diagnostic
        .with_fact(format!("model: `{id}`, about {} (its id or the family table)", parameters_text(parameters)))
        .with_fact(format!("GPU: {} each (`--gpu-memory`, the configuration or the probe)", bytes(memory)));
    // A trainer or launcher reads sharding (FSDP, ZeRO-3) from its launch configuration, which
    // culint does not see: where the node's GPUs together would hold it, the finding assumes
    // that the launch does not shard.
    let launcher_configured = {
        let frameworks = model.frameworks();
        frameworks.hf_trainer || frameworks.accelerator || frameworks.deepspeed || frameworks.lightning_trainer
    };
    if launcher_configured && node_gpus.is_some_and(|n| n as f64 >= gpus) {
        diagnostic.with_assumption(
            "the launch configuration (`accelerate launch`, a DeepSpeed or FSDP config) does not shard the model; sharded over this node's GPUs it would fit",
        );
    }
}

/// `AutoModelForCausalLM.from_pretrained`, `LlamaForCausalLM.from_pretrained`, `BertModel...`:
/// a transformers model class, not a tokenizer, config or processor.
fn loads_a_transformers_model(model: &Model<'_>, call: Node<'_>) -> bool {
    let Some(qualified) = model.call_qualified_name(call) else { return false };
    let mut parts = qualified.rsplit('.');
    let (Some("from_pretrained"), Some(class)) = (parts.next(), parts.next()) else { return false };
    qualified.starts_with("transformers.") && (class.contains("Model") || class.contains("For"))
}

/// The model id: a string literal, or a name assigned exactly one string literal in the file.
fn model_id(model: &Model<'_>, call: Node<'_>) -> Option<String> {
    let source = model.text;
    let argument = ast::keyword_arg(call, "pretrained_model_name_or_path", source)
        .or_else(|| ast::positional_args(call).into_iter().next())?;
    match argument.kind() {
        "string" => ast::string_value(argument, source),
        "identifier" => {
            let [assignment] = model.assignments_to(model.node_text(argument)) else { return None };
            ast::string_value(assignment.field("right")?, source)
        }
        _ => None,
    }
}

/// What the script does with the model, and what that costs per parameter.
struct Usage {
    what: &'static str,
    bytes_per_parameter: f64,
}

impl Usage {
    fn of(model: &Model<'_>, call: Node<'_>) -> Self {
        let source = model.text;
        let quantized = quantization_bytes(model, call);
        let dtype = ast::keyword_arg(call, "torch_dtype", source).or_else(|| ast::keyword_arg(call, "dtype", source));
        let half = dtype.is_some_and(|d| {
            model.resolves_to(d, &["torch.bfloat16", "torch.float16", "torch.half"])
                || ast::string_value(d, source).is_some_and(|s| matches!(s.as_str(), "bfloat16" | "float16" | "auto"))
        });
        let lora = ["get_peft_model", "LoraConfig", "prepare_model_for_kbit_training"]
            .iter()
            .any(|name| !model.calls_named(name).is_empty());
        let weights = quantized.unwrap_or(if half || dtype.is_none() { 2.0 } else { 4.0 });
        if !model.is_training_context() {
            return Self { what: "inference (the weights)", bytes_per_parameter: weights };
        }
        if lora || quantized.is_some() {
            return Self { what: "LoRA training (the frozen weights)", bytes_per_parameter: weights };
        }
        if half {
            Self { what: "full training with AdamW in bf16", bytes_per_parameter: 8.0 }
        } else {
            Self { what: "full training with AdamW in mixed precision", bytes_per_parameter: 16.0 }
        }
    }
}

/// Bytes per parameter of 8-bit or 4-bit loading, from `load_in_8bit=True` / `load_in_4bit=True`
/// on the call or in its `quantization_config=BitsAndBytesConfig(...)`.
fn quantization_bytes(model: &Model<'_>, call: Node<'_>) -> Option<f64> {
    let source = model.text;
    let mut places = vec![call];
    if let Some(config) = ast::keyword_arg(call, "quantization_config", source) {
        match config.kind() {
            "call" => places.push(config),
            "identifier" => {
                if let [assignment] = model.assignments_to(model.node_text(config))
                    && let Some(right) = assignment.field("right").filter(|r| r.kind() == "call")
                {
                    places.push(right);
                }
            }
            _ => {}
        }
    }
    let on = |place: Node<'_>, key: &str| ast::keyword_arg(place, key, source).is_some_and(|v| v.kind() == "true");
    if places.iter().any(|place| on(*place, "load_in_4bit")) {
        Some(0.5)
    } else if places.iter().any(|place| on(*place, "load_in_8bit")) {
        Some(1.0)
    } else {
        None
    }
}
