//! Settings the editor sends: in `initializationOptions`, and later through
//! `workspace/didChangeConfiguration`.
//!
//! Both the bare object (`{"select": [...]}`) and the object nested under the extension's section
//! (`{"culint": {...}}`, which VS Code sends) are accepted. Keys are camelCase, as editors write
//! them.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::diagnostic::Severity;
use crate::lint::{LintSettings, RuleSet};
use crate::rules::RULES;
use crate::suppression::{selector_is_known, selector_matches};

/// The configuration section editors keep culint's settings under.
pub const SECTION: &str = "culint";

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientSettings {
    /// Rule selectors (codes, prefixes, names, `ALL`) that replace the default selection.
    pub select: Option<Vec<String>>,
    /// Rule selectors switched off after `select`.
    pub ignore: Vec<String>,
    /// Let fix-all and `culint.applyAllFixes` apply unsafe fixes too; unset leaves it to the
    /// project's configuration.
    pub unsafe_fixes: Option<bool>,
    /// Also show preview findings, those that rest on an assumption; unset leaves it to the
    /// project's configuration.
    pub preview: Option<bool>,
    /// Severity per rule code, such as `{"CUL201": "error"}`.
    pub severity: HashMap<String, String>,
    /// A culint.toml or pyproject.toml to use for every file instead of the discovered one.
    pub configuration: Option<PathBuf>,
    /// Report the regions tree-sitter could not parse.
    pub show_syntax_errors: bool,
    /// Read the GPU's device count, memory and compute capability when the server starts (no
    /// CUDA context is created), so the hardware-aware rules can run.
    pub detect_hardware: bool,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            select: None,
            ignore: Vec::new(),
            unsafe_fixes: None,
            preview: None,
            severity: HashMap::new(),
            configuration: None,
            show_syntax_errors: false,
            detect_hardware: true,
        }
    }
}

/// A setting that was ignored, described for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsProblem(pub String);

impl ClientSettings {
    /// Read settings from whatever the client sent. Returns the usable settings and a problem
    /// for every part that had to be dropped, so the user hears about a typo instead of wondering
    /// why a rule is still on.
    pub fn from_value(value: &Value) -> (Self, Vec<SettingsProblem>) {
        let value = match value {
            Value::Object(map) if map.contains_key(SECTION) => &map[SECTION],
            Value::Null => return (Self::default(), Vec::new()),
            other => other,
        };
        let mut problems = Vec::new();
        let Value::Object(entries) = value else {
            problems.push(SettingsProblem(format!(
                "culint settings must be an object such as {{\"select\": [\"CUL2\"], \"unsafeFixes\": false}}, not `{value}`; \
                 using the defaults"
            )));
            return (Self::default(), problems);
        };
        // Check each key on its own, so one mistyped value costs only that setting.
        let mut usable = serde_json::Map::new();
        for (key, entry) in entries {
            let alone = Value::Object(serde_json::Map::from_iter([(key.clone(), entry.clone())]));
            match Self::deserialize(&alone) {
                Ok(_) => {
                    usable.insert(key.clone(), entry.clone());
                }
                Err(error) => problems.push(SettingsProblem(format!("culint setting `{key}` was ignored: {error}"))),
            }
        }
        let mut settings = Self::deserialize(Value::Object(usable)).unwrap_or_default();
        // Editors send every setting with its default: VS Code's are `"select": []` and
        // `"configuration": ""`, which mean "not set", not "no rules" and "the file named ''".
        if settings.select.as_ref().is_some_and(Vec::is_empty) {
            settings.select = None;
        }
        if settings.configuration.as_ref().is_some_and(|p| p.as_os_str().to_string_lossy().trim().is_empty()) {
            settings.configuration = None;
        }
        for (key, selectors) in
            [("select", settings.select.as_deref().unwrap_or_default()), ("ignore", &settings.ignore)]
        {
            for selector in selectors.iter().filter(|s| !selector_is_known(s)) {
                problems.push(SettingsProblem(format!(
                    "culint setting `{key}`: `{selector}` matches no rule; use a code (CUL201), a prefix (CUL2) or a \
                     rule name (empty-cache-in-step-loop)"
                )));
            }
        }
        for (code, severity) in &settings.severity {
            if Severity::parse(severity).is_none() {
                problems.push(SettingsProblem(format!(
                    "culint setting `severity.{code}`: `{severity}` is not a severity; use error, warning, info or hint"
                )));
            }
            if !selector_is_known(code) {
                problems.push(SettingsProblem(format!("culint setting `severity`: `{code}` matches no rule")));
            }
        }
        (settings, problems)
    }

