//! Explain the CUDA / cuBLAS / cuDNN / NCCL errors in an error message or a whole log.
//!
//! [`explain`] finds every error the knowledge base knows in a text, however long and noisy:
//! multi-rank output is regrouped per rank first ([`streams`]), repeats across ranks are merged
//! into one finding that names the ranks, out-of-memory messages are read for their figures and
//! matched to the entry they point to ([`oom`]), multi-rank logs are read for the collective each
//! rank timed out in and for torchrun's root cause, so the report can say which rank failed first
//! ([`distributed`]), and the user's own files in the tracebacks are linted for likely causes
//! ([`traceback`]).
//!
//! # Stable API (used by the language server)
//!
//! - [`explain_markdown`]`(text, lang) -> String`: the report as Markdown, built-in entries,
//!   no linting. An empty string means nothing was recognised.
//! - [`explain`]`(text, &base, &options) -> Report` and [`Report::to_markdown`],
//!   [`Report::to_text`], [`Report::to_json`].

pub mod distributed;
pub mod oom;
mod render;
pub mod streams;
pub mod traceback;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::knowledge::{Base, Culprits, Diagnosis, Entry, Lang, builtin};
use oom::OomAnalysis;
use streams::Stream;
use traceback::{CodeFinding, Frame, LocalFrame, Placement};

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
    /// Lines of those files that the entry's `culprits` points to, such as device placements.
    pub placements: Vec<Placement>,
    /// What the log says about this error beyond its lines, in the report's language: the
    /// collective each rank timed out in, torchrun's root cause and exit codes.
    pub notes: Vec<String>,
}

/// The rank that failed first in a multi-rank log, and what the other ranks did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FirstFailure {
    /// As the log names it (`rank1`), or `rank1` from torchrun's summary.
    pub rank: String,
    /// The id of the first error that rank reported, when the log holds one.
    pub entry: Option<String>,
    /// 1-based line of that error.
    pub line: Option<usize>,
    /// torchrun's `Root Cause (first observed failure)` named this rank.
    pub from_summary: bool,
    pub exit_code: Option<i32>,
    /// Ranks whose only errors relay another rank's failure (a peer lost, a timeout).
    pub followers: Vec<String>,
    /// Other ranks with errors of their own.
    pub also_failed: Vec<String>,
}

#[derive(Debug)]
pub struct Report<'b> {
    pub lang: Lang,
    /// Lines in the input.
    pub line_count: usize,
    /// In order of first appearance: the earliest error is usually the root cause.
    pub findings: Vec<Finding<'b>>,
    /// Set for logs of several ranks, or with torchrun's failure summary.
    pub first_failure: Option<FirstFailure>,
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
            None => diagnosis == figureless_diagnosis(streams[hit.stream].line(hit.line)),
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
                placements: Vec::new(),
                notes: Vec::new(),
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

    // torchrun's summary is read only when an error line reports a failed worker.
    let reports_failure = findings.iter().any(|f| f.occurrences.iter().any(|o| reports_worker_failure(&o.message)));
    let summary = streams.iter().filter(|_| reports_failure).find_map(|stream| {
        let lines: Vec<&str> = (0..stream.line_count()).map(|index| stream.line(index)).collect();
        distributed::torchrun_summary(&lines)
    });
    for finding in &mut findings {
        streams::sort_ranks(&mut finding.ranks);
        finding.notes = distributed::timeout_notes(&distributed::timeouts(&finding.occurrences), options.lang);
        if let Some(summary) = &summary
            && finding.occurrences.iter().any(|o| reports_worker_failure(&o.message))
        {
            finding.notes.extend(distributed::summary_notes(summary, options.lang));
        }
        if let Some(root) = &options.lint_root {
            finding.local_frames = traceback::local_frames(&finding.frames, root);
            finding.likely_causes = traceback::likely_causes(&finding.local_frames, &finding.entry.related_rules);
            if finding.entry.culprits == Some(Culprits::DevicePlacement) {
                finding.placements = traceback::placements(&finding.local_frames);
            }
        }
    }
    let first_failure = first_failure(&findings, summary.as_ref());
    // Errors that relay another failure go last; the sort is stable, so first appearance
    // still orders each group.
    findings.sort_by_key(|finding| finding.entry.matching.secondary);
    Report { lang: options.lang, line_count: text.lines().count(), findings, first_failure }
}

