//! What a multi-rank log says beyond its error lines: the collective each rank timed out in,
//! torchrun's summary of which worker failed first, and the ranks that only followed.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::Occurrence;
use crate::knowledge::Lang;

/// `[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE,
/// NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.`
static WATCHDOG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)",
    )
    .expect("watchdog pattern compiles")
});

/// The collective one rank timed out in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timeout {
    pub rank: Option<u32>,
    pub seq: u64,
    pub op: String,
}

/// The rank number of a launcher prefix such as `rank3` or `worker-1 rank7`; `None` for agent
/// tags (`default1` is a local rank) and Slurm tasks.
pub fn global_rank(name: &str) -> Option<u32> {
    let last = name.rsplit(' ').next()?;
    last.strip_prefix("rank")?.parse().ok()
}

/// The timeouts in `occurrences`, one per rank: a rank's earliest pending collective is the one
/// that hung (the watchdog may list later ones too).
pub fn timeouts(occurrences: &[Occurrence]) -> Vec<Timeout> {
    let mut by_rank: BTreeMap<Option<u32>, Timeout> = BTreeMap::new();
    for occurrence in occurrences {
        let Some(c) = WATCHDOG.captures(&occurrence.message) else {
            continue;
        };
        let rank = c
            .name("rank")
            .and_then(|m| m.as_str().parse().ok())
            .or_else(|| occurrence.rank.as_deref().and_then(global_rank));
        let timeout = Timeout { rank, seq: c["seq"].parse().unwrap_or(0), op: c["op"].to_owned() };
        by_rank
            .entry(rank)
            .and_modify(|known| {
                if timeout.seq < known.seq {
                    *known = timeout.clone()
                }
            })
            .or_insert(timeout);
    }
    by_rank.into_values().collect()
}

/// `rank 7` or `ranks 1, 2`; Chinese does not inflect.
fn ranks_phrase(ranks: &[u32], lang: Lang) -> String {
    let list = ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    match (lang, ranks.len()) {
        (Lang::Zh, _) => format!("rank {list}"),
        (Lang::En, 1) => format!("rank {list}"),
        (Lang::En, _) => format!("ranks {list}"),
    }
}

/// What the timeouts say, one sentence each: the collective each group of ranks waits in,
/// whether the ranks disagree, and which ranks are missing from the list.
pub fn timeout_notes(timeouts: &[Timeout], lang: Lang) -> Vec<String> {
    if timeouts.is_empty() {
        return Vec::new();
    }
    let zh = lang == Lang::Zh;
    let mut groups: BTreeMap<(u64, &str), Vec<u32>> = BTreeMap::new();
    for timeout in timeouts {
        groups.entry((timeout.seq, timeout.op.as_str())).or_default().extend(timeout.rank);
    }
    let mut notes: Vec<String> = groups
        .iter()
        .map(|((seq, op), ranks)| match (zh, ranks.is_empty()) {
            (false, true) => format!("timed out in {op}, SeqNum {seq}"),
            (false, false) => format!("{} timed out in {op}, SeqNum {seq}", ranks_phrase(ranks, lang)),
            (true, true) => format!("在 {op}（SeqNum {seq}）中超时"),
            (true, false) => format!("{} 在 {op}（SeqNum {seq}）中超时", ranks_phrase(ranks, lang)),
        })
        .collect();
    if groups.len() > 1 {
        let (&(low_seq, _), behind) = groups.iter().next().expect("more than one group");
        notes.push(if zh {
            format!(
                "各 rank 停在不同的集合通信上：它们发起的集合通信序列不一致。{} 停在最早的 SeqNum {low_seq}，是落后或跳过了集合通信的一方",
                ranks_phrase(behind, lang)
            )
        } else {
            format!(
                "the ranks stopped at different collectives, so they did not issue the same sequence of collectives; {} furthest behind, at SeqNum {low_seq}",
                ranks_phrase(behind, lang) + if behind.len() == 1 { " is" } else { " are" }
            )
        });
    } else if timeouts.len() > 1 {
        notes.push(if zh {
            "所有超时的 rank 都在等同一个集合通信：要找的是没有到达它的 rank".to_owned()
        } else {
            "every rank that timed out waits in the same collective: look for the rank that never reached it".to_owned()
        });
    }
    let known: Vec<u32> = timeouts.iter().filter_map(|t| t.rank).collect();
    if known.len() > 1 {
        let highest = known.iter().copied().max().unwrap_or(0);
        let missing: Vec<u32> = (0..highest).filter(|rank| !known.contains(rank)).collect();
        if !missing.is_empty() {
            notes.push(if zh {
                format!("{} 不在超时的 rank 之中：没有到达这个集合通信，或者更早就已退出", ranks_phrase(&missing, lang))
            } else {
                format!(
                    "{} not among the ranks that timed out: never reached the collective, or exited before it",
                    ranks_phrase(&missing, lang) + if missing.len() == 1 { " is" } else { " are" }
                )
            });
        }
    }
    notes
}

