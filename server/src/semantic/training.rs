//! Facts about one training step that several rules share: what a backward call
//! differentiates, which optimizer a `step()` call steps, which models an optimizer updates, and
//! where gradients are zeroed.

use tree_sitter::Node;

use super::{Model, ast, names};
use crate::grammar_ids::FieldChild;

/// Qualified-name prefixes of optimizer constructors.
const OPTIMIZER_MODULES: &[&str] = &[
    "torch.optim.",
    "bitsandbytes.optim.",
    "apex.optimizers.",
    "deepspeed.ops.adam.",
    "deepspeed.ops.lamb.",
    "timm.optim.",
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.",
];

/// Under those prefixes, constructors that are not optimizers.
const NOT_OPTIMIZERS: &[&str] = &["lr_scheduler", "swa_utils", "create_optimizer_v2_kwargs"];

impl<'a> Model<'a> {
    /// The tensor a backward call differentiates: `loss` in `loss.backward()`,
    /// `scaler.scale(loss).backward()`, `accelerator.backward(loss)` and
    /// `torch.autograd.backward(loss)`.
    pub fn backward_subject(&self, call: Node<'a>) -> Option<Node<'a>> {
        if self.callee_name(call) != Some("backward") {
            return None;
        }
        if let Some(first) = ast::positional_args(call).first() {
            return Some(*first);
        }
        let receiver = ast::receiver(call)?;
        if receiver.kind() == "call"
            && self.callee_name(receiver) == Some("scale")
            && let [scaled] = ast::positional_args(receiver)[..]
        {
            return Some(scaled);
        }
        Some(receiver)
    }

    /// The optimizer a `step()` call steps: `opt` in `opt.step()` and in `scaler.step(opt)`.
    /// `None` for anything else called `step` (schedulers, environments, closures it cannot see).
    pub fn stepped_optimizer(&self, call: Node<'a>) -> Option<Node<'a>> {
        if self.callee_name(call) != Some("step") {
            return None;
        }
        let receiver = ast::receiver(call)?;
        match ast::positional_args(call)[..] {
            [] if ast::keyword_args(call).is_empty() => self.is_optimizer(receiver).then_some(receiver),
            [optimizer] if self.is_grad_scaler(receiver) && self.is_optimizer(optimizer) => Some(optimizer),
            _ => None,
        }
    }

    /// Whether an expression names an optimizer: it is assigned an optimizer constructor, or it is
    /// named like one (`optimizer`, `opt_g`, `self.optim`) and not like a scheduler.
    pub fn is_optimizer(&self, expression: Node<'_>) -> bool {
        if !matches!(expression.kind(), "identifier" | "attribute") || self.qualified_name(expression).is_some() {
            return false;
        }
        let text = self.node_text(expression);
        let constructed = self.assignments_to(text).iter().any(|a| self.assigns_new_optimizer(*a));
        constructed || is_optimizer_name(last_segment(text))
    }

    /// Whether an assignment's value is an optimizer constructor call: `torch.optim.AdamW(...)`.
    pub fn assigns_new_optimizer(&self, assignment: Node<'_>) -> bool {
        assignment.field("right").filter(|r| r.kind() == "call").is_some_and(|r| {
            self.call_qualified_name(r).is_some_and(|q| {
                OPTIMIZER_MODULES.iter().any(|m| q.starts_with(m)) && !NOT_OPTIMIZERS.iter().any(|n| q.contains(n))
            })
        })
    }

    /// Whether an expression names a `GradScaler` (by construction or by name).
    pub fn is_grad_scaler(&self, expression: Node<'_>) -> bool {
        if !matches!(expression.kind(), "identifier" | "attribute") {
            return false;
        }
        let text = self.node_text(expression);
        names::contains_ignoring_ascii_case(last_segment(text), "scaler")
            || self.assignments_to(text).iter().any(|assignment| {
                assignment
                    .field("right")
                    .filter(|r| r.kind() == "call")
                    .and_then(|r| self.call_qualified_name(r))
                    .is_some_and(|q| q.ends_with("GradScaler"))
            })
    }

    /// The models whose parameters an optimizer updates, as written where it is built:
    /// `model` for `Adam(model.parameters())`, `self.G` for `Adam(self.G.parameters())`.
    /// Empty when no construction with `.parameters()` is visible.
    pub fn optimizer_models(&self, optimizer: &str) -> Vec<&'a str> {
        let mut models = Vec::new();
        for assignment in self.assignments_to(optimizer) {
            let Some(right) = assignment.field("right") else { continue };
            for call in self.calls_within(right) {
                if matches!(self.callee_name(call), Some("parameters" | "named_parameters"))
                    && let Some(owner) = ast::receiver(call)
                {
                    models.push(self.node_text(owner));
                }
            }
        }
        models
    }

    /// Every place in `scope` (outside nested functions, classes and lambdas) that zeroes
    /// gradients, in source order: `x.zero_grad()`, and for each parameter `p.grad.zero_()`,
    /// `p.grad = None` or `p.grad = torch.zeros_like(p.grad)` (Pyro's `zero_grads`). Calls to
    /// helpers that zero are not followed: that is the function summaries' part.
    pub fn gradient_zeroings_within(&self, scope: Node<'a>) -> Vec<Zeroing<'a>> {
        let mut zeroings = Vec::new();
        for call in self.own_calls_within(scope) {
            let zeroed = match self.callee_name(call) {
                Some("zero_grad") => ast::receiver(call).map(|r| self.node_text(r)),
                Some("zero_") if ast::receiver(call).is_some_and(|r| self.is_grad(r)) => {
                    self.parameter_owner(call, scope)
                }
                _ => continue,
            };
            zeroings.push(Zeroing { node: call, owner: zeroed });
        }
        // The model's list of assignments, not a walk of the scope: a step loop's function is
        // asked this for each of its candidates, and a script's scope is the whole module.
        for &node in self.walked.assignment_nodes.starting_in(scope.start_byte(), scope.end_byte()) {
            let zeroes = node.field("left").is_some_and(|l| self.is_grad(l))
                && node.field("right").is_some_and(|r| {
                    r.kind() == "none" || r.kind() == "call" && self.call_resolves_to(r, &["torch.zeros_like"])
                });
            let nested = || self.ancestors(node).take_while(|n| n.id() != scope.id()).any(ast::is_function_boundary);
            if zeroes && node.end_byte() <= scope.end_byte() && !nested() {
                zeroings.push(Zeroing { node, owner: self.parameter_owner(node, scope) });
            }
        }
        zeroings.sort_by_key(|z| z.node.start_byte());
        zeroings
    }

    /// `p.grad` or `p.grad.data`.
    fn is_grad(&self, expression: Node<'_>) -> bool {
        let text = self.node_text(expression);
        expression.kind() == "attribute" && (text.ends_with(".grad") || text.ends_with(".grad.data"))
    }

    /// `model` when `node` sits in `for p in model.parameters():` inside `scope`.
    fn parameter_owner(&self, node: Node<'a>, scope: Node<'a>) -> Option<&'a str> {
        let parameter_loop = self
            .ancestors(node)
            .take_while(|n| n.id() != scope.id())
            .find(|n| n.kind() == "for_statement" && n.field("right").is_some())?;
        let iterable = parameter_loop.field("right")?;
        self.calls_within(iterable)
            .find(|c| matches!(self.callee_name(*c), Some("parameters" | "named_parameters")))
            .and_then(ast::receiver)
            .map(|r| self.node_text(r))
            .filter(|owner| !mentions(iterable, self.text, "param_groups") && !owner.is_empty())
    }

    /// The body that runs once per batch around `node`: the innermost step loop, or Lightning's
    /// `training_step` method.
    pub fn step_scope(&self, node: Node<'a>) -> Option<Node<'a>> {
        self.enclosing_step_loop(node).map(|l| l.node).or_else(|| self.enclosing_training_step(node))
    }
}

/// A place that zeroes gradients (see [`Model::gradient_zeroings_within`]).
#[derive(Clone, Copy, Debug)]
pub struct Zeroing<'a> {
    /// The call or the assignment.
    pub node: Node<'a>,
    /// Whose gradients, as written: what `zero_grad()` is called on, or the model whose
    /// `.parameters()` the loop around a parameter's zeroing walks. `None` where that is not
    /// visible (a bare `zero_grad()`, a loop over a list of parameters).
    pub owner: Option<&'a str>,
}

/// `model` for `self.model`, `opt` for `opt`.
pub fn last_segment(text: &str) -> &str {
    text.rsplit('.').next().unwrap_or(text)
}

/// `optimizer`, `optim`, `opt`, `opt_g`, `optD`, `g_optimizer`; not `scheduler`, `options`.
pub fn is_optimizer_name(name: &str) -> bool {
    let contains = |fragment| names::contains_ignoring_ascii_case(name, fragment);
    if contains("sched") || contains("option") {
        return false;
    }
    contains("optim")
        || name.split('_').any(|token| {
            let token = token.as_bytes();
            token.len() >= 3 && token.len() <= 4 && token[..3].eq_ignore_ascii_case(b"opt")
        })
}

/// Whether two receivers name the same model or one contains the other (`model` and
/// `model.encoder`, `self` and `self.G`).
pub fn same_or_nested(a: &str, b: &str) -> bool {
    a == b
        || (b.len() > a.len() && b.starts_with(a) && b.as_bytes()[a.len()] == b'.')
        || (a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'.')
}

/// Whether `node` contains an identifier or attribute written exactly `name`.
pub fn mentions(node: Node<'_>, source: &str, name: &str) -> bool {
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "identifier" | "attribute") && ast::text(n, source) == name && !is_field_name(n) {
            return true;
        }
        stack.extend(n.named_children(&mut cursor).collect::<Vec<_>>());
    }
    false
}

/// `loss` in `out.loss` and in `f(loss=1)` names a field, not a variable.
fn is_field_name(identifier: Node<'_>) -> bool {
    let Some(parent) = identifier.parent() else { return false };
    let field = match parent.kind() {
        "attribute" => "attribute",
        "keyword_argument" => "name",
        _ => return false,
    };
    parent.field(field).is_some_and(|f| f.id() == identifier.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimizer_names() {
        for name in ["optimizer", "opt", "optim", "opt_g", "optD", "g_optimizer", "optimizer_G", "OPT", "Opt_G"] {
            assert!(is_optimizer_name(name), "{name}");
        }
        for name in ["scheduler", "opt_scheduler", "options", "model", "env", "output", "LR_Scheduler", "OPTIONS"] {
            assert!(!is_optimizer_name(name), "{name}");
        }
    }

    #[test]
    fn nesting_of_receivers() {
        assert!(same_or_nested("model", "model.encoder"));
        assert!(same_or_nested("self.G", "self"));
        assert!(!same_or_nested("model", "model_ema"));
        assert!(!same_or_nested("netD", "netG"));
    }
}