/// What an out-of-memory line without readable figures points to. The caching allocator's own
/// message (`CUDA out of memory. Tried to allocate ...`) always has them, so a cut-off one is
/// still this process's allocation; `CUDA error: out of memory` comes from outside the allocator.
fn figureless_diagnosis(line: &str) -> Diagnosis {
    if line.contains("CUDA out of memory.") { Diagnosis::GenuineShortage } else { Diagnosis::OutsideAllocator }
}

/// torchrun's summary or its agent's line about a failed worker.
fn reports_worker_failure(message: &str) -> bool {
    message.contains("ChildFailedError") || message.contains("failed (exitcode:")
}

/// Which rank failed first: the one torchrun names as the root cause, or else the rank whose
/// error that does not relay another appears earliest. `None` for single-process logs.
fn first_failure(findings: &[Finding<'_>], summary: Option<&distributed::TorchrunSummary>) -> Option<FirstFailure> {
    // Per rank, its errors in log order: (line, entry id, relays another error).
    let mut by_rank: HashMap<&str, Vec<(usize, &str, bool)>> = HashMap::new();
    for finding in findings {
        for occurrence in &finding.occurrences {
            if let Some(rank) = &occurrence.rank {
                by_rank.entry(rank.as_str()).or_default().push((
                    occurrence.line,
                    finding.entry.id.as_str(),
                    finding.entry.matching.secondary,
                ));
            }
        }
    }
    for errors in by_rank.values_mut() {
        errors.sort();
    }
    let root = summary.and_then(|summary| summary.root_cause.as_ref());
    let named_by_summary = root.and_then(|root| match (root.rank, root.local_rank) {
        (Some(rank), _) => Some(
            by_rank
                .keys()
                .find(|name| distributed::global_rank(name) == Some(rank))
                .map_or_else(|| format!("rank{rank}"), |name| (*name).to_owned()),
        ),
        // The agent's own line names only the local rank, which is the `defaultN` tag.
        (None, Some(local)) => {
            let tag = format!("default{local}");
            by_rank.contains_key(tag.as_str()).then_some(tag)
        }
        (None, None) => None,
    });
    if named_by_summary.is_none() && by_rank.len() < 2 {
        return None;
    }
    let rank = match named_by_summary.clone() {
        Some(rank) => rank,
        None => by_rank
            .iter()
            .filter_map(|(rank, errors)| {
                errors.iter().find(|(_, _, relays)| !relays).map(|(line, _, _)| (*line, *rank))
            })
            .min()?
            .1
            .to_owned(),
    };
    let own = by_rank.get(rank.as_str());
    let first = own.and_then(|errors| errors.iter().find(|(_, _, relays)| !relays).or_else(|| errors.first()));
    let mut followers = Vec::new();
    let mut also_failed = Vec::new();
    for (name, errors) in &by_rank {
        if *name == rank {
            continue;
        }
        if errors.iter().all(|(_, _, relays)| *relays) {
            followers.push((*name).to_owned());
        } else {
            also_failed.push((*name).to_owned());
        }
    }
    streams::sort_ranks(&mut followers);
    streams::sort_ranks(&mut also_failed);
    Some(FirstFailure {
        rank,
        entry: first.map(|(_, id, _)| (*id).to_owned()),
        line: first.map(|(line, _, _)| *line),
        from_summary: named_by_summary.is_some(),
        exit_code: if named_by_summary.is_some() { root.and_then(|root| root.exit_code) } else { None },
        followers,
        also_failed,
    })
}

/// Lines after a match in which an entry's `detail` may appear ("Last error:" then the failure).
const DETAIL_LINES: usize = 3;

fn find_detail(entry: &Entry, stream: &Stream, line: usize) -> Option<String> {
    let detail = entry.detail.as_ref()?;
    let last = (line + DETAIL_LINES).min(stream.line_count() - 1);
    // A pattern may offer alternatives, each with its own group: the first that took part.
    (line..=last).find_map(|index| {
        let captures = detail.captures(stream.line(index))?;
        captures.iter().skip(1).flatten().next().map(|m| m.as_str().trim().to_owned())
    })
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
