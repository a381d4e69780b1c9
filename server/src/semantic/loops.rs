//! Loops classified as step, epoch or eval loops (see the preamble of RULES.md).

use tree_sitter::Node;

use super::{Model, ast, names};
use crate::grammar_ids::FieldChild;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// The innermost loop whose own body calls `.backward(...)`: it runs once per batch.
    Step,
    /// A loop that contains a step loop, or calls a function that holds one.
    Epoch,
    /// A loop without backward or an optimizer step that calls a model, in an eval-like
    /// function or after `model.eval()`.
    Eval,
    Other,
}

#[derive(Clone, Debug)]
pub struct LoopInfo<'a> {
    pub node: Node<'a>,
    pub kind: LoopKind,
    /// The `.backward()` calls of the loop's own body (step loops only), in order.
    pub backward_calls: Vec<Node<'a>>,
}

/// Names of functions that evaluate rather than train.
pub fn is_eval_function_name(name: &str) -> bool {
    let name = name.trim_start_matches('_').to_ascii_lowercase();
    ["eval", "valid", "test", "predict", "infer"].iter().any(|p| name.starts_with(p))
        || name.ends_with("_eval")
        || name.ends_with("_evaluate")
        || name.contains("evaluat")
        || name.contains("validat")
        || name.contains("inference")
}

impl<'a> Model<'a> {
    pub fn loops(&self) -> &[LoopInfo<'a>] {
        self.loops.get_or_init(|| classify(self))
    }

    pub fn loop_info(&self, node: Node<'_>) -> Option<&LoopInfo<'a>> {
        // The classified loops follow `loop_nodes` one for one.
        let i = self.loop_index(node)?;
        Some(&self.loops()[i])
    }

    /// Whether `node` is an eval loop. Only a loop that passes [`is_eval_loop`], which reads
    /// the loop and its function alone, can be one; settling that first spares most files the
    /// classification of every loop, which resolves calls into the project's other modules.
    /// Once the loops are classified (another rule asked), their kinds answer at once.
    pub fn is_eval_kind(&self, node: Node<'_>) -> bool {
        let Some(i) = self.loop_index(node) else { return false };
        match self.loops.get() {
            Some(loops) => loops[i].kind == LoopKind::Eval,
            None => is_eval_loop(self, self.walked.loop_nodes[i]) && self.loops()[i].kind == LoopKind::Eval,
        }
    }

    /// Whether any loop of the file is a step loop.
    pub fn has_a_step_loop(&self) -> bool {
        self.loops().iter().any(|l| l.kind == LoopKind::Step)
    }

    pub fn step_loops(&self) -> impl Iterator<Item = &LoopInfo<'a>> {
        self.loops().iter().filter(|l| l.kind == LoopKind::Step)
    }

