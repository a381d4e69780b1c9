//! CUL202 empty-cache-before-release.

use tree_sitter::Node;

use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::Fix;
use crate::lint::Checker;
use crate::semantic::training::mentions;
use crate::semantic::{Model, ast, names};
use crate::text::indentation_at;

pub const RULE: Rule = Rule {
    code: "CUL202",
    name: "empty-cache-before-release",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/empty_cache_before_release.scm"),
    prefilter: Prefilter { all_of: &[&["empty_cache"]], scan: Some(could_release_memory) },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-fragmentation"),
    deprecated: false,
    needs_hardware: false,
    cached_per_statement: true,
};

const DOC: &str = r#"# empty-cache-before-release (CUL202)

## What it does
Flags `torch.cuda.empty_cache()` that comes, in the same block, before the `del` statements or the
`gc.collect()` call that would free the tensors. A `del` of names that the statements in between
still use does not count: those tensors were in use when the cache was emptied.

## Why is this bad?
`empty_cache()` can only hand back cached blocks that no tensor uses. Called while the tensors are
still alive, it releases nothing of theirs; the `del` that follows then returns their memory to the
cache, where it stays reserved. The usual intent, handing memory back before the next phase (or to
another process), silently fails.

## Example
```python
torch.cuda.empty_cache()
del model, optimizer
gc.collect()
```

## Use instead
```python
del model, optimizer
gc.collect()
torch.cuda.empty_cache()
```

## Fix safety
The fix moves the call after the last `del` or `gc.collect()` of the block. It is safe: the call
only returns cached memory, so moving it later changes no computed value.

## References
- Knowledge entry: `cuda/oom-fragmentation` (`culint explain`)
- PyTorch: `torch.cuda.empty_cache` — https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html
"#;

/// A release to move the call after: a `del` statement or a `collect()` call (of `gc`).
fn could_release_memory(text: &str) -> bool {
    text.contains("collect") || crate::prefilter::could_delete(text)
}

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    if !model.call_resolves_to(call, names::EMPTY_CACHE) {
        return;
    }
    let Some(statement) = model.parent(call).filter(|s| s.kind() == "expression_statement") else { return };
    let Some(last_release) = last_release_after(model, statement) else { return };
    let fix = move_after(model, statement, last_release);
    let diagnostic = checker.report_node(
        call,
        "`torch.cuda.empty_cache()` runs before the tensors are released, so it frees nothing of theirs",
    );
    diagnostic.with_related(crate::text::TextRange::of(last_release), "the memory is released here");
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// The last later sibling statement that releases memory: `del ...` or `gc.collect()`.
fn last_release_after<'a>(model: &Model<'a>, statement: Node<'a>) -> Option<Node<'a>> {
    // The siblings are found through the model's parent: at module level they are other
    // statements, and the model notes that as a read of the whole file.
    let parent = model.parent(statement)?;
    let mut cursor = parent.walk();
    let mut release = None;
    let mut between = Vec::new();
    for sibling in parent.named_children(&mut cursor).skip_while(|s| s.id() != statement.id()).skip(1) {
        if is_release(model, sibling) && !deletes_only_what_runs_between(model, sibling, &between) {
            release = Some(sibling);
        }
        between.push(sibling);
        if is_empty_cache_statement(model, sibling) {
            // A later `empty_cache()` already follows the releases before it.
            return None;
        }
    }
    release
}

fn is_release(model: &Model<'_>, statement: Node<'_>) -> bool {
    match statement.kind() {
        "delete_statement" => true,
        "expression_statement" => statement
            .named_child(0)
            .filter(|c| c.kind() == "call")
            .is_some_and(|c| model.call_resolves_to(c, &["gc.collect"])),
        _ => false,
    }
}

/// A `del` of names that the statements between the call and it still read: those tensors were
/// in use when the cache was emptied, so it could not have waited for them (OLMo empties the
/// cache after a `gc.collect()`, then loads the optimizer state it deletes at the end).
fn deletes_only_what_runs_between(model: &Model<'_>, release: Node<'_>, between: &[Node<'_>]) -> bool {
    if release.kind() != "delete_statement" {
        return false;
    }
    let Some(targets) = release.named_child(0) else { return false };
    let mut cursor = targets.walk();
    let targets: Vec<Node<'_>> = match targets.kind() {
        "expression_list" => targets.named_children(&mut cursor).collect(),
        _ => vec![targets],
    };
    targets.iter().all(|target| {
        target.kind() == "identifier"
            && between.iter().any(|statement| mentions(*statement, model.text, model.node_text(*target)))
    })
}

fn is_empty_cache_statement(model: &Model<'_>, statement: Node<'_>) -> bool {
    statement.kind() == "expression_statement"
        && statement.named_child(0).is_some_and(|c| c.kind() == "call" && model.call_resolves_to(c, names::EMPTY_CACHE))
}

fn move_after<'a>(model: &Model<'a>, statement: Node<'a>, anchor: Node<'a>) -> Option<Fix> {
    edits::own_lines(model.text, anchor)?;
    let (removal, line) = edits::take_statement(model, statement)?;
    let line = line.as_str();
    let indent = indentation_at(model.text, statement.start_byte());
    let insertion = edits::insert_line_after(model.text, anchor, indent, line);
    debug_assert!(ast::precedes(statement, anchor));
    Some(Fix::safe("Move `empty_cache()` after the memory is released", vec![removal, insertion]))
}
