//! CUL601 cublas-handle-leak.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast};
use crate::text::TextRange;

pub const RULE: Rule = Rule {
    code: "CUL601",
    name: "cublas-handle-leak",
    severity: Severity::Warning,
    fix: FixAvailability::None,
    query: include_str!("../../../queries/python/cublas_handle_leak.scm"),
    prefilter: Prefilter { all_of: &[&["cublas"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cublas/not-initialized"),
    deprecated: false,
    quiet_in_test_code: false,
    needs_hardware: false,
};

const DOC: &str = r#"# cublas-handle-leak (CUL601)

## What it does
Flags a cuBLAS or cuBLASLt handle that is created and not destroyed on every path: cupy's
`cuda.cublas.create()`, nvmath's `bindings.cublas.create()`, scikit-cuda's `cublasCreate()`, or
`cublasCreate_v2` / `cublasLtCreate` called through ctypes, with no matching `destroy` /
`cublasDestroy_v2` / `cublasLtDestroy` in the same function (or class, for a handle kept on
`self`), or with a `return` or `raise` that skips the destroy.

## Why is this bad?
Each handle holds device memory and a slot in the driver's per-context resources. A function that
creates a handle on every call and never frees it leaks them until a later `cublasCreate` fails
with `CUBLAS_STATUS_NOT_INITIALIZED`, `CUBLAS_STATUS_ALLOC_FAILED` or
`CUBLAS_STATUS_INTERNAL_ERROR`, far from the code at fault.

Not flagged: a handle destroyed in the same function (in a `finally` block or on the way out), one
kept on `self` and destroyed by another method of the class (`close`, `__del__`, `__exit__`), and a
handle handed on to someone else: returned, yielded, stored in a container or an attribute, or
passed to a function that is not a cuBLAS call. A single handle created at module level, outside
any loop, lives for the whole process and is not a leak.

## Example
```python
def gemm(a, b):
    handle = cublas.create()
    cublas.sgemm(handle, ...)
```

## Use instead
```python
def gemm(a, b):
    handle = cublas.create()
    try:
        cublas.sgemm(handle, ...)
    finally:
        cublas.destroy(handle)
```
Better still, create one handle per device and thread, and reuse it.

## Fix safety
There is no automatic fix: where the handle should live (per call, per object, per process) is a
design decision.

## References
- Knowledge entry: `cublas/not-initialized` (`culint explain`)
- cuBLAS: `cublasCreate()` and `cublasDestroy()` — https://docs.nvidia.com/cuda/cublas/#cublascreate
- cuBLASLt: `cublasLtCreate()` — https://docs.nvidia.com/cuda/cublas/#cublasltcreate
"#;

/// Library functions that return a new handle.
const RETURNING_CREATORS: &[&str] = &[
    "cupy.cuda.cublas.create",
    "cupy_backends.cuda.libs.cublas.create",
    "nvmath.bindings.cublas.create",
    "nvmath.bindings.cublasLt.create",
    "skcuda.cublas.cublasCreate",
];

/// C entry points that write a new handle through their first argument (called via ctypes).
const OUT_PARAMETER_CREATORS: &[&str] = &["cublasCreate_v2", "cublasCreate", "cublasLtCreate"];

const DESTROYERS: &[&str] = &["destroy", "cublasDestroy", "cublasDestroy_v2", "cublasLtDestroy"];

/// ctypes helpers that take the address of a handle variable.
const ADDRESS_OF: &[&str] = &["byref", "pointer", "addressof"];

/// Methods that release what an object holds.
const RELEASING_METHODS: &[&str] =
    &["__del__", "__exit__", "close", "release", "destroy", "free", "cleanup", "shutdown"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    let Some(handle) = created_handle(model, call) else { return };
    let handle = match handle {
        Handle::Discarded => {
            checker.report_node(call, "This cuBLAS handle is created and thrown away, so it can never be destroyed");
            return;
        }
        Handle::Escapes => return,
        Handle::Named(handle) => handle,
    };
    let name = model.node_text(handle);
    if let Some(attribute) = name.strip_prefix("self.") {
        if !destroyed_by_class(model, call, name) {
            checker.report_node(
                call,
                format!("`self.{attribute}` holds a cuBLAS handle that no method of the class destroys"),
            );
        }
        return;
    }
    let scope = model.enclosing_function(call);
    let body = scope.and_then(|f| f.field("body")).unwrap_or_else(|| model.tree.root_node());
    let destroys = destroy_calls(model, body, name);
    if destroys.is_empty() {
        let once_per_process = scope.is_none() && !inside_loop(call);
        if once_per_process || escapes(model, body, handle, name) || declared_global(model, body, name) {
            return;
        }
        checker.report_node(call, format!("The cuBLAS handle `{name}` is never destroyed: each run leaks one handle"));
        return;
    }
    if destroys.iter().any(|d| in_finally(*d)) {
        return;
    }
    let first_destroy = destroys[0];
    if let Some(exit) = early_exit_between(body, call, first_destroy) {
        checker
            .report_node(call, format!("The cuBLAS handle `{name}` is not destroyed when the function leaves early"))
            .with_related(TextRange::of(exit), "this exit skips the destroy");
    }
}

enum Handle<'a> {
    /// The expression that holds the new handle (`handle`, `self.handle`).
    Named(Node<'a>),
    /// Returned or passed on at once: someone else owns it.
    Escapes,
    /// Created as a bare expression statement.
    Discarded,
}

fn created_handle<'a>(model: &Model<'a>, call: Node<'a>) -> Option<Handle<'a>> {
    if model.call_resolves_to(call, RETURNING_CREATORS) {
        let parent = call.parent()?;
        return Some(match parent.kind() {
            "assignment" => match parent.field("left")? {
                target if matches!(target.kind(), "identifier" | "attribute") => Handle::Named(target),
                _ => Handle::Escapes,
            },
            "expression_statement" => Handle::Discarded,
            _ => Handle::Escapes,
        });
    }
    let name = ast::callee_name(call, model.text)?;
    let via_ctypes = OUT_PARAMETER_CREATORS.contains(&name)
        && ast::receiver(call).is_some_and(|r| model.qualified_name(r).is_none())
        && model.imports.imports_module("ctypes");
    if !via_ctypes {
        return None;
    }
    let first = ast::positional_args(call).first().copied()?;
    let target = match first.kind() {
        "call" if ast::callee_name(first, model.text).is_some_and(|n| ADDRESS_OF.contains(&n)) => {
            ast::positional_args(first).first().copied()?
        }
        _ => first,
    };
    matches!(target.kind(), "identifier" | "attribute").then_some(Handle::Named(target))
}

/// Destroy calls whose first argument is the handle (or its `.value`), in source order.
fn destroy_calls<'a>(model: &Model<'a>, scope: Node<'a>, name: &str) -> Vec<Node<'a>> {
    model
        .calls_within(scope)
        .filter(|call| ast::callee_name(*call, model.text).is_some_and(|n| DESTROYERS.contains(&n)))
        .filter(|call| {
            ast::positional_args(*call).first().is_some_and(|arg| {
                let text = model.node_text(*arg);
                text == name || text.strip_suffix(".value") == Some(name)
            })
        })
        .collect()
}

fn destroyed_by_class<'a>(model: &Model<'a>, call: Node<'a>, name: &str) -> bool {
    let Some(class) = model.enclosing_function(call).and_then(|f| model.method_class(f)) else { return true };
    if !destroy_calls(model, class, name).is_empty() {
        return true;
    }
    // A releasing method that hands the handle to a helper (`self._free(self.handle)`) counts too.
    model.all_functions().iter().any(|f| {
        model.method_class(*f).is_some_and(|c| c.id() == class.id())
            && ast::function_name(*f, model.text).is_some_and(|n| RELEASING_METHODS.contains(&n))
            && model.node_text(*f).contains(name)
    })
}

/// The handle leaves the scope: returned, yielded, stored elsewhere, or passed to a call that is
/// not a cuBLAS function.
fn escapes(model: &Model<'_>, scope: Node<'_>, binding: Node<'_>, name: &str) -> bool {
    let mut stack = vec![scope];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier"
            && node.id() != binding.id()
            && model.node_text(node) == name
            && use_escapes(model, node)
        {
            return true;
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

fn use_escapes(model: &Model<'_>, identifier: Node<'_>) -> bool {
    let Some(parent) = identifier.parent() else { return false };
    match parent.kind() {
        "return_statement" | "yield" | "list" | "tuple" | "dictionary" | "pair" | "set" | "expression_list" => true,
        "assignment" => parent.field("right") == Some(identifier),
        "argument_list" | "keyword_argument" => {
            let call = if parent.kind() == "argument_list" {
                parent.parent()
            } else {
                parent.parent().and_then(|a| a.parent())
            };
            call.is_some_and(|c| !is_cublas_call(model, c))
        }
        _ => false,
    }
}

/// A call into cuBLAS itself (`cublas.sgemm(handle, ...)`, `lib.cublasSgemm_v2(handle, ...)`),
/// which uses the handle without taking it over.
fn is_cublas_call(model: &Model<'_>, call: Node<'_>) -> bool {
    let name = ast::callee_name(call, model.text).unwrap_or_default();
    if name.starts_with("cublas") || ADDRESS_OF.contains(&name) {
        return true;
    }
    model.call_qualified_name(call).is_some_and(|q| {
        let module = q.rsplit_once('.').map_or("", |(m, _)| m);
        module.ends_with("cublas") || module.ends_with("cublasLt")
    })
}

fn declared_global(model: &Model<'_>, scope: Node<'_>, name: &str) -> bool {
    let mut cursor = scope.walk();
    scope.named_children(&mut cursor).any(|statement| {
        statement.kind() == "global_statement" && {
            let mut names = statement.walk();
            statement.named_children(&mut names).any(|n| model.node_text(n) == name)
        }
    })
}

fn inside_loop(node: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(n) = current {
        if ast::is_loop(n) {
            return true;
        }
        if ast::is_function_boundary(n) {
            return false;
        }
        current = n.parent();
    }
    false
}

fn in_finally(node: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == "finally_clause" {
            return true;
        }
        if ast::is_function_boundary(n) {
            return false;
        }
        current = n.parent();
    }
    false
}

/// A `return` or `raise` after the creation and before the destroy, in the same function.
fn early_exit_between<'a>(scope: Node<'a>, create: Node<'a>, destroy: Node<'a>) -> Option<Node<'a>> {
    let mut stack = vec![scope];
    let mut exits = Vec::new();
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "return_statement" | "raise_statement")
            && ast::precedes(create, node)
            && ast::precedes(node, destroy)
        {
            exits.push(node);
        }
        if node.id() == scope.id() || !ast::is_function_boundary(node) {
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
    }
    exits.into_iter().min_by_key(|n| n.start_byte())
}
