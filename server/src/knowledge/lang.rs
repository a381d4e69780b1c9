//! The two languages every human-readable knowledge field is written in, and the few fixed labels
//! that renderers put around those fields.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Zh];

    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// A language tag or a POSIX locale: `en`, `zh`, `zh-CN`, `zh_TW.UTF-8`, `zh-Hans`. Unknown
    /// languages give `None`.
    pub fn parse(tag: &str) -> Option<Lang> {
        let primary = tag.split(['-', '_', '.', '@']).next().unwrap_or("").to_ascii_lowercase();
        match primary.as_str() {
            "en" | "c" | "posix" => Some(Lang::En),
            "zh" => Some(Lang::Zh),
            _ => None,
        }
    }

    /// A colon after a label, in the language's own punctuation.
    pub fn colon(self) -> &'static str {
        match self {
            Lang::En => ": ",
            Lang::Zh => "：",
        }
    }

    /// What separates two sentences: a space in English, nothing in Chinese.
    pub fn sentence_gap(self) -> &'static str {
        match self {
            Lang::En => " ",
            Lang::Zh => "",
        }
    }

    /// The language for an editor or system locale: Chinese for any `zh` locale, English
    /// otherwise, since English is the language every entry is complete in.
    pub fn from_locale(locale: &str) -> Lang {
        Lang::parse(locale).unwrap_or(Lang::En)
    }
}

/// A human-readable text in English and, where written, Chinese. English is required; a missing
/// Chinese text falls back to English (user entries may be English only; built-in ones never are).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Localized {
    pub en: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zh: Option<String>,
}

impl Localized {
    pub fn new(en: impl Into<String>, zh: impl Into<String>) -> Self {
        Self { en: en.into(), zh: Some(zh.into()) }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => self.en.trim(),
            Lang::Zh => self.zh.as_deref().filter(|zh| !zh.trim().is_empty()).unwrap_or(&self.en).trim(),
        }
    }

    /// The text in `lang` with the line breaks of the source file undone: paragraphs (separated
    /// by a blank line) become single lines. Chinese lines are joined without a space.
    pub fn text(&self, lang: Lang) -> String {
        reflow(self.get(lang))
    }

    /// Whether the text exists in `lang` itself, without falling back.
    pub fn has(&self, lang: Lang) -> bool {
        match lang {
            Lang::En => !self.en.trim().is_empty(),
            Lang::Zh => self.zh.as_deref().is_some_and(|zh| !zh.trim().is_empty()),
        }
    }
}

/// Join the lines of each paragraph of `text`; paragraphs stay separated by a blank line.
pub fn reflow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous: Option<char> = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            if previous.is_some() {
                out.push_str("\n\n");
            }
            previous = None;
            continue;
        }
        if let Some(last) = previous {
            let first = line.chars().next().unwrap_or(' ');
            if !(is_cjk(last) || is_cjk(first)) {
                out.push(' ');
            }
        }
        out.push_str(line);
        previous = line.chars().last();
    }
    out.trim_end().to_owned()
}

pub fn is_cjk(c: char) -> bool {
    matches!(c, '\u{2E80}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}')
}

/// Fixed words that renderers print around entry fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    Cause,
    Workarounds,
    When,
    Source,
    DeadEnds,
    Versions,
    RelatedRules,
    ProbeChecks,
    References,
    Seen,
    Ranks,
    CallSite,
    Detail,
    Memory,
    Diagnosis,
    LikelyCauses,
    YourCode,
    NoMatch,
    Analysis,
    Placements,
    FirstFailure,
}

impl Label {
    pub fn text(self, lang: Lang) -> &'static str {
        use Label::*;
        match (self, lang) {
            (Cause, Lang::En) => "Cause",
            (Cause, Lang::Zh) => "原因",
            (Workarounds, Lang::En) => "What works",
            (Workarounds, Lang::Zh) => "可行的办法",
            (When, Lang::En) => "When",
            (When, Lang::Zh) => "适用情形",
            (Source, Lang::En) => "Source",
            (Source, Lang::Zh) => "来源",
            (DeadEnds, Lang::En) => "What does not work",
            (DeadEnds, Lang::Zh) => "无效的做法",
            (Versions, Lang::En) => "Versions",
            (Versions, Lang::Zh) => "版本说明",
            (RelatedRules, Lang::En) => "Related rules",
            (RelatedRules, Lang::Zh) => "相关规则",
            (ProbeChecks, Lang::En) => "Probe checks",
            (ProbeChecks, Lang::Zh) => "探测检查",
            (References, Lang::En) => "References",
            (References, Lang::Zh) => "参考资料",
            (Seen, Lang::En) => "Seen",
            (Seen, Lang::Zh) => "出现",
            (Ranks, Lang::En) => "ranks",
            (Ranks, Lang::Zh) => "进程",
            (CallSite, Lang::En) => "Call site",
            (CallSite, Lang::Zh) => "调用位置",
            (Detail, Lang::En) => "Reported error",
            (Detail, Lang::Zh) => "报告的错误",
            (Memory, Lang::En) => "Memory at the failure",
            (Memory, Lang::Zh) => "出错时的显存",
            (Diagnosis, Lang::En) => "Diagnosis",
            (Diagnosis, Lang::Zh) => "诊断",
            (LikelyCauses, Lang::En) => "Likely causes in your code",
            (LikelyCauses, Lang::Zh) => "代码中可能的原因",
            (YourCode, Lang::En) => "Your code in the traceback",
            (YourCode, Lang::Zh) => "traceback 中你的代码",
            (Analysis, Lang::En) => "What the log shows",
            (Analysis, Lang::Zh) => "日志显示",
            (Placements, Lang::En) => "Where your code places modules and tensors",
            (Placements, Lang::Zh) => "代码中放置模块和张量的位置",
            (FirstFailure, Lang::En) => "Which rank failed first",
            (FirstFailure, Lang::Zh) => "最先失败的进程",
            (NoMatch, Lang::En) => "no known CUDA, cuBLAS, cuDNN or NCCL error found",
            (NoMatch, Lang::Zh) => "未发现已知的 CUDA、cuBLAS、cuDNN 或 NCCL 错误",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_and_locales() {
        assert_eq!(Lang::parse("zh"), Some(Lang::Zh));
        assert_eq!(Lang::parse("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::parse("zh_TW.UTF-8"), Some(Lang::Zh));
        assert_eq!(Lang::parse("EN-us"), Some(Lang::En));
        assert_eq!(Lang::parse("fr"), None);
        assert_eq!(Lang::from_locale("de_DE.UTF-8"), Lang::En);
    }

    #[test]
    fn reflow_joins_lines_of_a_paragraph() {
        assert_eq!(reflow("a b\nc\n\nd\n"), "a b c\n\nd");
        assert_eq!(reflow("显存\n不足，\nCUDA"), "显存不足，CUDA");
    }

    #[test]
    fn chinese_falls_back_to_english() {
        let english_only = Localized { en: "out of memory".into(), zh: None };
        assert_eq!(english_only.get(Lang::Zh), "out of memory");
        assert!(!english_only.has(Lang::Zh));
        let both = Localized::new("out of memory", "显存不足");
        assert_eq!(both.get(Lang::Zh), "显存不足");
    }
}
