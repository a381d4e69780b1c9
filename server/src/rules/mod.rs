//! The rule registry: one row per rule, one file per rule, one query per rule.

pub mod checker;
pub mod edits;

mod alloc_conf_after_cuda_init;
mod cublas_handle_leak;
mod deprecated_cuda_amp;
mod device_index_out_of_range;
mod device_map_auto_without_max_memory;
mod empty_cache_before_release;
mod empty_cache_in_step_loop;
mod eval_without_no_grad;
mod fp16_where_bf16_is_native;
mod graph_kept_across_iterations;
mod invalid_alloc_conf;
mod missing_autocast;
mod missing_gradient_checkpointing;
mod missing_set_device;
mod missing_zero_grad;
mod model_exceeds_gpu_memory;
mod retain_graph_in_loop;
mod tensor_stored_on_module;
mod torch_load_to_saved_device;
mod unknown_cuda_env_var;
mod unscaled_gradient_accumulation;
mod zero_grad_keeps_buffers;

use std::sync::LazyLock;

use crate::diagnostic::Severity;
use crate::parse::python;
pub use crate::patterns::Candidate;
use crate::patterns::{Pattern, parse_patterns};
pub use checker::Checker;

/// What a text must contain for a rule to possibly fire (see [`crate::prefilter`]): files that no
/// rule admits are never parsed.
pub struct Prefilter {
    /// Every group needs at least one of its tokens somewhere in the text.
    pub all_of: &'static [&'static [&'static str]],
    /// A scan of the text for a shape the tokens cannot express, run once they are all present.
    pub scan: Option<fn(&str) -> bool>,
}

/// Whether a rule can offer a fix, as shown by `culint rule --all` and the README table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixAvailability {
    None,
    /// Some findings have a fix (safe or unsafe), others do not.
    Sometimes,
    Always,
    /// A template is shown but never applied.
    DisplayOnly,
}

impl FixAvailability {
    pub fn as_str(self) -> &'static str {
        match self {
            FixAvailability::None => "none",
            FixAvailability::Sometimes => "sometimes",
            FixAvailability::Always => "always",
            FixAvailability::DisplayOnly => "display-only",
        }
    }
}

pub struct Rule {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub fix: FixAvailability,
    /// Source of `queries/python/<name>.scm`.
    pub query: &'static str,
    /// What a file must contain for the rule to possibly fire; files that no rule admits are
    /// never parsed.
    pub prefilter: Prefilter,
    pub check: for<'m, 'a> fn(&mut Checker<'m, 'a>, &Candidate<'a>),
    /// Markdown with the headings of STYLE.md: the single source of `culint rule`, hover and
    /// `docs/rules/`.
    pub doc: &'static str,
    pub knowledge: Option<&'static str>,
    /// Findings concern a deprecated API (LSP tag `Deprecated`).
    pub deprecated: bool,
    /// A resource rule: it speaks where training or evaluation runs, so a candidate in test code
    /// (see [`crate::semantic::code_kind`]) is not checked. A test is held only to what a test
    /// can cause.
    pub quiet_in_test_code: bool,
    /// The rule needs hardware facts and stays quiet without them.
    pub needs_hardware: bool,
}

/// Every rule, in code order.
#[rustfmt::skip] // One row per line keeps additions from different branches apart.
pub static RULES: &[&Rule] = &[
    &missing_set_device::RULE,
    &torch_load_to_saved_device::RULE,
    &device_map_auto_without_max_memory::RULE,
    &empty_cache_in_step_loop::RULE,
    &empty_cache_before_release::RULE,
    &alloc_conf_after_cuda_init::RULE,
    &invalid_alloc_conf::RULE,
    &missing_gradient_checkpointing::RULE,
    &missing_autocast::RULE,
    &deprecated_cuda_amp::RULE,
    &graph_kept_across_iterations::RULE,
    &eval_without_no_grad::RULE,
    &tensor_stored_on_module::RULE,
    &retain_graph_in_loop::RULE,
    &missing_zero_grad::RULE,
    &unscaled_gradient_accumulation::RULE,
    &zero_grad_keeps_buffers::RULE,
    &cublas_handle_leak::RULE,
    &unknown_cuda_env_var::RULE,
    &device_index_out_of_range::RULE,
    &fp16_where_bf16_is_native::RULE,
    &model_exceeds_gpu_memory::RULE,
];

pub fn by_code(code: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|rule| rule.code.eq_ignore_ascii_case(code))
}

pub fn index_of(rule: &Rule) -> usize {
    RULES.iter().position(|r| std::ptr::eq(*r, rule)).expect("rule is registered")
}

/// Every rule's patterns, read from its query once per process (reading them all takes well
/// under a millisecond); the registry test reads each and names the rule of any error.
static PATTERNS: LazyLock<Vec<Vec<Pattern>>> = LazyLock::new(|| {
    let language = python();
    RULES
        .iter()
        .map(|rule| {
            parse_patterns(rule.query, &language)
                .unwrap_or_else(|e| panic!("query of {} {} cannot be read: {e}", rule.code, rule.name))
        })
        .collect()
});

/// Compile one rule's query with tree-sitter's own query engine: the registry test checks that
/// each is a valid query, and the pattern tests that culint's matching finds what tree-sitter's
/// cursor finds.
pub fn compile_query(rule: &Rule) -> Result<tree_sitter::Query, tree_sitter::QueryError> {
    tree_sitter::Query::new(&python(), rule.query)
}

/// The candidate patterns of `rule` (`queries/python/<name>.scm`).
pub fn patterns_of(rule: &Rule) -> &'static [Pattern] {
    &PATTERNS[index_of(rule)]
}

/// The headings every rule doc must have, in order.
pub const DOC_HEADINGS: &[&str] =
    &["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References"];
