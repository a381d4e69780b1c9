//! Framework configuration: who owns the loop, the device placement, the precision and
//! checkpointing. A setting given from a variable or CLI flag counts as on: the user has the switch.

use tree_sitter::Node;

use super::{Model, ast};
use crate::grammar_ids::FieldChild;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frameworks {
    /// `accelerate.Accelerator(...)`: it places models and, with or without `mixed_precision`
    /// (the launch config supplies it), owns precision.
    pub accelerator: bool,
    pub accelerator_mixed_precision: bool,
    /// `transformers.Trainer` / TRL trainers construct and run the loop.
    pub hf_trainer: bool,
    /// `fp16`/`bf16` on in TrainingArguments (or a TRL config), or set from a flag.
    pub hf_mixed_precision: bool,
    pub hf_gradient_checkpointing: bool,
    /// A trainer's `.train()` is called.
    pub trainer_train: bool,
    pub lightning_trainer: bool,
    pub lightning_precision: bool,
    /// Lightning Fabric places models and owns precision much like Accelerator.
    pub fabric: bool,
    /// `deepspeed.initialize(...)` or a DeepSpeed config: precision and placement are the
    /// engine's.
    pub deepspeed: bool,
    /// A DeepSpeed config dict in the file enables fp16 or bf16.
    pub deepspeed_precision: bool,
    /// peft `prepare_model_for_kbit_training` (turns on checkpointing by default).
    pub peft_kbit_checkpointing: bool,
    /// apex `amp.initialize(...)`.
    pub apex_amp: bool,
    /// FSDP mixed precision: `MixedPrecision(...)` / `MixedPrecisionPolicy(...)` built, or passed
    /// to `FullyShardedDataParallel(mixed_precision=...)` / `fully_shard(mp_policy=...)`.
    pub fsdp_mixed_precision: bool,
}

impl Frameworks {
    /// Any framework mixed-precision setting applies.
    pub fn manages_precision(&self) -> bool {
        self.accelerator
            || self.hf_mixed_precision
            || self.lightning_precision
            || self.fabric
            || self.deepspeed
            || self.deepspeed_precision
            || self.apex_amp
            || self.fsdp_mixed_precision
    }

    /// A framework places the model on the device.
    pub fn places_model(&self) -> bool {
        self.accelerator || self.hf_trainer || self.lightning_trainer || self.fabric || self.deepspeed
    }

    pub(super) fn read(model: &Model<'_>) -> Self {
        let mut frameworks = Frameworks::default();
        let source = model.text;
        // Only calls whose final name a framework uses (that of `a.b.C(...)` is `C`; of a bare
        // `C(...)`, the last part of what the import of `C` binds) get a qualified name, which
        // costs a walk of the callee and an allocation. Every setting below is switched on,
        // never off, so the calls can come in any order.
        let named_like_a_framework = model.walked.calls_by_name.iter().filter(|(name, _)| {
            is_framework_name(name)
                || model.imports.binding(name).is_some_and(|b| is_framework_name(final_name(&b.qualified)))
        });
        for call in named_like_a_framework.flat_map(|(_, calls)| calls) {
            let Some(qualified) = model.call_qualified_name(*call) else { continue };
            let root = qualified.split('.').next().unwrap_or_default();
            let last = qualified.rsplit('.').next().unwrap_or_default();
            match (root, last) {
                ("accelerate", "Accelerator") => {
                    frameworks.accelerator = true;
                    frameworks.accelerator_mixed_precision |= ast::keyword_arg(*call, "mixed_precision", source)
                        .is_none_or(|v| !ast::is_literal_off(v, source));
                }
                ("transformers" | "trl", name) if name.ends_with("Arguments") || name.ends_with("Config") => {
                    frameworks.hf_mixed_precision |= switch_on(*call, &["fp16", "bf16"], model)
                        || ast::keyword_arg(*call, "deepspeed", source).is_some();
                    frameworks.hf_gradient_checkpointing |= switch_on(*call, &["gradient_checkpointing"], model);
                    if ast::has_dictionary_splat(*call) {
                        // `TrainingArguments(**config)`: the settings come from elsewhere.
                        frameworks.hf_mixed_precision = true;
                        frameworks.hf_gradient_checkpointing = true;
                    }
                }
                ("transformers" | "trl", name) if name.ends_with("Trainer") => frameworks.hf_trainer = true,
                // Arguments parsed from the command line: every switch is the user's.
                ("transformers", "HfArgumentParser") | ("trl", "TrlParser") => {
                    frameworks.hf_mixed_precision = true;
                    frameworks.hf_gradient_checkpointing = true;
                }
                ("lightning" | "pytorch_lightning" | "lightning_fabric", "Trainer") => {
                    frameworks.lightning_trainer = true;
                    frameworks.lightning_precision |=
                        switch_on(*call, &["precision", "amp_backend"], model) || ast::has_dictionary_splat(*call);
                }
                ("lightning" | "pytorch_lightning" | "lightning_fabric", "Fabric") => frameworks.fabric = true,
                ("deepspeed", "initialize" | "init_inference") => frameworks.deepspeed = true,
                // `prepare_model_for_int8_training` is the older name of the same function
                // (peft < 0.5); both enable checkpointing unless told not to.
                ("peft", "prepare_model_for_kbit_training" | "prepare_model_for_int8_training") => {
                    frameworks.peft_kbit_checkpointing |= ast::keyword_arg(*call, "use_gradient_checkpointing", source)
                        .is_none_or(|v| !ast::is_literal_off(v, source));
                }
                ("apex", "initialize") => frameworks.apex_amp = true,
                ("torch", "MixedPrecision" | "MixedPrecisionPolicy") if qualified.starts_with("torch.distributed.") => {
                    frameworks.fsdp_mixed_precision = true;
                }
                ("torch", "FullyShardedDataParallel" | "fully_shard") => {
                    frameworks.fsdp_mixed_precision |= switch_on(*call, &["mixed_precision", "mp_policy"], model);
                }
                _ => {}
            }
        }
        frameworks.trainer_train = (frameworks.hf_trainer || frameworks.lightning_trainer)
            && model.calls_named("train").iter().chain(model.calls_named("fit")).any(|c| ast::receiver(*c).is_some());
        frameworks.deepspeed_precision = deepspeed_config_enables_precision(model);
        frameworks
    }
}

