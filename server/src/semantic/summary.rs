//! What a function does, as far as the rules care: the unit of cross-function and cross-file
//! knowledge.

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::{CallTarget, Model, ast, names};
use crate::grammar_ids::FieldChild;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSummary {
    pub calls_set_device: bool,
    pub enters_autocast: bool,
    pub enables_checkpointing: bool,
    pub zeroes_grads: bool,
    /// The whole body runs with autograd off (decorated with no_grad / inference_mode).
    pub runs_under_no_grad: bool,
    pub has_step_loop: bool,
    /// It calls `.backward()` outside any loop: one training step, so a loop that calls it is a
    /// step loop.
    pub runs_one_step: bool,
    /// It calls a helper the checker cannot see, so what it does is not fully known.
    pub calls_unseen: bool,
}

impl FunctionSummary {
    pub fn merge(&mut self, other: &FunctionSummary) {
        self.calls_set_device |= other.calls_set_device;
        self.enters_autocast |= other.enters_autocast;
        self.enables_checkpointing |= other.enables_checkpointing;
        self.zeroes_grads |= other.zeroes_grads;
        self.has_step_loop |= other.has_step_loop;
        self.runs_one_step |= other.runs_one_step;
        self.calls_unseen |= other.calls_unseen;
    }
}

/// What `function` does in its own body, and the functions of this file it calls (other than
/// itself): [`Model::function_summary`] merges in what those do.
pub(super) fn own_summary<'a>(model: &Model<'a>, function: Node<'a>) -> (FunctionSummary, Vec<Node<'a>>) {
    let mut summary = FunctionSummary {
        runs_under_no_grad: model.decorators(function).iter().any(|d| model.is_grad_disabling(*d)),
        has_step_loop: model.loop_indices_within(function).any(|i| model.loops()[i].kind == super::LoopKind::Step)
            || (ast::function_name(function, model.text) == Some("training_step")
                && model.method_class(function).is_some()),
        ..FunctionSummary::default()
    };
    let mut callees = Vec::new();
    let Some(body) = function.field("body") else { return (summary, callees) };
    summary.runs_one_step = model.runs_one_step(function);
    for call in model.own_calls_within(body) {
        let name = ast::callee_name(call, model.text).unwrap_or_default();
        // `torch.cuda.set_device(...)`, or the same method of a device namespace chosen at run
        // time (torchtune's `get_torch_device_namespace().set_device(device)`, `torch.xpu`).
        summary.calls_set_device |=
            model.call_resolves_to(call, names::SET_DEVICE) || name == "set_device" && ast::receiver(call).is_some();
        summary.enables_checkpointing |= names::CHECKPOINT_METHODS.contains(&name)
            || model.call_resolves_to(call, names::CHECKPOINT_FUNCTIONS)
            || model.call_resolves_to(
                call,
                &["peft.prepare_model_for_kbit_training", "peft.prepare_model_for_int8_training"],
            );
        summary.enters_autocast |= model.is_autocast(call);
        match model.resolve_call(call) {
            CallTarget::Local(callee) if callee.id() != function.id() => callees.push(callee),
            CallTarget::Project(other) => summary.merge(&other),
            CallTarget::Unseen => summary.calls_unseen = true,
            _ => {}
        }
    }
    summary.enters_autocast |= ast::any_in_scope(body, |node| {
        crate::grammar_ids::WITH.contains(node)
            && super::contexts::with_items(node).iter().any(|i| model.is_autocast(*i))
    });
    summary.zeroes_grads = !model.gradient_zeroings_within(body).is_empty();
    summary.enables_checkpointing |= model.text[body.byte_range()].contains(".gradient_checkpointing = True");
    (summary, callees)
}