    /// The innermost step loop around `node`, not crossing a function boundary.
    pub fn enclosing_step_loop(&self, node: Node<'a>) -> Option<&LoopInfo<'a>> {
        // Calls, the usual question, know their loops from the model's walk.
        if node.kind() == "call"
            && let Some(call) = self.call_node(node)
        {
            return self
                .loops_around_call(call)
                .find_map(|l| self.loop_info(l).filter(|info| info.kind == LoopKind::Step));
        }
        self.ancestors(node)
            .take_while(|n| !ast::is_function_boundary(*n))
            .filter(|n| ast::is_loop(*n))
            .find_map(|n| self.loop_info(n).filter(|l| l.kind == LoopKind::Step))
    }

    /// Lightning's `training_step` method around `node`: its body counts as a step loop body.
    pub fn enclosing_training_step(&self, node: Node<'a>) -> Option<Node<'a>> {
        let function = self.enclosing_function(node)?;
        let name = ast::function_name(function, self.text)?;
        (name == "training_step" && self.method_class(function).is_some()).then_some(function)
    }

    /// Whether `node` runs once per batch: inside a step loop or a Lightning `training_step`.
    pub fn in_step_body(&self, node: Node<'a>) -> bool {
        self.enclosing_step_loop(node).is_some() || self.enclosing_training_step(node).is_some()
    }

    /// The file trains: it has a step loop, a `Trainer(...).train()`, or a Lightning
    /// `training_step`.
    pub fn is_training_context(&self) -> bool {
        self.has_a_step_loop()
            || self.frameworks().trainer_train
            || self.frameworks().lightning_trainer
            || self.functions_named("training_step").iter().any(|f| self.method_class(*f).is_some())
    }

    /// Whether a call invokes a model: `model(x)`, `self.net(x)`, `model.generate(...)`.
    pub fn calls_a_model(&self, call: Node<'_>) -> bool {
        let Some(function) = ast::callee(call) else { return false };
        let target = match function.kind() {
            "attribute" => {
                let attribute = function.field("attribute").map(|a| self.node_text(a));
                if matches!(attribute, Some("generate" | "forward")) {
                    function.field("object").unwrap_or(function)
                } else {
                    function
                }
            }
            _ => function,
        };
        let name = match target.kind() {
            "identifier" => self.node_text(target),
            "attribute" => target.field("attribute").map_or("", |a| self.node_text(a)),
            _ => return false,
        };
        // `model.modules()` and friends walk the module tree; they do not run the model.
        if matches!(name, "modules" | "named_modules" | "add_module" | "register_module" | "get_submodule")
            || !names::is_model_name(name)
        {
            return false;
        }
        // A library callee is no model. The names are looked at first: resolving one through the
        // imports costs more, and most calls are no model by their name.
        let is_library = if target.id() == function.id() {
            self.call_qualified_name(call).is_some()
        } else {
            self.qualified_name(target).is_some()
        };
        !is_library && !self.bound_only_to_non_modules(target)
    }

    /// Every binding of `target` where the call reads it (but `None`) makes it something whose
    /// call records no autograd graph, or no module at all: an ultralytics model (`YOLO(...)`,
    /// whose call predicts under `inference_mode`), a transformers `pipeline(...)` (which runs
    /// its model under `inference_mode`), or a Python module (`importlib.import_module(...)`,
    /// or a class fetched from one with `getattr`). Where the call reads it: a `self.`
    /// attribute's assignments in the class, a name's in the innermost function around the call
    /// that binds it, else at module level; a parameter may be anything.
    fn bound_only_to_non_modules(&self, target: Node<'_>) -> bool {
        let name = self.node_text(target);
        // Nearly every model-named callee (a parameter `model`, `self.net` built from a class)
        // has no such binding anywhere in the file: that one lookup settles it, before the walks
        // up the tree that find where the call reads the name.
        let factory = |a: &Node<'_>| a.field("right").is_some_and(|v| v.kind() == "call" && self.makes_a_non_module(v));
        if !self.assignments_to(name).iter().any(factory) {
            return false;
        }
        let bindings: Vec<Node<'_>> = match target.kind() {
            "attribute" if name.starts_with("self.") => {
                match ast::enclosing_function(target).and_then(ast::method_class) {
                    Some(class) => self.assignments_to_within(name, class).collect(),
                    None => return false,
                }
            }
            "identifier" => {
                // The innermost function that binds the name, else the module.
                let functions = std::iter::successors(ast::enclosing_function(target), |f| ast::enclosing_function(*f));
                let mut bindings = None;
                for function in functions {
                    if ast::is_parameter(function, name, self.text) {
                        return false;
                    }
                    let local: Vec<Node<'_>> = self.assignments_to_within(name, function).collect();
                    if !local.is_empty() {
                        bindings = Some(local);
                        break;
                    }
                }
                bindings.unwrap_or_else(|| {
                    self.assignments_to(name)
                        .iter()
                        .copied()
                        .filter(|a| ast::enclosing_function(*a).is_none())
                        .collect()
                })
            }
            _ => return false,
        };
        let mut bound = false;
        for assignment in bindings {
            match assignment.field("right") {
                Some(value) if value.kind() == "none" => {}
                Some(value) if value.kind() == "call" && self.makes_a_non_module(value) => bound = true,
                _ => return false,
            }
        }
        bound
    }

    fn makes_a_non_module(&self, call: Node<'_>) -> bool {
        if let Some(qualified) = self.call_qualified_name(call) {
            return names::NON_MODULE_FACTORIES.contains(&&*qualified)
                || qualified
                    .strip_prefix("ultralytics.")
                    .and_then(|path| path.rsplit('.').next())
                    .is_some_and(|class| names::ULTRALYTICS_MODELS.contains(&class));
        }
        // `getattr(importlib.import_module(name), attribute)`
        ast::callee(call).is_some_and(|callee| self.node_text(callee) == "getattr")
            && ast::positional_args(call).first().is_some_and(|module| {
                module.kind() == "call" && self.call_resolves_to(*module, &["importlib.import_module"])
            })
    }
}

/// The loops and their kinds.
fn classify<'a>(model: &Model<'a>) -> Vec<LoopInfo<'a>> {
    let loops = &model.walked.loop_nodes[..];
    // Each `.backward()` call marks its innermost enclosing loop (within the same function). A
    // marked loop is a candidate; `backward[i]` holds the calls of `loops[i]`.
    let mut backward: Vec<Option<Vec<Node<'a>>>> = vec![None; loops.len()];
    for call in model.calls_named("backward") {
        if let Some(i) = model.loop_around_call(*call).and_then(|l| model.loop_index(l)) {
            backward[i].get_or_insert_with(Vec::new).push(*call);
        }
    }
    // A loop that calls a helper doing one training step (`loss = train_step(batch)`) is a step
    // loop too, with its backward inside the helper.
    for (i, loop_node) in loops.iter().copied().enumerate() {
        if backward[i].is_some() {
            continue;
        }
        let calls_step_helper = model.own_calls_within(loop_node).any(|call| {
            model.loop_around_call(call).is_some_and(|l| l.id() == loop_node.id())
                && may_reach_own_code(model, call)
                && match model.resolve_call(call) {
                    super::CallTarget::Local(f) => model.runs_one_step(f),
                    super::CallTarget::Project(summary) => summary.runs_one_step,
                    _ => false,
                }
        });
        if calls_step_helper {
            backward[i] = Some(Vec::new());
        }
    }
    // A candidate that contains another candidate is an epoch loop, never a step loop.
    let is_step: Vec<bool> = (0..loops.len())
        .map(|i| backward[i].is_some() && !model.loop_indices_within(loops[i]).any(|j| j != i && backward[j].is_some()))
        .collect();

    // Functions whose own body (not a nested function, class or lambda) holds a step loop, and
    // loops that hold one in the same scope, by walking out from each step loop.
    let mut step_functions: std::collections::HashSet<usize> = model
        .functions_named("training_step")
        .iter()
        .filter(|f| model.method_class(**f).is_some())
        .map(|f| f.id())
        .collect();
    let mut contains_step = vec![false; loops.len()];
    for (i, step_loop) in loops.iter().enumerate().filter(|(i, _)| is_step[*i]) {
        // The function, class or lambda around the loop: that of its first backward call, which
        // the walk noted (the loop around a call never lies beyond one), else found by a walk up.
        let noted = backward[i].as_ref().and_then(|calls| calls.first()).and_then(|call| model.call_index(*call));
        let scope = match noted {
            Some(call) => model.walked.call_scopes[call],
            None => model.ancestors(*step_loop).find(|n| ast::is_function_boundary(*n)),
        };
        if let Some(scope) = scope
            && crate::grammar_ids::FUNCTION.contains(scope)
        {
            step_functions.insert(scope.id());
        }
        let mut outer = model.walked.outer_loops[i];
        while let Some(j) = outer.and_then(|l| model.loop_index(l)) {
            contains_step[j] = true;
            outer = model.walked.outer_loops[j];
        }
    }

    let mut backward = backward.into_iter();
    loops
        .iter()
        .copied()
        .enumerate()
        .map(|(i, node)| {
            let calls = backward.next().flatten();
            if is_step[i] {
                return LoopInfo { node, kind: LoopKind::Step, backward_calls: calls.unwrap_or_default() };
            }
            let calls_step_function = || {
                model.own_calls_within(node).filter(|call| may_reach_own_code(model, *call)).any(|call| {
                    match model.resolve_call(call) {
                        super::CallTarget::Local(f) => step_functions.contains(&f.id()),
                        super::CallTarget::Project(summary) => summary.has_step_loop,
                        _ => false,
                    }
                })
            };
            let kind = if contains_step[i] || calls_step_function() {
                LoopKind::Epoch
            } else if is_eval_loop(model, node) {
                LoopKind::Eval
            } else {
                LoopKind::Other
            };
            LoopInfo { node, kind, backward_calls: Vec::new() }
        })
        .collect()
}

