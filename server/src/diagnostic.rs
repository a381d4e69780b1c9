//! What a rule reports.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::fix::Fix;
use crate::text::TextRange;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Hint,
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Hint => "hint",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "hint" => Some(Severity::Hint),
            "info" | "information" => Some(Severity::Info),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

/// A secondary location that explains a finding, such as the process-group call for CUL101.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    pub range: TextRange,
    pub message: Arc<str>,
}

/// A finding. What it says of its rule (code, name, knowledge entry) is the rule's own text,
/// borrowed rather than copied, and its own texts are shared: a language server lints a large
/// file on every keystroke and keeps hundreds of findings from one lint to the next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Rule code, such as `CUL101`.
    pub code: &'static str,
    /// Rule name, such as `missing-set-device`.
    pub name: &'static str,
    pub range: TextRange,
    pub message: Arc<str>,
    pub severity: Severity,
    pub fix: Option<Fix>,
    /// Id of the linked entry in `knowledge/`, such as `cuda/oom-genuine`.
    pub knowledge: Option<&'static str>,
    pub related: Vec<Related>,
    /// The rule reports use of an API that is deprecated (LSP `DiagnosticTag::Deprecated`).
    pub deprecated: bool,
    /// What the finding rests on, read from the code: "model: `gpt2-xl`, about 1.5B parameters".
    pub facts: Vec<Arc<str>>,
    /// What the rule took for granted where the code does not say: "`setup_amp()` is not
    /// followed: taken not to enter autocast". A finding with any is a preview finding, shown only
    /// when preview is on ([`Diagnostic::is_preview`]).
    pub assumptions: Vec<Arc<str>>,
}

impl Diagnostic {
    pub fn fix_title(&self) -> Option<&str> {
        self.fix.as_ref().map(|fix| &*fix.title)
    }

    /// The finding rests on an assumption rather than only on facts: hidden unless preview is on.
    pub fn is_preview(&self) -> bool {
        !self.assumptions.is_empty()
    }
}
