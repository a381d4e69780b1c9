//! One knowledge entry: how to recognise a runtime error and what to do about it.

use std::fmt::Write as _;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::lang::{Label, Lang, Localized};

/// What an out-of-memory message's figures must point to for an entry to apply. Only the
/// out-of-memory entries set it; they share their patterns and `culint explain` picks one of
/// them from the figures in the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Diagnosis {
    GenuineShortage,
    Fragmentation,
    OtherProcesses,
    /// The process hit the cap set with `torch.cuda.set_per_process_memory_fraction`.
    MemoryFraction,
    /// `CUDA error: out of memory` without figures: a CUDA call outside the caching allocator.
    OutsideAllocator,
}

impl Diagnosis {
    /// What the diagnosis is called in prose.
    pub fn label(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (Diagnosis::GenuineShortage, Lang::En) => "genuine shortage",
            (Diagnosis::GenuineShortage, Lang::Zh) => "真正的显存不足",
            (Diagnosis::Fragmentation, Lang::En) => "fragmentation",
            (Diagnosis::Fragmentation, Lang::Zh) => "碎片化",
            (Diagnosis::OtherProcesses, Lang::En) => "other processes",
            (Diagnosis::OtherProcesses, Lang::Zh) => "其他进程占用",
            (Diagnosis::MemoryFraction, Lang::En) => "memory cap of this process",
            (Diagnosis::MemoryFraction, Lang::Zh) => "本进程的显存上限",
            (Diagnosis::OutsideAllocator, Lang::En) => "outside PyTorch's allocator",
            (Diagnosis::OutsideAllocator, Lang::Zh) => "PyTorch 分配器之外",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Diagnosis::GenuineShortage => "genuine-shortage",
            Diagnosis::Fragmentation => "fragmentation",
            Diagnosis::OtherProcesses => "other-processes",
            Diagnosis::MemoryFraction => "memory-fraction",
            Diagnosis::OutsideAllocator => "outside-allocator",
        }
    }
}

/// Where in the user's files `culint explain` looks for the lines behind an error, beyond the
/// lint findings of the entry's related rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Culprits {
    /// The lines that put modules and tensors on a device (`.to(...)`, `.cuda()`, `device=`).
    DevicePlacement,
}

/// The `[match]` table: regexes, one per message variant, and the variants themselves.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    /// Regular expressions (Rust `regex` syntax) searched for in each line of a log.
    pub patterns: Vec<String>,
    /// Real message variants, across PyTorch / CUDA versions, that the patterns must match.
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
    /// The error usually relays another failure (NCCL reporting the CUDA error of a rank), so
    /// `culint explain` lists it after the other errors of the same log.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secondary: bool,
    /// A regex whose first capture group picks the specific error out of the matched line or
    /// the few lines after it, such as the CUDA failure an NCCL error relays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A note about which versions a behaviour or message belongs to.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionNote {
    /// The versions concerned, as written by the project, such as `PyTorch >= 2.1`.
    pub applies_to: String,
    pub note: Localized,
}

/// Something that works, when it applies, and where that is documented.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workaround {
    /// What to do, as an imperative.
    pub action: Localized,
    /// The situation it is for.
    pub when: Localized,
    /// A short example: Python unless `code_lang` says otherwise.
    pub code: String,
    #[serde(default = "default_code_lang")]
    pub code_lang: String,
    /// URLs of the documentation, source or maintainer statement that supports it.
    pub sources: Vec<String>,
}

fn default_code_lang() -> String {
    "python".to_owned()
}

/// Advice that circulates but does not work, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadEnd {
    pub claim: Localized,
    pub why: Localized,
    #[serde(default)]
    pub sources: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub title: String,
    pub url: String,
}

/// The file format of an entry, as written in `knowledge/<group>/<name>.toml`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    pub id: String,
    pub title: Localized,
    #[serde(default)]
    pub related_rules: Vec<String>,
    #[serde(default)]
    pub probe_checks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprits: Option<Culprits>,
    pub cause: Localized,
    #[serde(rename = "match")]
    pub matching: MatchSpec,
    #[serde(default)]
    pub versions: Vec<VersionNote>,
    pub workarounds: Vec<Workaround>,
    #[serde(default)]
    pub dead_ends: Vec<DeadEnd>,
    #[serde(default)]
    pub references: Vec<Reference>,
}

/// A loaded entry: its spec with the patterns compiled.
#[derive(Clone, Debug)]
pub struct Entry {
    pub spec: EntrySpec,
    pub patterns: Vec<Regex>,
    pub detail: Option<Regex>,
}

impl std::ops::Deref for Entry {
    type Target = EntrySpec;

    fn deref(&self) -> &EntrySpec {
        &self.spec
    }
}

