//! Qualified names the rules recognise, in one place.

/// Calls whose result is no `nn.Module` that records autograd when called, though it may be
/// stored under a model's name: a Python module, or a transformers pipeline (which runs its model
/// under `inference_mode`).
pub const NON_MODULE_FACTORIES: &[&str] = &["importlib.import_module", "transformers.pipeline"];

/// ultralytics' model classes: calling one predicts, under `inference_mode`
/// (`ultralytics.engine.model.Model.__call__` runs `predict`).
pub const ULTRALYTICS_MODELS: &[&str] = &["YOLO", "YOLOWorld", "YOLOE", "RTDETR", "SAM", "FastSAM", "NAS", "Model"];

/// Context managers and decorators under which autograd records nothing.
pub const GRAD_DISABLING: &[&str] = &[
    "torch.no_grad",
    "torch.inference_mode",
    "torch.autograd.no_grad",
    "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.no_grad",
    "torch.autograd.grad_mode.inference_mode",
];

/// `torch.set_grad_enabled(False)` disables autograd too, but only with a false argument.
pub const SET_GRAD_ENABLED: &[&str] = &["torch.set_grad_enabled", "torch.autograd.set_grad_enabled"];

/// Autocast context managers that cover CUDA.
pub const AUTOCAST: &[&str] = &[
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
    "torch.cuda.amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast",
];

pub const INIT_PROCESS_GROUP: &[&str] = &[
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "deepspeed.init_distributed",
    "deepspeed.comm.init_distributed",
];

pub const DDP: &[&str] = &[
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.parallel.DistributedDataParallelCPU",
];

pub const SET_DEVICE: &[&str] = &["torch.cuda.set_device"];

pub const EMPTY_CACHE: &[&str] = &["torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"];

pub const OUT_OF_MEMORY_ERRORS: &[&str] = &["torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError"];

pub const CHECKPOINT_FUNCTIONS: &[&str] = &[
    "torch.utils.checkpoint.checkpoint",
    "torch.utils.checkpoint.checkpoint_sequential",
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing",
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
    "deepspeed.checkpointing.checkpoint",
    "fairscale.nn.checkpoint.checkpoint_wrapper",
];

/// Method names that turn activation checkpointing on, whatever the receiver.
pub const CHECKPOINT_METHODS: &[&str] =
    &["gradient_checkpointing_enable", "enable_gradient_checkpointing", "apply_activation_checkpointing"];

/// Modules under which a name is a library, never a project helper the checker cannot see.
/// A module outside this list and outside the project is unseen, and rules that depend on what
/// a helper does stay quiet about it.
pub const KNOWN_LIBRARIES: &[&str] = &[
    // standard library
    "__future__",
    "abc",
    "argparse",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "builtins",
    "collections",
    "contextlib",
    "copy",
    "csv",
    "ctypes",
    "dataclasses",
    "datetime",
    "enum",
    "functools",
    "gc",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "importlib",
    "inspect",
    "io",
    "itertools",
    "json",
    "logging",
    "math",
    "multiprocessing",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "platform",
    "pprint",
    "queue",
    "random",
    "re",
    "shutil",
    "signal",
    "socket",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "sys",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "zipfile",
    // scientific Python and ML
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "transformers",
    "diffusers",
    "accelerate",
    "peft",
    "trl",
    "datasets",
    "evaluate",
    "tokenizers",
    "huggingface_hub",
    "safetensors",
    "timm",
    "deepspeed",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "apex",
    "bitsandbytes",
    "fairscale",
    "numpy",
    "scipy",
    "pandas",
    "sklearn",
    "matplotlib",
    "seaborn",
    "PIL",
    "cv2",
    "tqdm",
    "wandb",
    "tensorboard",
    "mlflow",
    "yaml",
    "omegaconf",
    "hydra",
    "einops",
    "tiktoken",
    "sentencepiece",
    "xformers",
    "flash_attn",
    "triton",
    "cupy",
    "numba",
    "jax",
    "tensorflow",
    "keras",
    "requests",
    "rich",
    "click",
    "fire",
    "typer",
    "absl",
    "pydantic",
    "h5py",
    "imageio",
    "skimage",
    "albumentations",
    "torchmetrics",
    "nltk",
    "spacy",
    "sacrebleu",
    "rouge_score",
    "optuna",
];

pub fn is_known_library(qualified: &str) -> bool {
    let root = qualified.split('.').next().unwrap_or_default();
    KNOWN_LIBRARIES.contains(&root)
}

/// Whether a name reads like a model's: it holds one of [`MODEL_NAME_FRAGMENTS`] in any case,
/// and is not a loss (`loss_model`).
pub fn is_model_name(name: &str) -> bool {
    MODEL_NAME_FRAGMENTS.iter().any(|f| contains_ignoring_ascii_case(name, f))
        && !contains_ignoring_ascii_case(name, "loss")
}

/// Whether `name` holds `fragment`, ASCII letters compared without case. Names are short, and a
/// lower-cased copy of each, searched once per fragment, cost more than the names' other checks:
/// this copies nothing.
pub fn contains_ignoring_ascii_case(name: &str, fragment: &str) -> bool {
    fragment.is_empty()
        || name.as_bytes().windows(fragment.len()).any(|window| window.eq_ignore_ascii_case(fragment.as_bytes()))
}

/// Lower-case fragments of names that people give to models, for "calls a model".
pub const MODEL_NAME_FRAGMENTS: &[&str] = &[
    "model",
    "net",
    "encoder",
    "decoder",
    "backbone",
    "classifier",
    "unet",
    "transformer",
    "vae",
    "policy",
    "critic",
    "actor",
    "generator",
    "discriminator",
    "gpt",
    "bert",
    "llm",
    "module",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_recognised_in_any_case_and_losses_are_not() {
        for name in ["model", "G_Net", "textEncoder", "UNet2D", "LLM", "backbone_fn"] {
            assert!(is_model_name(name), "{name}");
        }
        for name in ["loader", "criterion", "lossModel", "net_LOSS", "", "m"] {
            assert!(!is_model_name(name), "{name}");
        }
    }

    #[test]
    fn containment_ignores_ascii_case_only() {
        assert!(contains_ignoring_ascii_case("MyModel", "model"));
        assert!(!contains_ignoring_ascii_case("mod", "model"));
        assert!(contains_ignoring_ascii_case("mod", ""));
        // The Kelvin sign lower-cases to `k` in Unicode, but is no ASCII letter.
        assert!(!contains_ignoring_ascii_case("\u{212A}ey", "key"));
    }
}