/// Whether a call could resolve to a function of this file or of the project, the only targets
/// that make a loop a step or epoch loop: most calls are settled without resolving them. A local
/// target bears the callee's name; a project's is reached through an import of the callee's root
/// name, or a star import.
fn may_reach_own_code(model: &Model<'_>, call: Node<'_>) -> bool {
    if model.callee_name(call).is_some_and(|n| !model.functions_named(n).is_empty()) {
        return true;
    }
    let imported = || {
        // The name that starts the callee's text, as [`super::imports::Imports::qualified_name`]
        // reads it: walking the chain down to its root costs more than the resolving it spares.
        let callee = ast::callee(call).map_or("", |c| model.node_text(c));
        let root = &callee[..callee.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(callee.len())];
        !model.imports.wildcard_modules.is_empty() || model.imports.binding(root).is_some()
    };
    model.context.project.is_some() && imported()
}

fn is_eval_loop<'a>(model: &Model<'a>, node: Node<'a>) -> bool {
    let mut calls_model = false;
    for call in model.own_calls_within(node) {
        match model.callee_name(call) {
            Some("backward" | "step" | "zero_grad") => return false,
            _ => calls_model = calls_model || model.calls_a_model(call),
        }
    }
    if !calls_model {
        return false;
    }
    let function = model.enclosing_function(node);
    let named_for_eval = function.is_some_and(|f| {
        ast::function_name(f, model.text)
            .is_some_and(|name| is_eval_function_name(name) && !is_pytest_test(model, f, name))
    });
    // `model.eval()` earlier in the same function (or at module level, earlier in the file).
    let scope_start = function.map_or(0, |f| f.start_byte());
    let after_eval_call = || {
        model.calls_named_starting_in("eval", scope_start, node.start_byte()).iter().any(|call| {
            ast::precedes(*call, node)
                && model.enclosing_function(*call).map(|f| f.id()) == function.map(|f| f.id())
                && ast::positional_args(*call).is_empty()
                && ast::receiver(*call).is_some()
                && !is_train_switched_back(model, *call, node)
        })
    };
    (named_for_eval || after_eval_call()) && !kept_for_a_later_backward(model, node, function)
}

