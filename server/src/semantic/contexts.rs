//! Enclosing context managers and decorators: no_grad, inference_mode, autocast.

use tree_sitter::Node;

use super::{Model, ast, names};
use crate::grammar_ids::FieldChild;

/// How deep "every call site is under no_grad" is followed before giving up.
const CALL_SITE_DEPTH: usize = 3;

impl<'a> Model<'a> {
    /// The context-manager expressions of the `with` statements around `node`, innermost first,
    /// up to the enclosing function.
    pub fn enclosing_with_items(&self, node: Node<'a>) -> Vec<Node<'a>> {
        let mut items = Vec::new();
        for n in self.ancestors(node).take_while(|n| !ast::is_function_boundary(*n)) {
            if n.kind() == "with_statement" && n.field("body").is_some_and(|b| ast::contains(b, node)) {
                items.extend(with_items(n));
            }
        }
        items
    }

    /// Whether an expression disables autograd: `torch.no_grad()`, `torch.inference_mode()`,
    /// `torch.set_grad_enabled(False)`, or the bare decorator forms.
    pub fn is_grad_disabling(&self, expression: Node<'_>) -> bool {
        let (callee, call) = match expression.kind() {
            "call" => (ast::callee(expression), Some(expression)),
            _ => (Some(expression), None),
        };
        let Some(callee) = callee else { return false };
        if self.resolves_to(callee, names::GRAD_DISABLING) {
            // `torch.inference_mode(False)` / `mode=False` turns it off again.
            return !call.is_some_and(|c| {
                ast::positional_args(c).first().is_some_and(|a| ast::is_literal_off(*a, self.text))
                    || ast::keyword_arg(c, "mode", self.text).is_some_and(|a| ast::is_literal_off(a, self.text))
            });
        }
        if self.resolves_to(callee, names::SET_GRAD_ENABLED) {
            return call.and_then(|c| ast::positional_args(c).first().copied()).is_some_and(|a| a.kind() == "false");
        }
        self.qualified_name(callee).is_none_or(|q| !q.starts_with("torch."))
            && is_named_for_no_grad(self.node_text(callee))
    }

    /// Whether autograd is off at `node`: an enclosing `with`, a decorator of the enclosing
    /// function, or every call site of that function being under no_grad itself.
    pub fn grad_disabled(&self, node: Node<'a>) -> bool {
        self.grad_disabled_at_depth(node, 0)
    }

    fn grad_disabled_at_depth(&self, node: Node<'a>, depth: usize) -> bool {
        let with_items = self.enclosing_with_items(node);
        if with_items.iter().any(|item| self.is_grad_disabling(*item)) {
            return true;
        }
        let Some(function) = self.enclosing_function(node) else { return false };
        if self.decorators(function).iter().any(|d| self.is_grad_disabling(*d)) {
            return true;
        }
        // PyTorch runs a custom autograd function's `forward` with autograd off; only an
        // `enable_grad()` inside turns it back on.
        if self.is_autograd_function_forward(function) {
            return !with_items.iter().any(|item| self.is_grad_enabling(*item));
        }
        if depth >= CALL_SITE_DEPTH {
            return false;
        }
        let Some(name) = ast::function_name(function, self.text) else { return false };
        let sites: Vec<Node<'a>> = self
            .calls_named(name)
            .iter()
            .copied()
            .filter(|call| matches!(self.resolve_call(*call), super::CallTarget::Local(f) if f.id() == function.id()))
            .collect();
        !sites.is_empty() && sites.iter().all(|site| self.grad_disabled_at_depth(*site, depth + 1))
    }

    /// `torch.enable_grad()` or `torch.set_grad_enabled(True)`.
    fn is_grad_enabling(&self, expression: Node<'_>) -> bool {
        let callee = if expression.kind() == "call" { ast::callee(expression) } else { Some(expression) };
        let Some(callee) = callee else { return false };
        self.resolves_to(callee, &["torch.enable_grad", "torch.autograd.enable_grad"])
            || self.resolves_to(callee, names::SET_GRAD_ENABLED)
                && ast::positional_args(expression).first().is_some_and(|a| a.kind() == "true")
    }

    /// `forward` of a `torch.autograd.Function` subclass.
    fn is_autograd_function_forward(&self, function: Node<'a>) -> bool {
        ast::function_name(function, self.text) == Some("forward")
            && self.method_class(function).and_then(|class| class.field("superclasses")).is_some_and(|bases| {
                let mut cursor = bases.walk();
                bases.named_children(&mut cursor).any(|base| {
                    self.resolves_to(base, &["torch.autograd.Function", "torch.autograd.function.Function"])
                })
            })
    }

    /// Whether an expression enters autocast: `torch.autocast(...)`, `torch.amp.autocast(...)`,
    /// `torch.cuda.amp.autocast(...)`, `accelerator.autocast()`, or a name assigned one of those
    /// (nanoGPT's `ctx = nullcontext() if cpu else torch.amp.autocast(...)`).
    pub fn is_autocast(&self, expression: Node<'a>) -> bool {
        self.is_autocast_at_depth(expression, 0)
    }

    fn is_autocast_at_depth(&self, expression: Node<'a>, depth: usize) -> bool {
        match expression.kind() {
            "call" => {
                let Some(callee) = ast::callee(expression) else { return false };
                if self.resolves_to(callee, names::AUTOCAST) {
                    return true;
                }
                // `accelerator.autocast()`, `fabric.autocast()`: a method named autocast on an
                // object that is not a library module.
                let framework_method = callee.kind() == "attribute"
                    && callee.field("attribute").is_some_and(|a| self.node_text(a) == "autocast")
                    && callee.field("object").is_some_and(|o| self.qualified_name(o).is_none());
                framework_method || depth < 2 && self.is_precision_context_helper(expression, depth + 1)
            }
            "conditional_expression" => {
                let mut cursor = expression.walk();
                expression.named_children(&mut cursor).any(|c| self.is_autocast_at_depth(c, depth))
            }
            "identifier" | "attribute" if depth < 2 => {
                if self.resolves_to(expression, names::AUTOCAST) {
                    return true;
                }
                self.assignments_to(self.node_text(expression)).iter().any(|assignment| {
                    assignment.field("right").is_some_and(|v| self.is_autocast_at_depth(v, depth + 1))
                })
            }
            "parenthesized_expression" => {
                expression.named_child(0).is_some_and(|inner| self.is_autocast_at_depth(inner, depth))
            }
            _ => false,
        }
    }

    /// A call of the project's own precision context, defined in this file: a function or
    /// method (`self.autocast_ctx()`, `maybe_autocast(...)`) that returns an autocast context
    /// (`return torch.autocast(...)`, `return self.accelerator.autocast()`, a conditional of one
    /// and `nullcontext()`), or a generator context manager that yields inside one.
    fn is_precision_context_helper(&self, call: Node<'a>, depth: usize) -> bool {
        let super::CallTarget::Local(function) = self.resolve_call(call) else { return false };
        let Some(body) = function.field("body") else { return false };
        ast::any_in_scope(body, |node| match node.kind() {
            "return_statement" => node.named_child(0).is_some_and(|value| self.is_autocast_at_depth(value, depth)),
            "yield" => self.enclosing_with_items(node).iter().any(|item| self.is_autocast_at_depth(*item, depth)),
            _ => false,
        })
    }

    /// Whether a call runs with autograd off: [`Model::grad_disabled`] where it is, or a
    /// function of this file whose whole body runs under `@torch.no_grad()` /
    /// `@torch.inference_mode()` (`self.predict(x)` where `predict` is so decorated).
    pub fn call_runs_without_grad(&self, call: Node<'a>) -> bool {
        self.grad_disabled(call)
            || matches!(self.resolve_call(call), super::CallTarget::Local(function)
                if self.decorators(function).iter().any(|d| self.is_grad_disabling(*d)))
    }

    /// Whether `node` runs under autocast: an enclosing `with` or a decorator.
    pub fn under_autocast(&self, node: Node<'a>) -> bool {
        self.enclosing_with_items(node).iter().any(|item| self.is_autocast(*item))
            || self.enclosing_function(node).is_some_and(|f| self.decorators(f).iter().any(|d| self.is_autocast(*d)))
    }
}

/// The context-manager expressions of one `with` statement (without their `as` targets).
pub fn with_items(with_statement: Node<'_>) -> Vec<Node<'_>> {
    let mut items = Vec::new();
    let mut cursor = with_statement.walk();
    for clause in with_statement.named_children(&mut cursor).filter(|c| c.kind() == "with_clause") {
        let mut clause_cursor = clause.walk();
        for item in clause.named_children(&mut clause_cursor).filter(|i| i.kind() == "with_item") {
            let Some(value) = item.field("value") else { continue };
            let expression = if value.kind() == "as_pattern" { value.named_child(0).unwrap_or(value) } else { value };
            items.push(expression);
        }
    }
    items
}

/// A project's own wrapper of `no_grad` or `inference_mode`, by its name: ultralytics'
/// `smart_inference_mode()`, a `maybe_no_grad`. Whatever its arguments say, as torch's own do
/// not: `smart_inference_mode(False)` still runs under `no_grad`.
fn is_named_for_no_grad(callee: &str) -> bool {
    let name = callee.rsplit('.').next().unwrap_or(callee);
    ["no_grad", "inference_mode"]
        .iter()
        .any(|wrapped| name.strip_suffix(wrapped).is_some_and(|prefix| prefix.is_empty() || prefix.ends_with('_')))
}