fn final_name(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or_default()
}

/// The final names of the calls [`Frameworks::read`] matches on.
fn is_framework_name(name: &str) -> bool {
    name.ends_with("Arguments")
        || name.ends_with("Config")
        || name.ends_with("Trainer")
        || matches!(
            name,
            "Accelerator"
                | "HfArgumentParser"
                | "TrlParser"
                | "Fabric"
                | "initialize"
                | "init_inference"
                | "prepare_model_for_kbit_training"
                | "prepare_model_for_int8_training"
                | "MixedPrecision"
                | "MixedPrecisionPolicy"
                | "FullyShardedDataParallel"
                | "fully_shard"
        )
}

/// Any of `keys` passed with a value that is not literally off (`True`, `"bf16-mixed"`, `args.fp16`).
fn switch_on(call: Node<'_>, keys: &[&str], model: &Model<'_>) -> bool {
    keys.iter().any(|key| ast::keyword_arg(call, key, model.text).is_some_and(|v| !ast::is_literal_off(v, model.text)))
}

/// A dict literal like DeepSpeed's `{"fp16": {"enabled": True}}` or `{"bf16": {"enabled": "auto"}}`.
fn deepspeed_config_enables_precision(model: &Model<'_>) -> bool {
    let bytes = model.text.as_bytes();
    if memchr::memmem::find(bytes, b"\"enabled\"").is_none() && memchr::memmem::find(bytes, b"'enabled'").is_none() {
        return false;
    }
    let mut stack = vec![model.tree.root_node()];
    let mut cursor = model.tree.walk();
    while let Some(node) = stack.pop() {
        if node.kind() == "pair"
            && let (Some(key), Some(value)) = (node.field("key"), node.field("value"))
            && matches!(ast::string_value(key, model.text).as_deref(), Some("fp16" | "bf16" | "amp"))
            && value.kind() == "dictionary"
        {
            let mut pairs = value.walk();
            let enabled = value.named_children(&mut pairs).any(|pair| {
                pair.field("key").and_then(|k| ast::string_value(k, model.text)).as_deref() == Some("enabled")
                    && pair.field("value").is_some_and(|v| !ast::is_literal_off(v, model.text))
            });
            if enabled {
                return true;
            }
        }
        stack.extend(node.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

#[cfg(test)]
mod tests {
    use crate::lint::LintContext;
    use crate::parse::parse;
    use crate::semantic::Model;

    fn read(text: &str) -> super::Frameworks {
        let tree = parse(text, None);
        Model::new(text, &tree, LintContext::default()).frameworks().clone()
    }

    /// The final name is read through the import: an alias, a bare imported name and a module
    /// path all reach the same configuration.
    #[test]
    fn configuration_is_read_however_it_is_imported() {
        assert!(read("from accelerate import Accelerator as Acc\nacc = Acc()\n").accelerator);
        assert!(read("import accelerate\nacc = accelerate.Accelerator()\n").accelerator);
        assert!(read("from transformers import TrainingArguments as TA\nTA(bf16=True)\n").hf_mixed_precision);
        assert!(read("import lightning as L\nL.Trainer(precision='bf16-mixed')\n").lightning_precision);
        assert!(
            read("from torch.distributed.fsdp import MixedPrecision as MP\nMP(param_dtype=x)\n").fsdp_mixed_precision
        );
        // The same final names, not imported from the framework, configure nothing.
        let local = read("class Accelerator: ...\nacc = Accelerator()\nTrainingArguments(bf16=True)\n");
        assert!(!local.accelerator && !local.hf_mixed_precision);
        assert!(!read("from mylib import Acc\nAcc()\n").accelerator);
    }
}