impl Entry {
    /// Check a parsed spec and compile its patterns. The error says what is wrong in words a
    /// person editing the file can act on.
    pub fn from_spec(spec: EntrySpec) -> Result<Entry, String> {
        if !valid_id(&spec.id) {
            return Err(format!(
                "id `{}` is not of the form `group/name` (lowercase letters, digits and dashes)",
                spec.id
            ));
        }
        if spec.title.en.trim().is_empty() {
            return Err("`title.en` is empty".to_owned());
        }
        if spec.cause.en.trim().is_empty() {
            return Err("`cause.en` is empty".to_owned());
        }
        if spec.matching.patterns.is_empty() {
            return Err("`match.patterns` is empty: add at least one regular expression".to_owned());
        }
        if spec.workarounds.is_empty() {
            return Err("no `[[workarounds]]`: an entry must say what works".to_owned());
        }
        for (i, workaround) in spec.workarounds.iter().enumerate() {
            if workaround.sources.is_empty() {
                return Err(format!(
                    "workaround {} (`{}`) has no `sources`: cite where it is documented",
                    i + 1,
                    workaround.action.en.trim()
                ));
            }
        }
        if let Some(code) = spec.related_rules.iter().find(|code| !valid_rule_code(code)) {
            return Err(format!("related rule `{code}` is not a rule code such as `CUL101`"));
        }
        let mut patterns = Vec::with_capacity(spec.matching.patterns.len());
        for pattern in &spec.matching.patterns {
            let regex = Regex::new(pattern).map_err(|e| format!("pattern `{pattern}` does not compile: {e}"))?;
            patterns.push(regex);
        }
        let detail = match &spec.matching.detail {
            Some(source) => {
                let regex =
                    Regex::new(source).map_err(|e| format!("`match.detail` `{source}` does not compile: {e}"))?;
                if regex.captures_len() < 2 {
                    return Err(format!("`match.detail` `{source}` needs a capture group around the detail"));
                }
                Some(regex)
            }
            None => None,
        };
        let entry = Entry { spec, patterns, detail };
        if let Some(example) = entry.matching.examples.iter().find(|example| !entry.matches(example)) {
            return Err(format!("example `{example}` is matched by none of the patterns"));
        }
        Ok(entry)
    }

    /// Whether any pattern matches somewhere in `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.patterns.iter().any(|pattern| pattern.is_match(text))
    }

    pub fn diagnosis(&self) -> Option<Diagnosis> {
        self.matching.diagnosis
    }

    /// The whole entry as Markdown, for hover and `culint explain`, in `lang`.
    pub fn to_markdown(&self, lang: Lang) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### {} — `{}`\n", self.title.text(lang), self.id);
        self.write_body_markdown(&mut out, lang);
        out
    }

    /// Everything but the heading, so a report can put its own findings between heading and body.
    pub fn write_body_markdown(&self, out: &mut String, lang: Lang) {
        let colon = lang.colon();
        let _ = writeln!(out, "**{}**{colon}{}\n", Label::Cause.text(lang), self.cause.text(lang));
        let _ = writeln!(out, "**{}**\n", Label::Workarounds.text(lang));
        for (i, workaround) in self.workarounds.iter().enumerate() {
            let _ = writeln!(out, "{}. **{}**", i + 1, workaround.action.text(lang));
            let _ = writeln!(out, "   *{}*{colon}{}", Label::When.text(lang), workaround.when.text(lang));
            let _ = writeln!(out, "   ```{}", workaround.code_lang);
            for line in workaround.code.trim_end().lines() {
                let _ = writeln!(out, "   {line}");
            }
            let _ = writeln!(out, "   ```");
            let _ = writeln!(out, "   *{}*{colon}{}", Label::Source.text(lang), link_list(&workaround.sources));
        }
        out.push('\n');
        if !self.dead_ends.is_empty() {
            let _ = writeln!(out, "**{}**\n", Label::DeadEnds.text(lang));
            for dead_end in &self.dead_ends {
                let _ = write!(
                    out,
                    "- **{}**{}{}",
                    dead_end.claim.text(lang),
                    lang.sentence_gap(),
                    dead_end.why.text(lang)
                );
                if !dead_end.sources.is_empty() {
                    let _ = write!(out, " ({})", link_list(&dead_end.sources));
                }
                out.push('\n');
            }
            out.push('\n');
        }
        if !self.versions.is_empty() {
            let _ = writeln!(out, "**{}**\n", Label::Versions.text(lang));
            for version in &self.versions {
                let _ = writeln!(out, "- *{}*{colon}{}", version.applies_to, version.note.text(lang));
            }
            out.push('\n');
        }
        if !self.related_rules.is_empty() {
            let rules: Vec<String> = self.related_rules.iter().map(|code| rule_label(code)).collect();
            let _ = writeln!(out, "**{}**{colon}{}\n", Label::RelatedRules.text(lang), rules.join(", "));
        }
        if !self.probe_checks.is_empty() {
            let checks: Vec<String> = self.probe_checks.iter().map(|check| format!("`{check}`")).collect();
            let _ = writeln!(out, "**{}**{colon}{}\n", Label::ProbeChecks.text(lang), checks.join(", "));
        }
        if !self.references.is_empty() {
            let _ = writeln!(out, "**{}**\n", Label::References.text(lang));
            for reference in &self.references {
                let _ = writeln!(out, "- [{}]({})", reference.title, reference.url);
            }
            out.push('\n');
        }
    }
}

/// `CUL101` plus its name when the rule is registered, for display.
pub fn rule_label(code: &str) -> String {
    match crate::rules::by_code(code) {
        Some(rule) => format!("`{}` {}", rule.code, rule.name),
        None => format!("`{code}`"),
    }
}

fn link_list(urls: &[String]) -> String {
    urls.iter().map(|url| format!("<{url}>")).collect::<Vec<_>>().join(", ")
}

fn valid_id(id: &str) -> bool {
    let mut parts = id.split('/');
    let (Some(group), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    [group, name].iter().all(|part| {
        !part.is_empty()
            && !part.starts_with('-')
            && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

fn valid_rule_code(code: &str) -> bool {
    code.len() == 6 && code.starts_with("CUL") && code[3..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_group_slash_name() {
        assert!(valid_id("cublas/alloc-failed"));
        assert!(!valid_id("cublas"));
        assert!(!valid_id("cublas/Alloc"));
        assert!(!valid_id("a/b/c"));
        assert!(!valid_id("/b"));
    }

    #[test]
    fn rule_codes_have_three_digits() {
        assert!(valid_rule_code("CUL101"));
        assert!(!valid_rule_code("CUL1"));
        assert!(!valid_rule_code("RUF101"));
    }
}
