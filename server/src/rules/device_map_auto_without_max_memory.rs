//! CUL103 device-map-auto-without-max-memory.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::hardware::HardwareFacts;
use crate::semantic::{Model, ast, model_size, names};

pub const RULE: Rule = Rule {
    code: "CUL103",
    name: "device-map-auto-without-max-memory",
    severity: Severity::Info,
    fix: FixAvailability::DisplayOnly,
    query: include_str!("../../../queries/python/device_map_auto_without_max_memory.scm"),
    prefilter: Prefilter {
        all_of: &[&["device_map"], &["\"auto\"", "'auto'"], &["from_pretrained"]],
        scan: Some(passes_device_map_auto),
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-other-processes"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# device-map-auto-without-max-memory (CUL103)

## What it does
Flags `from_pretrained(..., device_map="auto")` of a transformers, diffusers or peft class that
passes no `max_memory`, in code that trains or runs under `torchrun`/DDP.

## Why is this bad?
`"auto"` is treated like `"balanced"`: accelerate spreads the layers over every visible GPU, and
whatever does not fit is offloaded to the CPU or to disk without an error (`"sequential"` is the
value that fills GPU 0 first). For training that means a naive pipeline in which one GPU works at
a time, or offloaded weights that make each step crawl and cannot be trained on the GPU; under
`torchrun` every rank spreads its own copy over all the GPUs. `max_memory` bounds what each device
takes, so the placement is the one you planned; under DDP, `device_map={"": local_rank}` keeps
each rank on its own GPU.

Not flagged: calls that pass `max_memory` (also through `**kwargs`), a `device_map` that is a
variable or a setting other than `"auto"`, inference-only code (spreading a model over the GPUs
to generate is what `"auto"` is for), tests, and models known to be small (under a billion
parameters, from the id or the family table).

## Example
```python
model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
```

## Use instead
```python
model = AutoModelForCausalLM.from_pretrained(
    name, device_map="auto", max_memory={0: "60GiB", 1: "70GiB", "cpu": "200GiB"}
)
```
Under `torchrun`/DDP, give each rank its own GPU instead: `device_map={"": local_rank}`.

## Fix safety
There is no automatic fix: the right budget depends on the GPUs and on the workload. A
display-only fix shows a `max_memory` template, filled with about 85% of each GPU's memory when
the GPUs are known (from `culint probe` or `--gpus`/`--gpu-memory`).

## References
- Knowledge entry: `cuda/oom-other-processes` (`culint explain`)
- Transformers: big model inference, `device_map` and `max_memory` — https://huggingface.co/docs/accelerate/usage_guides/big_modeling
- Transformers: `PreTrainedModel.from_pretrained` — https://huggingface.co/docs/transformers/main_classes/model#transformers.PreTrainedModel.from_pretrained
"#;

/// Libraries whose `from_pretrained` accepts `device_map` and `max_memory`.
const LOADER_LIBRARIES: &[&str] = &["transformers", "diffusers", "peft", "auto_gptq", "optimum"];

/// Below this many parameters a model fits one GPU with room to train: no placement to plan.
const SMALL_PARAMETERS: f64 = 1e9;

/// The share of a GPU's memory the template offers to the weights.
const WEIGHT_SHARE_PERCENT: u64 = 85;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    if !is_library_from_pretrained(model, call) {
        return;
    }
    let Some(device_map) = ast::keyword_arg(call, "device_map", model.text) else { return };
    if ast::string_value(device_map, model.text).as_deref() != Some("auto") {
        return;
    }
    if ast::keyword_arg(call, "max_memory", model.text).is_some() || ast::has_dictionary_splat(call) {
        return;
    }
    let distributed = model.calls_to(names::INIT_PROCESS_GROUP).next().is_some() || model.text.contains("LOCAL_RANK");
    if !distributed && !model.is_training_context() {
        return;
    }
    if model_size::of_load(model, call).is_some_and(|size| size.parameters < SMALL_PARAMETERS) {
        return;
    }
    let size = model_size::of_load(model, call);
    let template = max_memory_template(checker.hardware);
    let keyword = device_map.parent().expect("a keyword argument holds the value");
    let fix = Fix::display_only(
        "Give `from_pretrained` a `max_memory` budget that leaves headroom on each GPU",
        vec![Edit::insertion(keyword.end_byte(), format!(", max_memory={template}"))],
    );
    let diagnostic = checker.report_node(
            call,
            if distributed {
                "`device_map=\"auto\"` without `max_memory` under DDP: every rank spreads its own copy of the model over all visible GPUs"
            } else {
                "`device_map=\"auto\"` without `max_memory` spreads the model over every visible GPU and silently offloads what does not fit to CPU or disk: training then runs one GPU at a time, or crawls"
            },
        );
    diagnostic.with_fix(fix).with_fact(if distributed {
        "run: distributed (a process group or `LOCAL_RANK` in the file)"
    } else {
        "run: the file trains (a step loop or a trainer)"
    });
    diagnostic.with_fact(match size {
        Some(size) => format!("model: {}, about {}", size.fact, model_size::parameters_text(size.parameters)),
        None => "model: size not stated in the code; not known to be small".to_owned(),
    });
}

/// Some `device_map="auto"` keyword (or an assignment that looks the same) is in the text: a
/// `device_map` that is a variable or a comparison is never flagged.
fn passes_device_map_auto(text: &str) -> bool {
    let blank = [' ', '\t', '\r', '\n', '\\'];
    memchr::memmem::find_iter(text.as_bytes(), b"device_map").any(|at| {
        let Some(value) = text[at + "device_map".len()..].trim_start_matches(blank).strip_prefix('=') else {
            return false;
        };
        if value.starts_with('=') {
            return false;
        }
        let value = value.trim_start_matches(blank);
        if value.starts_with('#') {
            return true;
        }
        let value = value.trim_start_matches(['r', 'R', 'u', 'U']);
        let Some(quote) = value.chars().next().filter(|c| matches!(c, '"' | '\'')) else { return false };
        let quotes = if value.starts_with(&quote.to_string().repeat(3)) { 3 } else { 1 };
        value[quotes..].strip_prefix("auto").is_some_and(|rest| rest.starts_with(quote))
    })
}

/// `AutoModelForCausalLM.from_pretrained(...)`, `transformers.AutoModel.from_pretrained(...)`:
/// the receiver resolves to one of the loader libraries.
fn is_library_from_pretrained(model: &Model<'_>, call: Node<'_>) -> bool {
    let Some(qualified) = model.call_qualified_name(call) else { return false };
    qualified.ends_with(".from_pretrained")
        && LOADER_LIBRARIES.contains(&qualified.split('.').next().unwrap_or_default())
}

/// `{0: "68GiB", 1: "68GiB"}` for known GPUs, placeholders otherwise.
fn max_memory_template(hardware: Option<&HardwareFacts>) -> String {
    let known = hardware.and_then(|h| Some((h.gpus?, h.memory_bytes?)));
    match known {
        Some((gpus, bytes)) if gpus > 0 => {
            let budget_gib = (bytes >> 30) * WEIGHT_SHARE_PERCENT / 100;
            let devices: Vec<String> = (0..gpus).map(|i| format!("{i}: \"{budget_gib}GiB\"")).collect();
            format!("{{{}}}", devices.join(", "))
        }
        _ => "{0: \"<GiB for GPU 0>\", \"cpu\": \"<GiB of RAM>\"}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use crate::fix::Applicability;
    use crate::hardware::HardwareFacts;
    use crate::lint::{LintContext, LintSettings, RuleSet, lint_text};

    const SOURCE: &str = "from transformers import AutoModel\nm = AutoModel.from_pretrained(n, device_map=\"auto\")\nfor b in d:\n    m(**b).loss.backward()\n";

    fn fix_content(hardware: Option<HardwareFacts>) -> (Applicability, String) {
        let settings = LintSettings { rules: RuleSet::from_selectors(&["CUL103"]), hardware, ..Default::default() };
        let found = lint_text(SOURCE, LintContext::default(), &settings);
        let fix = found[0].fix.as_ref().expect("a display-only template");
        (fix.applicability, fix.edits[0].content.to_string())
    }

    #[test]
    fn the_prefilter_wants_an_auto_keyword() {
        for admitted in [
            "f(device_map=\"auto\")",
            "f(device_map = 'auto')",
            "f(device_map=\\\n    \"auto\")",
            "f(device_map=r'auto')",
            "f(device_map=\"\"\"auto\"\"\")",
            "f(device_map=  # placement\n  \"auto\")",
        ] {
            assert!(super::passes_device_map_auto(admitted), "{admitted}");
        }
        for turned_away in ["if device_map == \"auto\":", "f(device_map=device_map)", "f(device_map=\"auto_split\")"] {
            assert!(!super::passes_device_map_auto(turned_away), "{turned_away}");
        }
    }

    #[test]
    fn template_is_display_only_and_uses_known_gpus() {
        let (applicability, unknown) = fix_content(None);
        assert_eq!(applicability, Applicability::DisplayOnly);
        assert_eq!(unknown, ", max_memory={0: \"<GiB for GPU 0>\", \"cpu\": \"<GiB of RAM>\"}");
        let two_80gb = HardwareFacts { gpus: Some(2), memory_bytes: Some(80 << 30), compute_capability: None };
        let (_, known) = fix_content(Some(two_80gb));
        assert_eq!(known, ", max_memory={0: \"68GiB\", 1: \"68GiB\"}");
    }
}
