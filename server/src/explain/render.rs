//! A report as terminal text, Markdown (hover, chat, issue comments) and JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::oom::format_bytes;
use super::{Finding, Report};
use crate::knowledge::{Label, Lang, is_cjk, rule_label};

/// ANSI styles, or nothing when colour is off.
#[derive(Clone, Copy)]
struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.on { format!("\u{1b}[{code}m{text}\u{1b}[0m") } else { text.to_owned() }
    }
    fn title(self, text: &str) -> String {
        self.wrap("1;31", text)
    }
    fn heading(self, text: &str) -> String {
        self.wrap("1;36", text)
    }
    fn strong(self, text: &str) -> String {
        self.wrap("1", text)
    }
    fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
    fn warn(self, text: &str) -> String {
        self.wrap("1;33", text)
    }
}

/// Log lines longer than this are cut in terminal output (JSON keeps them whole).
const MAX_MESSAGE_CHARS: usize = 240;

fn shorten(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_owned(),
    }
}

/// Width that English paragraphs are wrapped to on a terminal.
const WRAP: usize = 100;
/// Repeated occurrences are summarised; a few are listed so their lines can be found.
const LISTED_OCCURRENCES: usize = 3;

fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    // Chinese has no spaces to break at and its characters are double width; the terminal
    // wraps it better than a word wrapper would.
    if text.chars().any(is_cjk) {
        for paragraph in text.split("\n\n") {
            let _ = writeln!(out, "{indent}{paragraph}");
        }
        return out;
    }
    for (i, paragraph) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut line = String::new();
        for word in paragraph.split(' ') {
            if !line.is_empty() && line.chars().count() + word.chars().count() + 1 > WRAP - indent.len() {
                let _ = writeln!(out, "{indent}{line}");
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            let _ = writeln!(out, "{indent}{line}");
        }
    }
    out
}

/// Up to [`LISTED_OCCURRENCES`] occurrences with different messages: the same line from 64
/// ranks differs only in its numbers, so messages are compared with digits masked.
fn distinct_occurrences<'f>(finding: &'f Finding<'_>) -> Vec<&'f super::Occurrence> {
    let mask = |message: &str| message.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect::<String>();
    let mut seen = Vec::new();
    let mut listed = Vec::new();
    for occurrence in &finding.occurrences {
        let key = mask(&occurrence.message);
        if !seen.contains(&key) {
            seen.push(key);
            listed.push(occurrence);
            if listed.len() == LISTED_OCCURRENCES {
                break;
            }
        }
    }
    listed
}

fn seen_line(finding: &Finding<'_>, lang: Lang) -> String {
    let first = &finding.occurrences[0];
    let count = finding.count;
    let mut out = match lang {
        Lang::En => format!("line {}", first.line),
        Lang::Zh => format!("第 {} 行", first.line),
    };
    if count > 1 {
        let _ = match lang {
            Lang::En => write!(out, ", {count} times"),
            Lang::Zh => write!(out, "，共 {count} 次"),
        };
    }
    let _ = match (lang, finding.ranks.as_slice()) {
        (_, []) => Ok(()),
        (Lang::En, [rank]) => write!(out, " on {rank}"),
        (Lang::En, ranks) => write!(out, " on {} ({})", Label::Ranks.text(lang), ranks.join(", ")),
        (Lang::Zh, ranks) => write!(out, "，{}：{}", Label::Ranks.text(lang), ranks.join("，")),
    };
    out
}

/// `train.py:10 in train_step: logits = model(batch.cuda())`.
fn frame_text(frame: &super::traceback::LocalFrame) -> String {
    let mut text = format!("{}:{}", frame.path, frame.line);
    if let Some(function) = &frame.function {
        text.push_str(&format!(" in {function}"));
    }
    if let Some(source) = &frame.source {
        text.push_str(&format!(": {source}"));
    }
    text
}

