//! CUL402 eval-without-no-grad.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::prefilter::{self, Enclosing};
use crate::semantic::{CallTarget, Model, ast, is_eval_function_name};
use crate::text::{TextRange, indentation_at, line_ending, line_start};

pub const RULE: Rule = Rule {
    code: "CUL402",
    name: "eval-without-no-grad",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/eval_without_no_grad.scm"),
    prefilter: Prefilter {
        all_of: &[&[
            "eval", "Eval", "EVAL", "valid", "Valid", "VALID", "test", "Test", "TEST", "predict", "Predict", "PREDICT",
            "infer", "Infer", "INFER",
        ]],
        scan: Some(could_have_an_eval_loop),
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-genuine"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# eval-without-no-grad (CUL402)

## What it does
Flags an eval loop that runs a model with autograd on. An eval loop is a loop with no
`.backward()` and no optimizer step that calls a model, in a function named like
`evaluate`/`validate`/`test*`/`predict*`/`infer*`, or after `model.eval()` in the same function.
Calls that build or fetch a model (`Net(config)`, `model_class(config)`, `get_model()`) and
calls of the file's own functions whose bodies run no model (`freeze_bn_for_model(module)`) do
not count as running it. Nor do calls of a name bound only to an ultralytics model (`YOLO(...)`,
which predicts under `inference_mode`), a transformers `pipeline(...)` (which runs under
`inference_mode` too) or a Python module (`importlib.import_module(...)`). A pytest test
(`TestX.test_y`, `test_y` under a `@pytest...` decorator, or a top-level `test_y` in a
`test_*.py` or `*_test.py` file) is not named for evaluating, and files that do not use PyTorch
are not checked. It is flagged when no `torch.no_grad()`, `torch.inference_mode()` or
`torch.set_grad_enabled(False)` covers it: not as a `with` around the loop or around the model
calls, not as a decorator of the function, and not around every call site of the function. A
project's own wrapper named for one of them (`@smart_inference_mode()`, `with maybe_no_grad():`)
counts as one.

Not flagged: loops that need gradients (`torch.autograd.grad`, `requires_grad_()`,
`torch.enable_grad()`), loops whose kept outputs the function backpropagates later
(`outputs.append(model(x))`, then `outputs[i].backward()`), Lightning's
`validation_step`/`test_step`/`predict_step` (Lightning disables gradients there), loops that only
call `model.generate(...)` (which disables them itself), and files that freeze parameters with
`requires_grad_(False)`.

## Why is this bad?
`model.eval()` changes dropout and batch-norm behaviour; it does not turn autograd off. With
autograd on, every layer saves its inputs for a backward pass that never comes, so evaluation
holds the activation memory of training, and keeping the outputs (for metrics) keeps those graphs
too. Evaluation runs out of memory at batch sizes that inference alone would handle easily.

## Example
```python
def evaluate(model, loader):
    model.eval()
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum()
```

## Use instead
```python
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum()
```

## Fix safety
The fix adds `@torch.no_grad()` to a dedicated eval function (one named like an eval function
that runs no backward or optimizer step), or else wraps the loop in `with torch.no_grad():`. It
is unsafe: code in the loop that needs gradients through a path the checker does not see would
stop working. The loop is not wrapped when re-indenting would change a multi-line string, or
when it yields.

## References
- Knowledge entry: `cuda/oom-genuine` (`culint explain`)
- PyTorch: `torch.no_grad` — https://pytorch.org/docs/stable/generated/torch.no_grad.html
- PyTorch: locally disabling gradient computation — https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
"#;

/// A file must use PyTorch, directly or through a framework, for its loops to run models.
const TORCH_MODULES: &[&str] = &[
    "torch",
    "lightning",
    "pytorch_lightning",
    "transformers",
    "accelerate",
    "timm",
    "diffusers",
    "peft",
    "torchvision",
];

/// Verbs that name calls which handle a model without running it.
const NOT_RUNNING_PREFIXES: &[&str] = &[
    "get", "set", "add", "load", "save", "build", "create", "make", "init", "register", "print", "log", "update",
    "check", "is_", "has_", "to_", "num", "count", "del", "remove", "find", "list", "iter", "walk", "import", "reset",
    "compute", "prepare", "enable", "disable", "apply", "wrap", "convert",
];

/// Lightning hooks that Lightning already runs under `torch.no_grad()`.
const NO_GRAD_HOOKS: &[&str] = &["validation_step", "test_step", "predict_step"];

/// An eval loop is a loop in a function named like an eval function, or a loop after a
/// `<model>.eval()` call in the same function.
/// The loop must call a model, so the text from the loop's function (or from the `.eval()` call
/// to the end of its function) must hold a call that could be one.
fn could_have_an_eval_loop(text: &str) -> bool {
    let could_hold_eval_loop = |span: std::ops::Range<usize>| {
        prefilter::has_loop_line(text, span.clone()) && prefilter::could_call_a_model(&text[span])
    };
    let functions: Vec<prefilter::DefinedFunction<'_>> = prefilter::defined_functions(text).collect();
    let loop_after_eval_call = memchr::memmem::find_iter(text.as_bytes(), b"eval")
        .filter(|at| {
            text[..*at].trim_end_matches([' ', '\t']).ends_with('.') && has_no_positional_args(&text[at + 4..])
        })
        .any(|at| {
            let line_start = line_start(text, at);
            // The loop must be in the call's own function; the span of a function found by the
            // line scan covers its body, or more.
            let end = match prefilter::enclosing_function(text, line_start) {
                Enclosing::Function(name) => functions
                    .iter()
                    .filter(|f| f.name == name)
                    .map(|f| f.span(text))
                    .filter(|span| span.contains(&at))
                    .map(|span| span.end)
                    .max()
                    .unwrap_or(text.len()),
                Enclosing::NoFunction | Enclosing::Unknown => text.len(),
            };
            could_hold_eval_loop(line_start..end)
        });
    loop_after_eval_call
        || functions.iter().any(|f| is_eval_function_name(f.name) && could_hold_eval_loop(f.span(text)))
}

/// What follows `eval` could be an argument list without positional arguments: `()`, keywords
/// only, a splat, or something the scan does not read (a comment, a line continuation).
fn has_no_positional_args(after_name: &str) -> bool {
    let Some(arguments) = after_name.trim_start_matches([' ', '\t']).strip_prefix('(') else { return false };
    let first = arguments.trim_start();
    if first.starts_with([')', '*', '#', '\\']) {
        return true;
    }
    let name_end = first.find(|c: char| !prefilter::is_name_char(c)).unwrap_or(first.len());
    let after = first[name_end..].trim_start();
    name_end > 0 && after.starts_with('=') && !after.starts_with("==")
}

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let node = candidate.node;
    if !model.is_eval_kind(node) || inside_eval_loop(model, node) {
        return;
    }
    let function = model.enclosing_function(node);
    let in_hook = function.is_some_and(|f| {
        model.method_class(f).is_some() && ast::function_name(f, model.text).is_some_and(|n| NO_GRAD_HOOKS.contains(&n))
    });
    // Whether the file freezes parameters is one answer for every loop of it. Autograd off
    // around the loop is off for every call in it, and is a question asked once.
    if in_hook
        || model.grad_disabled(node)
        || model.file_fact(freezes_parameters)
        || needs_gradients(model, node)
        || grad_switched_off_before(model, node)
    {
        return;
    }
    if !TORCH_MODULES.iter().any(|m| model.imports.imports_module(m)) {
        return;
    }
    let model_calls: Vec<Node<'a>> =
        model.own_calls_within(node).filter(|c| model.calls_a_model(*c) && runs_the_model(model, *c)).collect();
    if model_calls.is_empty() || model_calls.iter().all(|c| model.call_runs_without_grad(*c)) {
        return;
    }
    let fix = function
        .filter(|f| is_dedicated_eval_function(model, *f))
        .map_or_else(|| wrap_in_no_grad(model, node), |f| Some(decorate_with_no_grad(model, f)));
    let header = TextRange::new(node.start_byte(), node.field("body").map_or(node.end_byte(), |b| b.start_byte()));
    let header_end = model.text[header.start..header.end].trim_end().len() + header.start;
    let diagnostic = checker.report(
        TextRange::new(header.start, header_end),
        "This eval loop runs the model with autograd on: activations are kept for a backward that never comes",
    );
    diagnostic.with_fact(format!(
        "model call: {}, with no `no_grad`, `inference_mode` or backward around it",
        model.quote(model_calls[0])
    ));
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// A call that runs a model rather than asks it something: not `model.generate(...)` (which
/// disables gradients itself), not `get_model()`, `load_model(...)` or `self.add_module(...)`.
/// A function of this file runs the model when its own body does, whatever its name says:
/// `predict_with_model(model, x)` returning `model(x)` does, `turn_on_eval_for_model(module)`,
/// which only configures one, does not.
fn runs_the_model<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    match model.resolve_call(call) {
        CallTarget::Local(helper) => model.own_calls_within(helper).any(|inner| {
            model.calls_a_model(inner)
                && !matches!(model.resolve_call(inner), CallTarget::Local(_))
                && named_as_running(model, inner)
        }),
        _ => named_as_running(model, call),
    }
}

/// What the callee's name says: a model's call, not a constructor or a question asked of it.
fn named_as_running(model: &Model<'_>, call: Node<'_>) -> bool {
    let raw = model.callee_name(call).unwrap_or_default();
    let name = raw.trim_start_matches('_').to_ascii_lowercase();
    // `Net(config)` and `model_class(config)` build a model; `exported.module()` returns one.
    let constructs = raw.starts_with(|c: char| c.is_ascii_uppercase())
        || name.ends_with("class")
        || name.ends_with("_cls")
        || (name == "module" && ast::arguments(call).is_some_and(|a| a.named_child_count() == 0));
    name != "generate" && !constructs && !NOT_RUNNING_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Report the outermost eval loop only: its fix covers the inner ones.
fn inside_eval_loop<'a>(model: &Model<'a>, node: Node<'a>) -> bool {
    for n in model.ancestors(node) {
        if ast::is_function_boundary(n) {
            return false;
        }
        if ast::is_loop(n) && model.is_eval_kind(n) {
            return true;
        }
    }
    false
}

/// The loop computes gradients on purpose: saliency maps, adversarial examples, gradient norms.
fn needs_gradients(model: &Model<'_>, node: Node<'_>) -> bool {
    model.calls_within(node).any(|call| {
        matches!(model.callee_name(call), Some("requires_grad_" | "retain_grad" | "enable_grad"))
            || model.call_resolves_to(call, &["torch.autograd.grad", "torch.enable_grad", "torch.func.grad"])
            || model.call_resolves_to(call, crate::semantic::names::SET_GRAD_ENABLED) && !model.is_grad_disabling(call)
    })
}

/// `torch.set_grad_enabled(False)` as a statement earlier in the same function, or earlier at
/// module level.
fn grad_switched_off_before<'a>(model: &Model<'a>, node: Node<'a>) -> bool {
    let function = model.enclosing_function(node).map(|f| f.id());
    model.calls_to(crate::semantic::names::SET_GRAD_ENABLED).any(|call| {
        let scope = model.enclosing_function(call).map(|f| f.id());
        model.is_grad_disabling(call)
            && model.parent(call).is_some_and(|p| p.kind() == "expression_statement")
            && ast::precedes(call, node)
            && (scope == function || scope.is_none())
    })
}

