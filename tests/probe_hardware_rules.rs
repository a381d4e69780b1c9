//! The hardware-aware rules (CUL8xx) fed with injected facts, as `culint check --probe` or the
//! language server's probe would feed them: quiet without facts, and exactly as strict as the
//! facts say.

use culint::hardware::HardwareFacts;
use culint::lint::{LintContext, LintSettings, RuleSet, lint_text};

fn codes(text: &str, select: &str, hardware: Option<HardwareFacts>) -> Vec<(String, usize)> {
    let settings = LintSettings { rules: RuleSet::from_selectors(&[select]), hardware, ..Default::default() };
    let diagnostics = lint_text(text, LintContext::default(), &settings);
    let index = culint::text::LineIndex::new(text);
    diagnostics.iter().map(|d| (d.code.to_owned(), index.location(text, d.range.start).row)).collect()
}

fn gpus(count: usize) -> Option<HardwareFacts> {
    Some(HardwareFacts { gpus: Some(count), ..HardwareFacts::default() })
}

const PLACEMENT: &str = "import torch\nmodel = torch.nn.Linear(2, 2).to(\"cuda:3\")\ntorch.cuda.set_device(1)\n";

#[test]
fn device_indices_are_checked_against_the_visible_count() {
    assert_eq!(codes(PLACEMENT, "CUL801", None), []);
    assert_eq!(codes(PLACEMENT, "CUL801", gpus(8)), []);
    assert_eq!(codes(PLACEMENT, "CUL801", gpus(4)), []);
    assert_eq!(codes(PLACEMENT, "CUL801", gpus(3)), [("CUL801".to_owned(), 2)]);
    assert_eq!(codes(PLACEMENT, "CUL801", gpus(1)), [("CUL801".to_owned(), 2), ("CUL801".to_owned(), 3)]);
    // Facts without a device count (only --gpu-memory given) are no licence to guess.
    let memory_only = Some(HardwareFacts { memory_bytes: Some(80 << 30), ..HardwareFacts::default() });
    assert_eq!(codes(PLACEMENT, "CUL801", memory_only), []);
}

const FP16: &str = "import torch\nscaler = torch.amp.GradScaler(\"cuda\")\nwith torch.autocast(\"cuda\", dtype=torch.float16):\n    pass\n";

#[test]
fn fp16_is_flagged_only_where_bf16_is_native() {
    let with_cc = |cc| Some(HardwareFacts { compute_capability: Some(cc), ..HardwareFacts::default() });
    assert_eq!(codes(FP16, "CUL802", None), []);
    assert_eq!(codes(FP16, "CUL802", with_cc((7, 5))), []);
    assert_eq!(codes(FP16, "CUL802", with_cc((8, 0))), [("CUL802".to_owned(), 3)]);
    assert_eq!(codes(FP16, "CUL802", with_cc((9, 0))), [("CUL802".to_owned(), 3)]);
}

const TRAINING: &str = "from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(\"meta-llama/Llama-2-7b-hf\")
for batch in loader:
    model(**batch).loss.backward()
";

#[test]
fn model_memory_is_compared_with_the_gpu() {
    let memory = |gib: u64| Some(HardwareFacts { memory_bytes: Some(gib << 30), ..HardwareFacts::default() });
    // Llama-2-7b is 6.74B parameters (knowledge/model_families.toml): 16 bytes each for full
    // AdamW training is about 100 GiB.
    assert_eq!(codes(TRAINING, "CUL803", None), []);
    assert_eq!(codes(TRAINING, "CUL803", memory(141)), []);
    assert_eq!(codes(TRAINING, "CUL803", memory(80)), [("CUL803".to_owned(), 2)]);
    let settings =
        LintSettings { rules: RuleSet::from_selectors(&["CUL803"]), hardware: memory(24), ..Default::default() };
    let message = &lint_text(TRAINING, LintContext::default(), &settings)[0].message;
    assert!(message.contains("about 6.7B parameters"), "{message}");
    assert!(message.contains("needs about 100 GiB for full training with AdamW"), "{message}");
    assert!(message.contains("across at least 5 GPUs"), "{message}");
}