fn undetermined_note(finding: &Finding<'_>, lang: Lang) -> &'static str {
    if finding.entry.diagnosis() != Some(crate::knowledge::Diagnosis::OutsideAllocator) {
        return match lang {
            Lang::En => {
                "The message's memory figures are cut off, so a genuine shortage cannot be told apart from fragmentation (cuda/oom-fragmentation) or memory held by other processes (cuda/oom-other-processes); the full PyTorch message, or `torch.cuda.memory_summary()`, tells them apart."
            }
            Lang::Zh => {
                "消息中的显存数字不完整，无法区分真正的显存不足、碎片化（cuda/oom-fragmentation）和其他进程占用（cuda/oom-other-processes）；完整的 PyTorch 报错消息或 `torch.cuda.memory_summary()` 可以区分它们。"
            }
        };
    }
    match lang {
        Lang::En => {
            "The message carries no memory figures: PyTorch's caching allocator always prints them, so the failing allocation was made by a CUDA call outside it. At a process's first GPU operation that means other processes hold the GPU; later on, this process's own tensors may have filled it (`nvidia-smi` and `torch.cuda.memory_summary()` tell which)."
        }
        Lang::Zh => {
            "消息中没有显存数字：PyTorch 的缓存分配器总会打印这些数字，所以失败的分配来自它之外的某个 CUDA 调用。如果发生在进程的第一次 GPU 操作，说明 GPU 被其他进程占用；如果发生得更晚，也可能是本进程自己的张量占满了 GPU（`nvidia-smi` 和 `torch.cuda.memory_summary()` 可以区分）。"
        }
    }
}

/// `rank1 failed first: cuda/device-mismatch, line 12 (torchrun's root cause, exit code 1);
/// only followed: rank0, rank2`.
fn first_failure_text(first: &super::FirstFailure, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut out = first.rank.clone();
    match (&first.entry, first.line) {
        (Some(entry), Some(line)) if zh => out.push_str(&format!("——{entry}，第 {line} 行")),
        (Some(entry), Some(line)) => out.push_str(&format!(": {entry}, line {line}")),
        _ => {}
    }
    if first.from_summary {
        let code = first.exit_code.map_or_else(String::new, |code| {
            if zh { format!("，退出码 {code}") } else { format!(", exit code {code}") }
        });
        out.push_str(&if zh {
            format!("（torchrun 报告的根因{code}）")
        } else {
            format!(" (torchrun's root cause{code})")
        });
    }
    if !first.also_failed.is_empty() {
        out.push_str(&if zh {
            format!("；也有自己的错误：{}", first.also_failed.join("，"))
        } else {
            format!("; also failed on their own: {}", first.also_failed.join(", "))
        });
    }
    if !first.followers.is_empty() {
        out.push_str(&if zh {
            format!("；只是随之失败：{}", first.followers.join("，"))
        } else {
            format!("; only followed: {}", first.followers.join(", "))
        });
    }
    out
}

impl Report<'_> {
    /// Markdown, in the report's language.
    pub fn to_markdown(&self) -> String {
        let lang = self.lang;
        let mut out = String::new();
        if let Some(first) = &self.first_failure {
            let _ = writeln!(
                out,
                "**{}**{}{}\n",
                Label::FirstFailure.text(lang),
                lang.colon(),
                first_failure_text(first, lang)
            );
        }
        for finding in &self.findings {
            let entry = finding.entry;
            let _ = writeln!(out, "### {} — `{}`\n", entry.title.text(lang), entry.id);
            let colon = lang.colon();
            let _ = writeln!(out, "**{}**{colon}{}\n", Label::Seen.text(lang), seen_line(finding, lang));
            let _ = writeln!(out, "```text\n{}\n```\n", finding.occurrences[0].message);
            if !finding.call_sites.is_empty() {
                let calls: Vec<String> = finding.call_sites.iter().map(|c| format!("`{c}`")).collect();
                let _ = writeln!(out, "**{}**{colon}{}\n", Label::CallSite.text(lang), calls.join(", "));
            }
            if !finding.details.is_empty() {
                let details: Vec<String> = finding.details.iter().map(|d| format!("`{d}`")).collect();
                let _ = writeln!(out, "**{}**{colon}{}\n", Label::Detail.text(lang), details.join(", "));
            }
            if let Some(oom) = &finding.oom {
                let _ = writeln!(
                    out,
                    "**{}** ({}{colon}{})\n",
                    Label::Memory.text(lang),
                    Label::Diagnosis.text(lang),
                    oom.diagnosis.label(lang)
                );
                for reason in &oom.reasons {
                    let _ = writeln!(out, "- {reason}");
                }
                out.push('\n');
            }
            if finding.undetermined {
                let _ = writeln!(out, "*{}*\n", undetermined_note(finding, lang));
            }
            if !finding.notes.is_empty() {
                let _ = writeln!(out, "**{}**\n", Label::Analysis.text(lang));
                for note in &finding.notes {
                    let _ = writeln!(out, "- {note}");
                }
                out.push('\n');
            }
            if !finding.local_frames.is_empty() {
                let _ = writeln!(out, "**{}**\n", Label::YourCode.text(lang));
                for frame in &finding.local_frames {
                    let _ = writeln!(out, "- `{}`", frame_text(frame));
                }
                out.push('\n');
            }
            if !finding.likely_causes.is_empty() {
                let _ = writeln!(out, "**{}**\n", Label::LikelyCauses.text(lang));
                for cause in &finding.likely_causes {
                    let _ = writeln!(
                        out,
                        "- `{}:{}:{}` **{}** {}: {}",
                        cause.path, cause.line, cause.column, cause.code, cause.name, cause.message
                    );
                }
                out.push('\n');
            }
            if !finding.placements.is_empty() {
                let _ = writeln!(out, "**{}**\n", Label::Placements.text(lang));
                for placement in &finding.placements {
                    let _ = writeln!(out, "- `{}:{}`: `{}`", placement.path, placement.line, placement.source);
                }
                out.push('\n');
            }
            entry.write_body_markdown(&mut out, lang);
        }
        out
    }

    /// Terminal text; `color` adds ANSI styles.
    pub fn to_text(&self, color: bool) -> String {
        let paint = Paint { on: color };
        let lang = self.lang;
        let mut out = String::new();
        if let Some(first) = &self.first_failure {
            let line = format!("{}{}{}", Label::FirstFailure.text(lang), lang.colon(), first_failure_text(first, lang));
            let _ = writeln!(out, "{}\n", paint.warn(&line));
        }
        for (i, finding) in self.findings.iter().enumerate() {
            let entry = finding.entry;
            if i > 0 {
                out.push('\n');
            }
            let _ =
                writeln!(out, "{} {}", paint.title(&format!("[{}]", entry.id)), paint.strong(&entry.title.text(lang)));
            let _ = writeln!(out, "  {} {}", paint.dim("-->"), seen_line(finding, lang));
            let listed = distinct_occurrences(finding);
            for occurrence in &listed {
                let rank = occurrence.rank.as_deref().map(|r| format!("[{r}] ")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  {} {rank}{}",
                    paint.dim(&format!("{:>6} |", occurrence.line)),
                    shorten(&occurrence.message)
                );
            }
            if finding.count > listed.len() {
                let more = finding.count - listed.len();
                let _ = writeln!(
                    out,
                    "  {}",
                    paint.dim(&match lang {
                        Lang::En => format!("       | … {more} more"),
                        Lang::Zh => format!("       | … 另有 {more} 处"),
                    })
                );
            }
            if !finding.call_sites.is_empty() {
                let _ =
                    writeln!(out, "  {}{}{}", Label::CallSite.text(lang), lang.colon(), finding.call_sites.join(", "));
            }
            if !finding.details.is_empty() {
                let _ = writeln!(out, "  {}{}{}", Label::Detail.text(lang), lang.colon(), finding.details.join(", "));
            }
            if let Some(oom) = &finding.oom {
                let _ = writeln!(out, "\n{}", paint.heading(Label::Memory.text(lang)));
                let diagnosis = format!("{}{}{}", Label::Diagnosis.text(lang), lang.colon(), oom.diagnosis.label(lang));
                let _ = writeln!(out, "  {}", paint.warn(&diagnosis));
                for reason in &oom.reasons {
                    let _ = writeln!(out, "  - {reason}");
                }
            }
            if finding.undetermined {
                let _ = write!(out, "\n{}", wrap(undetermined_note(finding, lang), "  "));
            }
            if !finding.notes.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::Analysis.text(lang)));
                for note in &finding.notes {
                    let _ = writeln!(out, "  - {note}");
                }
            }
            if !finding.local_frames.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::YourCode.text(lang)));
                for frame in &finding.local_frames {
                    let _ = writeln!(out, "  {}", frame_text(frame));
                }
            }
            if !finding.likely_causes.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::LikelyCauses.text(lang)));
                for cause in &finding.likely_causes {
                    let _ = writeln!(
                        out,
                        "  {}:{}:{} {} {}: {}",
                        cause.path,
                        cause.line,
                        cause.column,
                        paint.warn(cause.code),
                        cause.name,
                        cause.message
                    );
                }
            }
            if !finding.placements.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::Placements.text(lang)));
                for placement in &finding.placements {
                    let _ = writeln!(out, "  {}:{}: {}", placement.path, placement.line, placement.source);
                }
            }
            let _ =
                write!(out, "\n{}\n{}", paint.heading(Label::Cause.text(lang)), wrap(&entry.cause.text(lang), "  "));
            let _ = writeln!(out, "\n{}", paint.heading(Label::Workarounds.text(lang)));
            for (n, workaround) in entry.workarounds.iter().enumerate() {
                let _ = writeln!(out, "  {}. {}", n + 1, paint.strong(&workaround.action.text(lang)));
                let _ = write!(
                    out,
                    "{}",
                    wrap(&format!("{}{}{}", Label::When.text(lang), lang.colon(), workaround.when.text(lang)), "     ")
                );
                for line in workaround.code.trim_end().lines() {
                    let _ = writeln!(out, "       {}", paint.dim(line));
                }
                let label = Label::Source.text(lang);
                for (i, source) in workaround.sources.iter().enumerate() {
                    let lead =
                        if i == 0 { format!("{label}{}", lang.colon()) } else { " ".repeat(label.chars().count() + 2) };
                    let _ = writeln!(out, "     {lead}{source}");
                }
            }
            if !entry.dead_ends.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::DeadEnds.text(lang)));
                for dead_end in &entry.dead_ends {
                    let line =
                        format!("✗ {}{}{}", dead_end.claim.text(lang), lang.sentence_gap(), dead_end.why.text(lang));
                    let _ = write!(out, "{}", wrap(&line, "  "));
                }
            }
            if !entry.versions.is_empty() {
                let _ = writeln!(out, "\n{}", paint.heading(Label::Versions.text(lang)));
                for version in &entry.versions {
                    let line = format!("{}{}{}", version.applies_to, lang.colon(), version.note.text(lang));
                    let _ = write!(out, "{}", wrap(&line, "  "));
                }
            }
            if !entry.related_rules.is_empty() {
                let rules: Vec<String> =
                    entry.related_rules.iter().map(|code| rule_label(code).replace('`', "")).collect();
                let _ = writeln!(
                    out,
                    "\n{}{}{}",
                    paint.heading(Label::RelatedRules.text(lang)),
                    lang.colon(),
                    rules.join(", ")
                );
            }
            if !entry.probe_checks.is_empty() {
                let _ = writeln!(
                    out,
                    "{}{}{}",
                    paint.heading(Label::ProbeChecks.text(lang)),
                    lang.colon(),
                    entry.probe_checks.join(", ")
                );
            }
            if !entry.references.is_empty() {
                let _ = writeln!(out, "{}", paint.heading(Label::References.text(lang)));
                for reference in &entry.references {
                    let _ = writeln!(out, "  {} <{}>", reference.title, reference.url);
                }
            }
        }
        out
    }

    /// Machine-readable form: every occurrence, the parsed figures in bytes, and the entry's
    /// fields in the report's language.
    pub fn to_json(&self) -> Value {
        let lang = self.lang;
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|finding| {
                let entry = finding.entry;
                let oom = finding.oom.as_ref().map(|oom| {
                    json!({
                        "diagnosis": oom.diagnosis,
                        "figures": oom.figures,
                        "other_memory": oom.other_memory,
                        "reasons": oom.reasons,
                        "readable": {
                            "requested": format_bytes(oom.figures.requested),
                            "total": format_bytes(oom.figures.total),
                            "free": format_bytes(oom.figures.free),
                            "allocated": format_bytes(oom.figures.allocated),
                            "reserved": format_bytes(oom.figures.reserved),
                        },
                    })
                });
                json!({
                    "id": entry.id,
                    "title": entry.title.text(lang),
                    "count": finding.count,
                    "ranks": finding.ranks,
                    "occurrences": finding.occurrences,
                    "call_sites": finding.call_sites,
                    "details": finding.details,
                    "oom": oom,
                    "oom_figures_missing": finding.undetermined,
                    "frames": finding.frames,
                    "local_frames": finding.local_frames,
                    "likely_causes": finding.likely_causes,
                    "placements": finding.placements,
                    "notes": finding.notes,
                    "cause": entry.cause.text(lang),
                    "workarounds": entry.workarounds.iter().map(|w| json!({
                        "action": w.action.text(lang),
                        "when": w.when.text(lang),
                        "code": w.code,
                        "code_lang": w.code_lang,
                        "sources": w.sources,
                    })).collect::<Vec<_>>(),
                    "dead_ends": entry.dead_ends.iter().map(|d| json!({
                        "claim": d.claim.text(lang),
                        "why": d.why.text(lang),
                        "sources": d.sources,
                    })).collect::<Vec<_>>(),
                    "versions": entry.versions.iter().map(|v| json!({
                        "applies_to": v.applies_to,
                        "note": v.note.text(lang),
                    })).collect::<Vec<_>>(),
                    "related_rules": entry.related_rules,
                    "probe_checks": entry.probe_checks,
                    "references": entry.references,
                })
            })
            .collect();
        json!({
            "lang": lang,
            "lines": self.line_count,
            "matched": !self.findings.is_empty(),
            "first_failure": self.first_failure,
            "findings": findings,
        })
    }
}