/// `model.requires_grad_(False)` or `p.requires_grad = False` anywhere in the file: the
/// parameters may be frozen, and then autograd records nothing.
fn freezes_parameters(model: &Model<'_>) -> bool {
    model.calls_named("requires_grad_").iter().any(|c| {
        ast::positional_args(*c).first().is_some_and(|a| ast::is_literal_off(*a, model.text))
            || ast::keyword_arg(*c, "requires_grad", model.text).is_some_and(|a| ast::is_literal_off(a, model.text))
    }) || model.assignment_targets().iter().any(|(target, assignments)| {
        target.ends_with(".requires_grad")
            && assignments.iter().any(|a| a.field("right").is_some_and(|r| r.kind() == "false"))
    })
}

/// A function named like an eval function that trains nothing, so decorating all of it is right.
fn is_dedicated_eval_function(model: &Model<'_>, function: Node<'_>) -> bool {
    let is_async = function.child(0).is_some_and(|c| c.kind() == "async");
    let named_for_eval = ast::function_name(function, model.text).is_some_and(is_eval_function_name);
    let trains = model
        .calls_within(function)
        .any(|c| matches!(model.callee_name(c), Some("backward" | "step" | "zero_grad" | "manual_backward")));
    named_for_eval && !is_async && !trains
}

