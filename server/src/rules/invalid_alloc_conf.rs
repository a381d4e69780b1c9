//! CUL204 invalid-alloc-conf.

use tree_sitter::Node;

use super::Checker;
use super::alloc_conf_after_cuda_init::ALLOC_CONF_VARIABLES;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::cuda_env::alloc_conf;
use crate::diagnostic::Severity;
use crate::semantic::ast;
use crate::text::TextRange;

pub const RULE: Rule = Rule {
    code: "CUL204",
    name: "invalid-alloc-conf",
    severity: Severity::Error,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/invalid_alloc_conf.scm"),
    prefilter: Prefilter { all_of: &[&["ALLOC_CONF"], &["environ", "putenv"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-fragmentation"),
    deprecated: false,
    quiet_in_test_code: false,
    needs_hardware: false,
};

const DOC: &str = r#"# invalid-alloc-conf (CUL204)

## What it does
Checks the string a script puts in `PYTORCH_CUDA_ALLOC_CONF` or `PYTORCH_ALLOC_CONF` the way
PyTorch parses it: comma-separated `key:value` options with known keys and valid values.

- Keys: `backend`, `large_segment_size_mb`, `max_split_size_mb`, `roundup_power2_divisions`,
  `max_non_split_rounding_mb`, `garbage_collection_threshold`, `expandable_segments`,
  `release_lock_on_cudamalloc`, `pinned_use_cuda_host_register`, `pinned_num_register_threads`,
  `pinned_use_background_threads`, `pinned_reserve_segment_size_mb`,
  `pinned_max_round_threshold_mb`, `pinned_max_cached_size_mb`,
  `graph_capture_record_stream_reuse`, `per_process_memory_fraction`, `throw_on_cudamalloc_oom`.
- `max_split_size_mb` is a number of MiB of at least 20, or -1 for no limit;
  `garbage_collection_threshold` lies strictly between 0 and 1; `expandable_segments` is exactly
  `True` or `False` (`true` and `1` are rejected); `backend` is `native` or `cudaMallocAsync`;
  `roundup_power2_divisions` is a power of two or a `[size:div,...,>:div]` list.
- `key=value` and `;` between options are rejected. Spaces after commas and a trailing comma are
  accepted.

All of this was checked against torch 2.11. Only literal strings are checked.

## Why is this bad?
An unknown key stops the program at CUDA initialisation ("Unrecognized key"), often after the
data has loaded, and a malformed value fails the same way. Either way the memory setting the
line was written for (usually `expandable_segments:True` against fragmentation) never applies.

## Example
```python
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:true;max_split_size_mb=128"
```

## Use instead
```python
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:128"
```

## Fix safety
There is no automatic fix: the message names the key or value at fault and what PyTorch accepts,
but which setting was meant is the author's call. Note that renaming `PYTORCH_CUDA_ALLOC_CONF` to
the newer `PYTORCH_ALLOC_CONF` is not a fix: torch 2.9.1 silently ignored `expandable_segments`
under the new name on CUDA (pytorch issue 183387).

## References
- Knowledge entry: `cuda/oom-fragmentation` (`culint explain`)
- PyTorch: CUDA semantics, optimizing memory usage with `PYTORCH_CUDA_ALLOC_CONF` — https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    for setting in model.env_settings(candidate.node) {
        if !ALLOC_CONF_VARIABLES.contains(&setting.name) {
            continue;
        }
        let Some(value) = setting.value.filter(|v| v.kind() == "string") else { continue };
        let Some(config) = ast::string_value(value, model.text) else { continue };
        let problems = alloc_conf::validate(&config);
        let Some(first) = problems.first() else { continue };
        let more = match problems.len() {
            1 => String::new(),
            2 => " (and 1 more problem)".to_owned(),
            n => format!(" (and {} more problems)", n - 1),
        };
        let message = format!("`{}` is invalid: {}{more}", setting.name, first.message);
        let content_start = content_start(value);
        let diagnostic = checker.report_node(setting.node, message);
        for problem in &problems {
            let range = TextRange::new(content_start + problem.range.start, content_start + problem.range.end);
            diagnostic.with_related(range, problem.message.clone());
        }
        // One finding per statement: the engine keeps one diagnostic per rule and range.
        return;
    }
}

/// Where the characters of a string literal begin (after its prefix and opening quotes). Escape
/// sequences are kept verbatim by `string_value`, so offsets into the value map onto the source.
fn content_start(string: Node<'_>) -> usize {
    let mut cursor = string.walk();
    let start = string.named_children(&mut cursor).find(|c| c.kind() == "string_start");
    start.map_or(string.start_byte(), |s| s.end_byte())
}