    /// Apply these settings on top of `base`, for files no configuration resolver can serve: a
    /// `select` replaces the base selection, `ignore` removes from it, severities override per
    /// rule.
    pub fn apply_to(&self, mut base: LintSettings) -> LintSettings {
        if let Some(select) = &self.select {
            base.rules = RuleSet::from_selectors(select);
        }
        base.rules.remove(&self.ignore);
        self.apply_severities(&mut base);
        base.show_syntax_errors |= self.show_syntax_errors;
        base
    }

    /// The editor's severity overrides, by code, prefix or name, over the configuration's.
    pub fn apply_severities(&self, settings: &mut LintSettings) {
        for (selector, severity) in &self.severity {
            let Some(severity) = Severity::parse(severity) else { continue };
            for rule in RULES.iter().filter(|r| selector_matches(selector, r.code, r.name)) {
                settings.severities.insert(rule.code.to_owned(), severity);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_bare_and_nested_settings() {
        let bare = json!({"unsafeFixes": true, "showSyntaxErrors": true});
        let (settings, problems) = ClientSettings::from_value(&bare);
        assert!(settings.unsafe_fixes == Some(true) && settings.show_syntax_errors);
        assert!(problems.is_empty());
        let nested = json!({"culint": {"unsafeFixes": true, "configuration": "/p/culint.toml"}});
        let (settings, _) = ClientSettings::from_value(&nested);
        assert_eq!(settings.unsafe_fixes, Some(true));
        assert_eq!(settings.configuration, Some(PathBuf::from("/p/culint.toml")));
        assert!(settings.detect_hardware);
        assert_eq!(ClientSettings::from_value(&Value::Null).0, ClientSettings::default());
    }

    #[test]
    fn editor_defaults_mean_unset() {
        let vscode_defaults = json!({"culint": {"select": [], "ignore": [], "configuration": "", "severity": {}}});
        let (settings, problems) = ClientSettings::from_value(&vscode_defaults);
        assert_eq!(settings, ClientSettings::default());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(settings.apply_to(LintSettings::default()).rules, RuleSet::all());
    }

    #[test]
    fn a_malformed_setting_is_dropped_alone_with_a_reason() {
        let (settings, problems) = ClientSettings::from_value(&json!({"select": "CUL2", "unsafeFixes": true}));
        assert_eq!(settings, ClientSettings { unsafe_fixes: Some(true), ..ClientSettings::default() });
        assert_eq!(problems.len(), 1);
        assert!(problems[0].0.starts_with("culint setting `select` was ignored: invalid type"), "{problems:?}");
        let (settings, problems) = ClientSettings::from_value(&json!(["CUL2"]));
        assert_eq!(settings, ClientSettings::default());
        assert!(problems[0].0.contains("must be an object"), "{problems:?}");
    }

    #[test]
    fn unknown_selectors_and_severities_are_reported() {
        let (settings, problems) =
            ClientSettings::from_value(&json!({"ignore": ["CUL999x"], "severity": {"CUL999x": "loud"}}));
        assert_eq!(settings.ignore, vec!["CUL999x".to_owned()]);
        let messages: Vec<&str> = problems.iter().map(|p| p.0.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains("`ignore`: `CUL999x` matches no rule")), "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("`loud` is not a severity")), "{messages:?}");
    }

    #[test]
    fn select_ignore_and_severity_shape_the_lint_settings() {
        let value =
            json!({"select": ["CUL2"], "ignore": ["empty-cache-before-release"], "severity": {"CUL2": "error"}});
        let (settings, problems) = ClientSettings::from_value(&value);
        assert!(problems.is_empty(), "{problems:?}");
        let lint = settings.apply_to(LintSettings::default());
        let codes: Vec<&str> = lint.rules.iter().map(|r| r.code).collect();
        assert!(codes.contains(&"CUL201") && !codes.contains(&"CUL202"), "{codes:?}");
        assert_eq!(lint.severities.get("CUL201"), Some(&Severity::Error));
        assert_eq!(lint.severities.get("CUL202"), Some(&Severity::Error));
    }

    #[test]
    fn syntax_errors_setting_reaches_lint_settings() {
        let (settings, _) = ClientSettings::from_value(&json!({"showSyntaxErrors": true, "ignore": ["ALL"]}));
        let lint = settings.apply_to(LintSettings::default());
        assert!(lint.show_syntax_errors);
        assert_eq!(lint.rules, RuleSet::none());
    }
}