fn decorate_with_no_grad(model: &Model<'_>, function: Node<'_>) -> Fix {
    let (torch, import) = edits::module_reference(model, "torch");
    let name = ast::function_name(function, model.text).unwrap_or("the function");
    let indent = indentation_at(model.text, function.start_byte());
    let line_start = function.start_byte() - indent.len();
    let mut fix_edits =
        vec![Edit::insertion(line_start, format!("{indent}@{torch}.no_grad(){}", line_ending(model.text)))];
    fix_edits.extend(import);
    Fix::unsafe_edits(format!("Decorate `{name}` with `@{torch}.no_grad()`"), fix_edits)
}

fn wrap_in_no_grad(model: &Model<'_>, node: Node<'_>) -> Option<Fix> {
    let lines = edits::own_lines(model.text, node)?;
    if edits::has_multiline_string(model, lines) || yields(node) {
        return None;
    }
    let (torch, import) = edits::module_reference(model, "torch");
    let indent = indentation_at(model.text, node.start_byte());
    let unit = edits::indent_unit(model.text, node);
    let original = &model.text[lines.start..lines.end];
    let eol = line_ending(model.text);
    let mut body = edits::indent_lines(original, &unit);
    if !body.ends_with('\n') {
        body.push_str(eol);
    }
    let replacement = format!("{indent}with {torch}.no_grad():{eol}{body}");
    let replacement =
        if original.ends_with('\n') { replacement } else { replacement.trim_end_matches(['\r', '\n']).to_owned() };
    let mut fix_edits = vec![Edit::replacement(lines, replacement)];
    fix_edits.extend(import);
    Some(Fix::unsafe_edits(format!("Wrap the eval loop in `with {torch}.no_grad():`"), fix_edits))
}

