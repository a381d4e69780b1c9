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
}

impl Diagnostic {
    pub fn fix_title(&self) -> Option<&str> {
        self.fix.as_ref().map(|fix| &*fix.title)
    }
}
