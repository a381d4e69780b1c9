//! CUL602 unknown-cuda-env-var.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::cuda_env::cublas_workspace;
use crate::cuda_env::env_vars::{self, Format, Lookup};
use crate::diagnostic::Severity;
use crate::semantic::environ::EnvSetting;
use crate::semantic::{Model, ast};

pub const RULE: Rule = Rule {
    code: "CUL602",
    name: "unknown-cuda-env-var",
    severity: Severity::Warning,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/unknown_cuda_env_var.scm"),
    prefilter: Prefilter { all_of: &[&["CUBLAS", "CUDA_", "ALLOC"], &["environ", "putenv"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cublas/alloc-failed"),
    deprecated: false,
    quiet_in_test_code: false,
    needs_hardware: false,
};

const DOC: &str = r#"# unknown-cuda-env-var (CUL602)

## What it does
Flags a `CUBLAS*`, `CUBLASLT*`, `CUDA_*` or `PYTORCH_*ALLOC*` environment variable that the
script sets (`os.environ[...] =`, `setdefault`, `update`, `os.putenv`) but that neither NVIDIA's
libraries and driver nor PyTorch read, so it does nothing. It also flags a malformed
`CUBLAS_WORKSPACE_CONFIG`, which must look like `:SIZE_KiB:COUNT[:SIZE_KiB:COUNT...]`
(`:4096:8`, `:4096:2:16:8`).

The known variables, each with its source, are in `knowledge/cuda_env_vars.toml`. The cuBLASLt
variables NVIDIA documents are `CUBLASLT_LOG_LEVEL`, `CUBLASLT_LOG_MASK`, `CUBLASLT_LOG_FILE`,
`CUBLASLT_HEURISTICS_CACHE_CAPACITY` and `CUBLASLT_DISABLE_CPU_INSTRUCTIONS_MASK`;
`CUBLASLT_WORKSPACE_SIZE` is read by PyTorch.

Not flagged: variables the same file reads back itself (`os.environ.get("CUDA_MY_FLAG")`), names
built at run time, and variables outside these families.

## Why is this bad?
A variable nobody reads is a fix that silently does not happen. `CUBLASLT_HEURISTIC_MODE`, for
example, circulates as a cure for `CUBLAS_STATUS_ALLOC_FAILED`, but no cuBLAS release reads it: the
out-of-memory failure comes back, and the real causes (no free memory for the cuBLAS workspace, or
a workspace setting that is too large) stay hidden. A misspelt name (`CUDA_VISIBLE_DEVICE`) fails
the same way. A malformed `CUBLAS_WORKSPACE_CONFIG` is ignored or rejected by cuBLAS and PyTorch,
so neither the reproducibility nor the workspace size it asks for applies.

## Example
```python
os.environ["CUBLASLT_HEURISTIC_MODE"] = "1"
os.environ["CUBLAS_WORKSPACE_CONFIG"] = "4096:8"
```

## Use instead
```python
os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
```
For `CUBLAS_STATUS_ALLOC_FAILED`, free GPU memory for the workspace, or lower
`CUBLASLT_WORKSPACE_SIZE`.

## Fix safety
There is no automatic fix: what the line was meant to achieve is the author's call. The message
names the closest known variable when the name looks misspelt.

## References
- Knowledge entry: `cublas/alloc-failed` (`culint explain`)
- cuBLAS: results reproducibility and `CUBLAS_WORKSPACE_CONFIG` — https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility
- cuBLASLt: logging environment variables — https://docs.nvidia.com/cuda/cublas/index.html#cublaslt-logging
- CUDA: environment variables — https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
- PyTorch: CUDA environment variables — https://pytorch.org/docs/stable/cuda_environment_variables.html
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    for setting in model.env_settings(candidate.node) {
        let Some(message) = problem(model, &setting) else { continue };
        checker.report_node(setting.node, message);
        // One finding per statement: the engine keeps one diagnostic per rule and range.
        return;
    }
}

fn problem<'a>(model: &Model<'a>, setting: &EnvSetting<'a>) -> Option<String> {
    let name = setting.name;
    match env_vars::lookup(name) {
        Lookup::OutOfScope => None,
        Lookup::Known(var) if var.format == Format::CublasWorkspaceConfig => {
            // An empty value resets the variable to the default, which is well formed.
            let value = setting.value.and_then(|v| ast::string_value(v, model.text)).filter(|v| !v.is_empty())?;
            let problem = cublas_workspace::parse(&value).err()?;
            Some(format!("`{name}` is malformed, so the workspace it asks for never applies: {problem}"))
        }
        Lookup::Known(_) => None,
        Lookup::DeadEnd(dead_end) => Some(format!(
            "`{name}` does nothing: it circulates as a fix, but neither NVIDIA nor PyTorch reads it. {}",
            dead_end.instead
        )),
        Lookup::Unknown { suggestion } => {
            if read_elsewhere(model, setting) {
                return None;
            }
            let hint = suggestion.map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
            Some(format!("`{name}` does nothing: neither NVIDIA nor PyTorch reads it{hint}"))
        }
    }
}

/// The name appears in another string literal of the file (`os.environ.get(...)`, a config
/// table): the project reads the variable itself, so it is not dead.
fn read_elsewhere<'a>(model: &Model<'a>, setting: &EnvSetting<'a>) -> bool {
    model.text.match_indices(setting.name).any(|(start, _)| {
        let Some(node) = model.descendant_for_byte_range(start, start + setting.name.len()) else { return false };
        let string = if node.kind() == "string" { Some(node) } else { node.parent().filter(|p| p.kind() == "string") };
        let Some(string) = string else { return false };
        string.id() != setting.name_node.id()
            && ast::string_value(string, model.text).as_deref() == Some(setting.name)
            && !is_setting_key(model, string)
    })
}

/// A key that sets the same variable somewhere else, which is no evidence that anyone reads it.
fn is_setting_key<'a>(model: &Model<'a>, string: Node<'a>) -> bool {
    let mut current = string.parent();
    while let Some(node) = current {
        if matches!(node.kind(), "assignment" | "call") {
            return model.env_settings(node).iter().any(|s| s.name_node.id() == string.id());
        }
        current = node.parent();
    }
    false
}