/// One worker in torchrun's `ChildFailedError` summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerFailure {
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub host: Option<String>,
    pub exit_code: Option<i32>,
}

/// torchrun's summary: the first observed failure and the other failures it lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TorchrunSummary {
    pub root_cause: Option<WorkerFailure>,
    pub others: Vec<WorkerFailure>,
}

static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?P<key>time|rank|host|exitcode)\s*:\s*(?P<value>.*)$").expect("field pattern compiles")
});
static RANK_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<rank>\d+) \(local_rank: (?P<local>\d+)\)").expect("rank value pattern compiles")
});
/// `failed (exitcode: -9) local_rank: 0 (pid: 3041437)`, the agent's own line.
static AGENT_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+)")
        .expect("agent failure pattern compiles")
});

/// Read torchrun's failure summary (`Failures:` and `Root Cause (first observed failure):`), or,
/// without one, the agent's `failed (exitcode: N) local_rank: M` line.
pub fn torchrun_summary(lines: &[&str]) -> Option<TorchrunSummary> {
    let mut summary = TorchrunSummary::default();
    let mut in_root = false;
    let mut current: Option<WorkerFailure> = None;
    let mut seen_summary = false;
    let mut agent: Option<WorkerFailure> = None;
    let finish = |worker: Option<WorkerFailure>, root: bool, summary: &mut TorchrunSummary| {
        if let Some(worker) = worker {
            if root && summary.root_cause.is_none() {
                summary.root_cause = Some(worker);
            } else if !root {
                summary.others.push(worker);
            }
        }
    };
    for line in lines {
        let trimmed = line.trim();
        if trimmed.starts_with("Failures:") {
            seen_summary = true;
            in_root = false;
            continue;
        }
        if trimmed.starts_with("Root Cause (first observed failure)") {
            finish(current.take(), in_root, &mut summary);
            seen_summary = true;
            in_root = true;
            continue;
        }
        if agent.is_none()
            && let Some(c) = AGENT_FAILURE.captures(line)
        {
            agent = Some(WorkerFailure {
                rank: None,
                local_rank: c["local"].parse().ok(),
                host: None,
                exit_code: c["code"].parse().ok(),
            });
        }
        if !seen_summary {
            continue;
        }
        // Each worker's block starts with `[N]:` and then `time :`; the stream splitter takes
        // `[N]:` for a rank tag, so the `time` line is what starts a block here.
        if trimmed.starts_with('[') && trimmed.ends_with("]:") {
            continue;
        }
        if trimmed.starts_with("====") {
            finish(current.take(), in_root, &mut summary);
            if summary.root_cause.is_some() {
                break;
            }
            continue;
        }
        let Some(c) = FIELD.captures(line) else {
            continue;
        };
        if &c["key"] == "time" {
            finish(current.take(), in_root, &mut summary);
            current = Some(WorkerFailure { rank: None, local_rank: None, host: None, exit_code: None });
            continue;
        }
        let Some(worker) = current.as_mut() else {
            continue;
        };
        let value = c["value"].trim();
        match &c["key"] {
            "rank" => {
                if let Some(r) = RANK_VALUE.captures(value) {
                    worker.rank = r["rank"].parse().ok();
                    worker.local_rank = r["local"].parse().ok();
                }
            }
            "host" => worker.host = Some(value.to_owned()),
            _ => worker.exit_code = value.split_whitespace().next().and_then(|code| code.parse().ok()),
        }
    }
    finish(current.take(), in_root, &mut summary);
    if summary.root_cause.is_none() {
        summary.root_cause = agent;
    }
    (summary.root_cause.is_some() || !summary.others.is_empty()).then_some(summary)
}

/// What an exit code of a worker means.
fn exit_meaning(code: i32, lang: Lang) -> &'static str {
    let zh = lang == Lang::Zh;
    match code {
        -9 => {
            if zh {
                "SIGKILL：最常见的是内核因主机内存不足触发的 OOM killer"
            } else {
                "SIGKILL: most often the kernel's out-of-memory killer, for host memory"
            }
        }
        -6 => {
            if zh {
                "SIGABRT：C++ abort，例如 NCCL watchdog 结束了进程"
            } else {
                "SIGABRT: a C++ abort, such as the NCCL watchdog taking the process down"
            }
        }
        -11 => {
            if zh {
                "SIGSEGV：本地代码崩溃"
            } else {
                "SIGSEGV: a crash in native code"
            }
        }
        -15 => {
            if zh {
                "SIGTERM：在别处失败后被 torchrun 停止"
            } else {
                "SIGTERM: stopped by torchrun after a failure elsewhere"
            }
        }
        1 => {
            if zh {
                "Python 异常，打印在该 rank 更早的输出里"
            } else {
                "a Python exception, printed earlier in that rank's output"
            }
        }
        _ => {
            if zh {
                "进程以错误状态退出"
            } else {
                "the process exited with an error"
            }
        }
    }
}

