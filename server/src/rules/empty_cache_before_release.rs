//! CUL202 empty-cache-before-release.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::Fix;
use crate::grammar_ids::FieldChild;
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
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# empty-cache-before-release (CUL202)

## What it does
Flags `torch.cuda.empty_cache()` that comes, in the same block, before the `del` statements or the
`gc.collect()` call that would free the tensors. A `del` of names that the statements in between
still use does not count: those tensors were in use when the cache was emptied.

Not a finding when the memory was already released just before the call: a `gc.collect()`, or a
module moved to the CPU (`model.to("cpu")` with the result unused), runs earlier in the function,
or in a loop at the end of the previous pass, with nothing in between but `print`,
`gc.collect()` and `torch.cuda.*` calls. The call then hands back what that release freed, and a
`gc.collect()` after it is only a final sweep. This covers cleanup loops such as
`for _ in range(3): torch.cuda.empty_cache(); gc.collect()`, where every pass after the first
follows the previous pass's collection. A `del` after the call is still flagged, whatever ran
before: the tensors it frees were alive when the cache was emptied. A `del` before the call does
not count as the release: the collection after it may be what frees the model's reference cycles.
Nor when an `empty_cache()` follows the release in the same block, on its own or in the body of a
loop.

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
    // After a collection with nothing in between, a `gc.collect()` that follows the call is a
    // final sweep: only a `del` after it still frees what the call came too early for.
    let collections_count = !released_just_before(model, call);
    let Some(last_release) = last_release_after(model, statement, collections_count) else { return };
    if last_release.kind() != "delete_statement" && ends_the_process(model, last_release) {
        return;
    }
    let fix = move_after(model, statement, last_release);
    let diagnostic = checker.report_node(
        call,
        "`torch.cuda.empty_cache()` runs before the tensors are released, so it frees nothing of theirs",
    );
    diagnostic.with_related(crate::text::TextRange::of(last_release), "the memory is released here");
    diagnostic.with_fact(format!("release: {}, after the `empty_cache()`", model.quote(last_release)));
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// The last later sibling statement that releases memory: `del ...` or `gc.collect()` (when
/// `collections_count`).
fn last_release_after<'a>(model: &Model<'a>, statement: Node<'a>, collections_count: bool) -> Option<Node<'a>> {
    // The siblings are found through the model's parent: at module level they are other
    // statements, and the model notes that as a read of the whole file.
    let parent = model.parent(statement)?;
    let mut cursor = parent.walk();
    let mut release = None;
    let mut between = Vec::new();
    for sibling in parent.named_children(&mut cursor).skip_while(|s| s.id() != statement.id()).skip(1) {
        if is_release(model, sibling, collections_count) && !deletes_only_what_runs_between(model, sibling, &between) {
            release = Some(sibling);
        }
        between.push(sibling);
        if empties_the_cache(model, sibling) {
            // A later `empty_cache()` already follows the releases before it.
            return None;
        }
    }
    release
}

/// The release, a final `gc.collect()`, is the last thing the process does: at module level (or in the script's
/// `if __name__ == "__main__":` block, the module's last statement), followed by nothing but
/// printing or logging. The process exits there and the driver frees everything; the order of
/// `empty_cache()` and the release has no effect.
fn ends_the_process<'a>(model: &Model<'a>, release: Node<'a>) -> bool {
    let Some(parent) = model.parent(release) else { return false };
    let at_the_end = match parent.kind() {
        "module" => true,
        "block" => {
            let guard = parent.parent().filter(|g| g.kind() == "if_statement");
            guard.is_some_and(|g| {
                g.parent().is_some_and(|m| m.kind() == "module")
                    && g.field("condition").is_some_and(|c| model.node_text(c).contains("__name__"))
                    && g.next_named_sibling().is_none_or(|n| n.kind() == "comment")
            })
        }
        _ => false,
    };
    let mut later = std::iter::successors(release.next_named_sibling(), |n| n.next_named_sibling());
    at_the_end
        && later.all(|statement| {
            statement.kind() == "comment"
                || statement.kind() == "expression_statement"
                    && statement.named_child(0).filter(|c| c.kind() == "call").is_some_and(|call| {
                        let callee = ast::callee(call).map_or("", |c| model.node_text(c));
                        callee == "print" || callee.starts_with("logger.") || callee.starts_with("logging.")
                    })
        })
}

