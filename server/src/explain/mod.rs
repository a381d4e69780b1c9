//! Explain the CUDA / cuBLAS / cuDNN / NCCL errors in an error message or a whole log.
//!
//! [`explain`] finds every error the knowledge base knows in a text, however long and noisy:
//! multi-rank output is regrouped per rank first ([`streams`]), repeats across ranks are merged
//! into one finding that names the ranks, out-of-memory messages are read for their figures and
//! matched to the entry they point to ([`oom`]), and the user's own files in the tracebacks are
//! linted for likely causes ([`traceback`]).
//!
//! # Stable API (used by the language server)
//!
//! - [`explain_markdown`]`(text, lang) -> String`: the report as Markdown, built-in entries,
//!   no linting. An empty string means nothing was recognised.
//! - [`explain`]`(text, &base, &options) -> Report` and [`Report::to_markdown`],
//!   [`Report::to_text`], [`Report::to_json`].

pub mod oom;
mod render;
pub mod streams;
pub mod traceback;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::knowledge::{Base, Diagnosis, Entry, Lang, builtin};
use oom::OomAnalysis;
use streams::Stream;
use traceback::{CodeFinding, Frame, LocalFrame};

#[derive(Clone, Debug, Default)]
pub struct ExplainOptions {
    pub lang: Lang,
    /// Resolve traceback paths against this directory and lint the files found there. `None`
    /// turns linting off.
    pub lint_root: Option<PathBuf>,
}

/// One place in the log where an error was seen.
#[derive(Clone, Debug, Serialize)]
pub struct Occurrence {
    /// 1-based line in the input.
    pub line: usize,
    pub rank: Option<String>,
    /// The line, without its rank prefix.
    pub message: String,
}

/// One known error, with every place it was seen.
#[derive(Debug)]
pub struct Finding<'b> {
    pub entry: &'b Entry,
    /// How many times the error was seen in all.
    pub count: usize,
    /// The first [`MAX_OCCURRENCES`] places it was seen.
    pub occurrences: Vec<Occurrence>,
    /// The ranks that reported it, sorted; empty when the log has no rank prefixes.
    pub ranks: Vec<String>,
    /// Library calls named by the messages, such as `cublasCreate`.
    pub call_sites: Vec<String>,
    /// What the entry's `detail` pattern picked out, such as `out of memory` behind an NCCL error.
    pub details: Vec<String>,
    /// The figures of the first out-of-memory message that had them, and what they point to.
    pub oom: Option<OomAnalysis>,
    /// Set for out-of-memory messages without figures: why the diagnosis is a default.
    pub undetermined: bool,
    /// Traceback frames that led to the error, outermost first, without duplicates.
    pub frames: Vec<Frame>,
    /// The frames of the user's own files that exist on this machine (needs a lint root).
    pub local_frames: Vec<LocalFrame>,
    /// Lint findings in those files near the frames, or of the entry's related rules.
    pub likely_causes: Vec<CodeFinding>,
}

#[derive(Debug)]
pub struct Report<'b> {
    pub lang: Lang,
    /// Lines in the input.
    pub line_count: usize,
    /// In order of first appearance: the earliest error is usually the root cause.
    pub findings: Vec<Finding<'b>>,
}

impl Report<'_> {
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Explain `text` in `lang` with the built-in entries, as Markdown; empty when nothing is known.
pub fn explain_markdown(text: &str, lang: Lang) -> String {
    let report = explain(text, builtin(), &ExplainOptions { lang, lint_root: None });
    if report.is_empty() { String::new() } else { report.to_markdown() }
}

static CALL_SITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"when calling `\s*([A-Za-z_]\w*)").expect("call-site pattern compiles"));

/// Occurrences kept per finding: a device assertion can print one line per GPU thread, and a
/// report listing a million of them helps nobody. `Finding::count` keeps the total.
pub const MAX_OCCURRENCES: usize = 200;

/// An out-of-memory message spans one line, but tools that wrap long lines split it; this many
/// following lines are read for missing figures.
const OOM_CONTINUATION_LINES: usize = 3;

struct Hit {
    stream: usize,
    line: usize,
    entry: usize,
}