/// A `yield` in the loop: a `with` around it would leak no-grad mode to the generator's caller.
fn yields(node: Node<'_>) -> bool {
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if n.kind() == "yield" {
            return true;
        }
        if n.id() == node.id() || !ast::is_function_boundary(n) {
            stack.extend(n.named_children(&mut cursor).collect::<Vec<_>>());
        }
    }
    false
}

#[cfg(test)]
mod prefilter_tests {
    use super::could_have_an_eval_loop;

    #[test]
    fn an_eval_call_admits_loops_of_its_own_function_only() {
        let admitted = [
            "def run(model, data):\n    model.eval()\n    for x in data:\n        model(x)\n",
            "model.eval()\nfor x in data:\n    model(x)\n",
            "def run(model, data):\n    model.eval(  # why\n    )\n    for x in data:\n        model(x)\n",
            "def run(model, data):\n    model.eval(mode=True)\n    for x in data:\n        model(x)\n",
            // A nested function of the same name ends before the loop; the outer one does not.
            "def run(model, data):\n    def run():\n        pass\n    model.eval()\n    def other():\n        pass\n    for x in data:\n        model(x)\n",
            "def evaluate(model, data):\n    for x in data:\n        model(x)\n",
        ];
        for text in admitted {
            assert!(could_have_an_eval_loop(text), "{text}");
        }
        let turned_away = [
            "def setup(model):\n    model.eval()\n\ndef train(model, data):\n    for x in data:\n        model(x)\n",
            "def run(df, data):\n    df.eval('a + b')\n    for x in data:\n        model(x)\n",
            "def run(model, data):\n    for x in data:\n        model(x)\n    model.eval()\n",
        ];
        for text in turned_away {
            assert!(!could_have_an_eval_loop(text), "{text}");
        }
    }
}