fn worker_name(worker: &WorkerFailure, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut name = match (worker.rank, worker.local_rank) {
        (Some(rank), Some(local)) if zh => format!("rank {rank}（本地 rank {local}）"),
        (Some(rank), Some(local)) => format!("rank {rank} (local rank {local})"),
        (Some(rank), None) => format!("rank {rank}"),
        (None, Some(local)) if zh => format!("本地 rank {local}"),
        (None, Some(local)) => format!("local rank {local}"),
        (None, None) => "a worker".to_owned(),
    };
    if let Some(host) = &worker.host {
        name.push_str(&if zh { format!("，主机 {host}") } else { format!(" on {host}") });
    }
    name
}

/// The summary in sentences: the root cause with its exit code, then the others.
pub fn summary_notes(summary: &TorchrunSummary, lang: Lang) -> Vec<String> {
    let zh = lang == Lang::Zh;
    let mut notes = Vec::new();
    if let Some(root) = &summary.root_cause {
        let code = root.exit_code.map_or_else(String::new, |code| {
            if zh {
                format!("，退出码 {code}（{}）", exit_meaning(code, lang))
            } else {
                format!(", exit code {code} ({})", exit_meaning(code, lang))
            }
        });
        notes.push(if zh {
            format!("根因（最先观察到的失败）：{}{code}", worker_name(root, lang))
        } else {
            format!("root cause (first observed failure): {}{code}", worker_name(root, lang))
        });
    }
    let mut by_code: BTreeMap<Option<i32>, Vec<String>> = BTreeMap::new();
    for other in &summary.others {
        by_code.entry(other.exit_code).or_default().push(worker_name(other, lang));
    }
    for (code, workers) in by_code {
        let meaning = code.map(|code| exit_meaning(code, lang)).unwrap_or_default();
        let code = code.map_or_else(|| "?".to_owned(), |code| code.to_string());
        notes.push(if zh {
            format!("同时失败：{}；退出码 {code}（{meaning}）", workers.join("、"))
        } else {
            format!("also failed: {}, exit code {code} ({meaning})", workers.join(", "))
        });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(rank: Option<&str>, message: &str) -> Occurrence {
        Occurrence { line: 1, rank: rank.map(str::to_owned), message: message.to_owned() }
    }

    #[test]
    fn ranks_at_different_sequence_numbers_are_told_apart() {
        let occurrences = [
            occurrence(
                None,
                "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1 milliseconds",
            ),
            occurrence(
                None,
                "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96117, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1 milliseconds",
            ),
            occurrence(
                None,
                "[Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=64088, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1 milliseconds",
            ),
        ];
        let found = timeouts(&occurrences);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], Timeout { rank: Some(0), seq: 96117, op: "ALLREDUCE".into() });
        let notes = timeout_notes(&found, Lang::En);
        assert!(notes.iter().any(|n| n.contains("rank 7 is furthest behind, at SeqNum 64088")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("ranks 1, 2, 3, 4, 5, 6 are not among")), "{notes:?}");
    }

    #[test]
    fn prefix_ranks_stand_in_for_missing_rank_tags() {
        assert_eq!(global_rank("rank3"), Some(3));
        assert_eq!(global_rank("worker-1 rank7"), Some(7));
        assert_eq!(global_rank("default1"), None);
        let found = timeouts(&[occurrence(
            Some("rank2"),
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, Timeout(ms)=5000)",
        )]);
        assert_eq!(found[0].rank, Some(2));
    }

    #[test]
    fn reads_the_root_cause_and_the_other_failures() {
        let text = "Failures:\n[1]:\n  time      : t\n  host      : node\n  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 1)\n------\nRoot Cause (first observed failure):\n[0]:\n  time      : t\n  host      : node\n  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 2)\n=====\n";
        let lines: Vec<&str> = text.lines().collect();
        let summary = torchrun_summary(&lines).unwrap();
        let root = summary.root_cause.as_ref().unwrap();
        assert_eq!((root.rank, root.exit_code), (Some(1), Some(1)));
        assert_eq!(summary.others[0].exit_code, Some(-15));
        let notes = summary_notes(&summary, Lang::En);
        assert!(notes[0].contains("rank 1 (local rank 1) on node, exit code 1 (a Python exception"), "{notes:?}");
        assert!(notes[1].contains("SIGTERM"), "{notes:?}");
    }

    #[test]
    fn the_agent_line_stands_in_for_a_missing_summary() {
        let lines = [
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 3) of binary: python",
        ];
        let summary = torchrun_summary(&lines).unwrap();
        assert_eq!(summary.root_cause.as_ref().unwrap().exit_code, Some(-9));
        assert!(summary_notes(&summary, Lang::Zh)[0].contains("OOM killer"));
    }
}
