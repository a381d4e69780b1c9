//! CUL201 empty-cache-in-step-loop.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::Fix;
use crate::grammar_ids::FieldChild;
use crate::prefilter::STEP_TOKENS;
use crate::semantic::{Model, ast, names};
use crate::text::indentation_at;

pub const RULE: Rule = Rule {
    code: "CUL201",
    name: "empty-cache-in-step-loop",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/empty_cache_in_step_loop.scm"),
    prefilter: Prefilter { all_of: &[&["empty_cache"], STEP_TOKENS], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-fragmentation"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# empty-cache-in-step-loop (CUL201)

## What it does
Flags `torch.cuda.empty_cache()` inside a step loop (the loop that calls `.backward()`), where it
runs on every batch.

## Why is this bad?
`empty_cache()` returns the caching allocator's unused blocks to the driver. It frees nothing that a
live tensor still holds, so it cannot prevent an out-of-memory error, and it does not cure
fragmentation. On every batch it forces a device synchronisation, and the next allocations pay for
`cudaMalloc` again: the step gets slower and peak memory stays the same.

Calls under a periodic guard (`if step % 100 == 0:`), under a memory-threshold check, or in an
out-of-memory recovery handler (`except torch.cuda.OutOfMemoryError:`) are not flagged. Nor are
calls whose every enclosing loop iterates a literal tuple or list of constants
(`for hidden in (128, 256, 512):`): that is a sweep over a few configurations, each pass running a
whole benchmark or experiment, and emptying the cache between them deliberately keeps one
configuration's cached memory out of the next one's measurements. A loop over data
(`for batch in loader:`, `for step in range(n):`) around the sweep still makes it per step.

## Example
```python
for batch in loader:
    loss = model(batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.empty_cache()
```

## Use instead
```python
for batch in loader:
    loss = model(batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
torch.cuda.empty_cache()
```
For fragmentation, set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` before CUDA starts.

## Fix safety
The fix moves the call to just after the step loop. It is unsafe: code that measures memory right
after the call inside the loop would see different numbers.

## References
- Knowledge entry: `cuda/oom-fragmentation` (`culint explain`)
- PyTorch: CUDA semantics, memory management — https://pytorch.org/docs/stable/notes/cuda.html#memory-management
"#;

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    if !model.call_resolves_to(call, names::EMPTY_CACHE) || !model.in_step_body(call) {
        return;
    }
    if is_guarded(model, call) || in_oom_handler(model, call) || in_a_configuration_sweep(model, call) {
        return;
    }
    let fix = move_after_step_loop(model, call);
    let diagnostic = checker.report_node(
        call,
        "`torch.cuda.empty_cache()` runs on every step: it syncs the device and frees no live memory",
    );
    if let Some(step_loop) = model.enclosing_step_loop(call) {
        diagnostic.with_fact(format!("training step: the loop {}", model.quote(step_loop.node)));
    }
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// Under `if step % N == 0:` or a memory-threshold check, the call does not run every step.
fn is_guarded<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    for node in model.ancestors(call) {
        if ast::is_loop(node) || ast::is_function_boundary(node) {
            return false;
        }
        if matches!(node.kind(), "if_statement" | "elif_clause")
            && node.field("consequence").is_some_and(|c| ast::contains(c, call))
            && let Some(condition) = node.field("condition")
        {
            let condition = model.node_text(condition);
            if condition.contains('%') || condition.contains("memory_") || condition.contains("mem_get_info") {
                return true;
            }
        }
    }
    false
}

/// Every loop around the call iterates a literal tuple or list of constants (`for hidden in
/// (128, 256, 512):`): a sweep over a few configurations, each pass a whole benchmark or run, not
/// a loop over batches. Emptying the cache between passes keeps one configuration's cached blocks
/// out of the next one's memory and timing.
fn in_a_configuration_sweep<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    let iterates_constants = |loop_node: Node<'_>| {
        loop_node.field("right").is_some_and(|values| {
            let mut cursor = values.walk();
            matches!(values.kind(), "tuple" | "list") && values.named_children(&mut cursor).all(ast::is_literal)
        })
    };
    let mut loops = model.loops_around_call(call).peekable();
    loops.peek().is_some() && loops.all(|l| l.kind() == "for_statement" && iterates_constants(l))
}

/// In an `except` for out-of-memory errors, or a branch that checks for "out of memory".
pub fn in_oom_handler<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    for node in model.ancestors(call) {
        if ast::is_function_boundary(node) {
            return false;
        }
        match node.kind() {
            "except_clause" => {
                let mut cursor = node.walk();
                let catches_oom = node
                    .named_children(&mut cursor)
                    .take_while(|c| c.kind() != "block")
                    .any(|c| mentions_oom_error(model, c));
                if catches_oom || model.node_text(node).contains("out of memory") {
                    return true;
                }
            }
            "if_statement" | "elif_clause"
                if node.field("condition").is_some_and(|c| model.node_text(c).contains("out of memory")) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

fn mentions_oom_error(model: &Model<'_>, node: Node<'_>) -> bool {
    if model.resolves_to(node, names::OUT_OF_MEMORY_ERRORS) || model.node_text(node).ends_with("OutOfMemoryError") {
        return true;
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor).any(|c| mentions_oom_error(model, c))
}

fn move_after_step_loop<'a>(model: &Model<'a>, call: Node<'a>) -> Option<Fix> {
    let step_loop = model.enclosing_step_loop(call)?.node;
    let statement = model.parent(call).filter(|s| s.kind() == "expression_statement")?;
    let (removal, line) = edits::take_statement(model, statement)?;
    let line = line.as_str();
    let indent = indentation_at(model.text, step_loop.start_byte());
    let mut insertion = edits::insert_line_after(model.text, step_loop, indent, line);
    if removal.range.contains_range(insertion.range) {
        // The call is the loop's last line: put it back right after the deleted line.
        let removed = &model.text[removal.range.start..removal.range.end];
        let eol = if removed.ends_with('\n') { crate::text::line_ending(model.text) } else { "" };
        insertion = crate::fix::Edit::insertion(removal.range.end, format!("{indent}{line}{eol}"));
    }
    Some(Fix::unsafe_edits("Move `empty_cache()` after the step loop", vec![removal, insertion]))
}