pub fn explain<'b>(text: &str, base: &'b Base, options: &ExplainOptions) -> Report<'b> {
    let streams = streams::split(text);
    let entries = base.entries();
    let mut hits = Vec::new();
    for (stream_index, stream) in streams.iter().enumerate() {
        // Patterns are matched line by line; the combined pattern finds the candidate lines.
        let candidates: BTreeSet<usize> =
            base.any_pattern().find_iter(&stream.text).map(|m| stream.line_index(m.start())).collect();
        for line in candidates {
            for entry_index in base.entries_matching(stream.line(line)) {
                hits.push(Hit { stream: stream_index, line, entry: entry_index });
            }
        }
    }

    // Out-of-memory entries share their patterns; the figures of each message pick one.
    let mut analyses: HashMap<(usize, usize), Option<OomAnalysis>> = HashMap::new();
    hits.retain(|hit| {
        let Some(diagnosis) = entries[hit.entry].diagnosis() else {
            return true;
        };
        let analysis = analyses
            .entry((hit.stream, hit.line))
            .or_insert_with(|| oom_analysis(&streams[hit.stream], hit.line, options.lang));
        match analysis {
            Some(analysis) => analysis.diagnosis == diagnosis,
            None => diagnosis == Diagnosis::GenuineShortage,
        }
    });
    hits.sort_by_key(|hit| (streams[hit.stream].original_line(hit.line), hit.entry));

    let mut findings: Vec<Finding<'b>> = Vec::new();
    let mut finding_of_entry: HashMap<usize, usize> = HashMap::new();
    let mut traced_streams: HashSet<(usize, usize)> = HashSet::new();
    for hit in &hits {
        let stream = &streams[hit.stream];
        let position = *finding_of_entry.entry(hit.entry).or_insert_with(|| {
            findings.push(Finding {
                entry: &entries[hit.entry],
                count: 0,
                occurrences: Vec::new(),
                ranks: Vec::new(),
                call_sites: Vec::new(),
                details: Vec::new(),
                oom: None,
                undetermined: false,
                frames: Vec::new(),
                local_frames: Vec::new(),
                likely_causes: Vec::new(),
            });
            findings.len() - 1
        });
        let finding = &mut findings[position];
        let message = stream.line(hit.line).trim().to_owned();
        if let Some(call) = CALL_SITE.captures(&message)
            && !finding.call_sites.iter().any(|known| known == &call[1])
        {
            finding.call_sites.push(call[1].to_owned());
        }
        if let Some(detail) = find_detail(finding.entry, stream, hit.line)
            && !finding.details.contains(&detail)
        {
            finding.details.push(detail);
        }
        if let Some(rank) = &stream.rank
            && !finding.ranks.contains(rank)
        {
            finding.ranks.push(rank.clone());
        }
        if finding.entry.diagnosis().is_some() && finding.oom.is_none() {
            match analyses.get(&(hit.stream, hit.line)).cloned().flatten() {
                Some(analysis) => {
                    finding.oom = Some(analysis);
                    finding.undetermined = false;
                }
                None => finding.undetermined = true,
            }
        }
        // Repeats in one stream (an assertion printed by every GPU thread) share a traceback.
        if traced_streams.insert((position, hit.stream)) {
            for frame in traceback::frames_before(stream, hit.line) {
                if !finding.frames.contains(&frame) {
                    finding.frames.push(frame);
                }
            }
        }
        finding.count += 1;
        if finding.occurrences.len() < MAX_OCCURRENCES {
            finding.occurrences.push(Occurrence {
                line: stream.original_line(hit.line),
                rank: stream.rank.clone(),
                message,
            });
        }
    }

    for finding in &mut findings {
        streams::sort_ranks(&mut finding.ranks);
        if let Some(root) = &options.lint_root {
            finding.local_frames = traceback::local_frames(&finding.frames, root);
            finding.likely_causes = traceback::likely_causes(&finding.local_frames, &finding.entry.related_rules);
        }
    }
    // Errors that relay another failure go last; the sort is stable, so first appearance
    // still orders each group.
    findings.sort_by_key(|finding| finding.entry.matching.secondary);
    Report { lang: options.lang, line_count: text.lines().count(), findings }
}

/// Lines after a match in which an entry's `detail` may appear ("Last error:" then the failure).
const DETAIL_LINES: usize = 3;

fn find_detail(entry: &Entry, stream: &Stream, line: usize) -> Option<String> {
    let detail = entry.detail.as_ref()?;
    let last = (line + DETAIL_LINES).min(stream.line_count() - 1);
    (line..=last).find_map(|index| detail.captures(stream.line(index)).map(|c| c[1].trim().to_owned()))
}

fn oom_analysis(stream: &Stream, line: usize, lang: Lang) -> Option<OomAnalysis> {
    let last = (line + OOM_CONTINUATION_LINES).min(stream.line_count() - 1);
    let mut context = String::new();
    for index in line..=last {
        context.push_str(stream.line(index));
        context.push(' ');
        if let Some(figures) = oom::parse(&context) {
            return Some(oom::analyse(figures, lang));
        }
    }
    None
}