/// A pytest test (a `test_...` method of a `Test...` class, a `test_...` function under a
/// `@pytest...` decorator, or one at the top of a file that pytest collects, `test_*.py` or
/// `*_test.py`): named for pytest, not for evaluating a model, as `test(model, loader)` is.
fn is_pytest_test<'a>(model: &Model<'a>, function: Node<'a>, name: &str) -> bool {
    name.starts_with("test_")
        && (model
            .method_class(function)
            .and_then(|class| class.field("name"))
            .is_some_and(|class| model.node_text(class).starts_with("Test"))
            || model.decorators(function).iter().any(|decorator| model.node_text(*decorator).starts_with("pytest."))
            || model.enclosing_function(function).is_none()
                && model.method_class(function).is_none()
                && in_a_pytest_file(model))
}

/// The file is one pytest collects tests from, by its name.
fn in_a_pytest_file(model: &Model<'_>) -> bool {
    let stem = model.context.path.and_then(|path| path.file_stem()).and_then(|stem| stem.to_str());
    stem.is_some_and(|stem| stem.starts_with("test_") || stem.ends_with("_test"))
}

/// The loop keeps what it computes in a list (`outputs.append(model(x))`) and the same function
/// backpropagates it after the loop: a forward pass that a later loop takes backward, as pipeline
/// schedules and gradient-accumulation tests run them, needs autograd on.
fn kept_for_a_later_backward<'a>(model: &Model<'a>, node: Node<'a>, function: Option<Node<'a>>) -> bool {
    let mut kept: Vec<&str> = Vec::new();
    for call in model.own_calls_within(node) {
        if matches!(model.callee_name(call), Some("append" | "extend" | "insert"))
            && let Some(root) = ast::receiver(call).and_then(ast::root_identifier)
        {
            kept.push(model.node_text(root));
        }
    }
    if kept.is_empty() {
        return false;
    }
    // The loop's own function (or the module, for a loop at module level), not functions in it.
    let scope = function.unwrap_or_else(|| model.tree.root_node());
    let in_scope = |n: Node<'a>| model.enclosing_function(n).map(|f| f.id()) == function.map(|f| f.id());
    let mentions_kept = |node: Node<'_>| kept.iter().any(|name| super::training::mentions(node, model.text, name));
    // A name assigned from what the loop kept: `loss = outputs[i]`.
    let assigned_from_kept = |subject: Node<'a>, call: Node<'a>| {
        let Some(root) = ast::root_identifier(subject) else { return false };
        model.assignments_to_within(model.node_text(root), scope).any(|assignment| {
            ast::precedes(assignment, call)
                && in_scope(assignment)
                && assignment.field("right").is_some_and(mentions_kept)
        })
    };
    let mut backward_calls =
        model.calls_named_within("backward", scope).filter(|c| ast::precedes(node, *c) && in_scope(*c));
    backward_calls.any(|call| {
        let subject = model.backward_subject(call).or_else(|| ast::positional_args(call).first().copied());
        // `outputs[i].backward()`, `sum(outputs).backward()`, `loss = outputs[i]` then
        // `loss.backward()`, or a loop over them: `for output in outputs: output.backward()`.
        subject.is_some_and(|subject| mentions_kept(subject) || assigned_from_kept(subject, call))
            || model
                .ancestors(call)
                .take_while(|a| !ast::is_function_boundary(*a))
                .any(|a| a.kind() == "for_statement" && a.field("right").is_some_and(mentions_kept))
    })
}

/// `model.eval()` followed by `model.train()` before the loop: the loop trains again.
fn is_train_switched_back<'a>(model: &Model<'a>, eval_call: Node<'_>, loop_node: Node<'a>) -> bool {
    model.calls_named_starting_in("train", eval_call.end_byte(), loop_node.start_byte()).iter().any(|t| {
        ast::precedes(*t, loop_node)
            && model.enclosing_function(*t).map(|f| f.id()) == model.enclosing_function(loop_node).map(|f| f.id())
    })
}