fn is_release(model: &Model<'_>, statement: Node<'_>, collections_count: bool) -> bool {
    match statement.kind() {
        "delete_statement" => true,
        "expression_statement" => {
            collections_count && statement.named_child(0).is_some_and(|c| c.kind() == "call" && is_collection(model, c))
        }
        _ => false,
    }
}

fn is_collection(model: &Model<'_>, call: Node<'_>) -> bool {
    model.call_resolves_to(call, &["gc.collect"])
}

/// Whether the memory was released just before the call, so that the call hands it back: a
/// `gc.collect()` or a module moved to the CPU runs earlier in the function, or in a loop at the
/// end of the previous pass (`for _ in range(3): empty_cache(); gc.collect()`), and nothing runs
/// between them that could drop a reference or make garbage: no `del`, no call but `print`,
/// `gc.collect()` and `torch.cuda.*` queries.
fn released_just_before<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    let scope = model.scope_of(call);
    // The scope's calls once: the releases are among them, and so is what runs between.
    let calls: Vec<Node<'a>> = model.own_calls_within(scope).collect();
    let releases: Vec<Node<'a>> =
        calls.iter().copied().filter(|c| is_collection(model, *c) || moves_a_module_to_cpu(model, *c)).collect();
    let nothing_runs_between = |between: &dyn Fn(usize) -> bool| nothing_runs_between(model, scope, &calls, between);
    let earlier = releases.iter().rev().find(|r| ast::precedes(**r, call));
    if earlier.is_some_and(|r| nothing_runs_between(&|at| (r.end_byte()..call.start_byte()).contains(&at))) {
        return true;
    }
    let Some(body) = model.loop_around_call(call).and_then(ast::body) else { return false };
    let previous_pass = releases.iter().rev().find(|r| ast::contains(body, **r) && ast::precedes(call, **r));
    // From the release round to the call: the rest of the body, then its start.
    previous_pass.is_some_and(|r| {
        let this_pass = call.start_byte()..r.end_byte();
        nothing_runs_between(&|at| (body.start_byte()..body.end_byte()).contains(&at) && !this_pass.contains(&at))
    })
}

/// `model.to("cpu")` or `model.cpu()` with the result unused, which only a module's in-place move
/// makes sense of: its CUDA parameters are freed there.
fn moves_a_module_to_cpu<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    let moves = match model.callee_name(call) {
        Some("cpu") => ast::positional_args(call).is_empty(),
        Some("to") => {
            ast::positional_args(call).first().and_then(|a| ast::string_value(*a, model.text)).as_deref() == Some("cpu")
        }
        _ => false,
    };
    moves && ast::receiver(call).is_some() && model.parent(call).is_some_and(|p| p.kind() == "expression_statement")
}

/// No `del` in `scope`, and no call among `calls` (the scope's own) other than `print`,
/// `gc.collect()` or `torch.cuda.*`, starts at a byte that is `between`.
fn nothing_runs_between<'a>(
    model: &Model<'a>,
    scope: Node<'a>,
    calls: &[Node<'a>],
    between: &dyn Fn(usize) -> bool,
) -> bool {
    let between = |node: Node<'_>| between(node.start_byte());
    let harmless = |call: Node<'_>| {
        is_collection(model, call)
            || model.call_qualified_name(call).is_some_and(|q| q.starts_with("torch.cuda."))
            || ast::callee(call).is_some_and(|f| f.kind() == "identifier" && model.node_text(f) == "print")
    };
    calls.iter().copied().filter(|c| between(*c)).all(harmless)
        && !ast::any_in_scope(scope, |n| n.kind() == "delete_statement" && between(n))
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

/// An `empty_cache()` statement, or a loop whose body runs one (`for _ in range(3):
/// empty_cache(); gc.collect()`).
fn empties_the_cache(model: &Model<'_>, statement: Node<'_>) -> bool {
    if !ast::is_loop(statement) {
        return is_empty_cache_statement(model, statement);
    }
    let Some(body) = ast::body(statement) else { return false };
    let mut cursor = body.walk();
    body.named_children(&mut cursor).any(|s| is_empty_cache_statement(model, s))
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
