//! Read the figures of a PyTorch out-of-memory message and decide what they point to.
//!
//! Two formats exist. Up to PyTorch 2.0:
//! `Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated;
//! 3.44 MiB free; 14.68 GiB reserved in total by PyTorch)` (before 1.5, `... cached)`).
//! From 2.1: `Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which
//! 1.23 GiB is free. Process 123 has 77.91 GiB memory in use. Of the allocated memory 75.20 GiB
//! is allocated by PyTorch, and 1.98 GiB is reserved by PyTorch but unallocated.` (2.1 spells it
//! "capacty"; the own process reads "Including non-PyTorch memory, this process has ...").

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::knowledge::{Diagnosis, Lang};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OomFormat {
    /// `(GPU 0; X total capacity; Y already allocated; Z free; W reserved in total by PyTorch)`.
    Parenthesised,
    /// `GPU 0 has a total capacity of X of which Y is free. ...` (PyTorch >= 2.1).
    Sentences,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessUsage {
    pub pid: u64,
    pub bytes: u64,
}

/// The figures of one out-of-memory message, in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OomFigures {
    pub format: OomFormat,
    pub gpu: Option<u32>,
    pub requested: u64,
    pub total: u64,
    pub free: u64,
    /// Memory in tensors.
    pub allocated: u64,
    /// Memory PyTorch's caching allocator holds: allocated plus cached but unallocated.
    pub reserved: u64,
    /// "Including non-PyTorch memory, this process has X memory in use" (PyTorch >= 2.1).
    pub this_process: Option<u64>,
    /// "Process N has X memory in use" lines.
    pub processes: Vec<ProcessUsage>,
    /// "X allowed": the cap set with `torch.cuda.set_per_process_memory_fraction`.
    pub allowed: Option<u64>,
}

impl OomFigures {
    pub fn unallocated_reserved(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }
}

const UNITS: &str = "bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB";

/// A pattern in which `{name}` stands for a size such as `14.56 GiB`, captured as `name` (the
/// number) and `name_unit`.
fn pattern(template: &str) -> Regex {
    let mut source = template.to_owned();
    while let Some(open) = source.find('{') {
        let close = open + source[open..].find('}').expect("placeholder is closed");
        let name = source[open + 1..close].to_owned();
        source.replace_range(open..=close, &format!(r"(?P<{name}>\d+(?:\.\d+)?)\s*(?P<{name}_unit>{UNITS})"));
    }
    Regex::new(&source).expect("out-of-memory figure pattern compiles")
}

static REQUESTED: LazyLock<Regex> = LazyLock::new(|| pattern(r"Tried to allocate {requested}"));
/// `allowed` appears when `set_per_process_memory_fraction` caps the process.
static OLD: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"\(GPU (?P<gpu>\d+); {total} total capacity; {allocated} already allocated; {free} free;(?: {allowed} allowed;)? (?:{reserved} reserved in total by PyTorch|{cached} cached)",
    )
});
static NEW_TOTAL: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"GPU (?P<gpu>\d+) has a total capac(?:i)?ty of {total} of which {free} is free"));
/// From 2.2 the sentence can name memory in private pools (CUDA graphs) between the two figures.
static NEW_ALLOCATED: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"Of the allocated memory {allocated} is allocated by PyTorch,(?: with {private} allocated in private pools \(e\.g\., CUDA Graphs\),)? and {unallocated} is reserved by PyTorch but unallocated",
    )
});
/// `13.98 GiB allowed;` just before "Of the allocated memory" when the process is capped.
static NEW_ALLOWED: LazyLock<Regex> = LazyLock::new(|| pattern(r"{allowed} allowed;"));
static THIS_PROCESS: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"Including non-PyTorch memory, this process has {used} memory in use"));
static PROCESS: LazyLock<Regex> = LazyLock::new(|| pattern(r"Process (?P<pid>\d+) has {used} memory in use"));

/// Bytes of a figure such as `14.56 GiB`. PyTorch prints binary units throughout.
fn bytes(number: &str, unit: &str) -> u64 {
    let value: f64 = number.parse().unwrap_or(0.0);
    let scale = match unit {
        "KiB" | "KB" => 1u64 << 10,
        "MiB" | "MB" => 1 << 20,
        "GiB" | "GB" => 1 << 30,
        "TiB" | "TB" => 1 << 40,
        _ => 1,
    };
    (value * scale as f64).round() as u64
}

/// The size captured as `name`, if the pattern matched that part.
fn size(captures: &regex::Captures<'_>, name: &str) -> Option<u64> {
    let number = captures.name(name)?;
    let unit = captures.name(&format!("{name}_unit"))?;
    Some(bytes(number.as_str(), unit.as_str()))
}

/// Read the figures from the text of an out-of-memory message (one line, or a few joined).
/// `None` when the message carries no figures, as in `CUDA error: out of memory`.
pub fn parse(text: &str) -> Option<OomFigures> {
    let requested = REQUESTED.captures(text).and_then(|c| size(&c, "requested"))?;
    if let Some(c) = OLD.captures(text) {
        let allocated = size(&c, "allocated")?;
        // "W reserved in total by PyTorch" includes the allocated memory; the older "W cached"
        // counted only the cached blocks on top of it (it is often smaller than "allocated").
        let reserved = size(&c, "reserved").or_else(|| size(&c, "cached").map(|cached| allocated + cached))?;
        return Some(OomFigures {
            format: OomFormat::Parenthesised,
            gpu: c["gpu"].parse().ok(),
            requested,
            total: size(&c, "total")?,
            allocated,
            free: size(&c, "free")?,
            reserved,
            this_process: None,
            processes: Vec::new(),
            allowed: size(&c, "allowed"),
        });
    }
    let totals = NEW_TOTAL.captures(text)?;
    let allocation = NEW_ALLOCATED.captures(text)?;
    let allocated = size(&allocation, "allocated")?;
    Some(OomFigures {
        format: OomFormat::Sentences,
        gpu: totals["gpu"].parse().ok(),
        requested,
        total: size(&totals, "total")?,
        free: size(&totals, "free")?,
        allocated,
        reserved: allocated + size(&allocation, "unallocated")?,
        this_process: THIS_PROCESS.captures(text).and_then(|c| size(&c, "used")),
        processes: PROCESS
            .captures_iter(text)
            .filter_map(|c| Some(ProcessUsage { pid: c["pid"].parse().ok()?, bytes: size(&c, "used")? }))
            .collect(),
        allowed: NEW_ALLOWED.captures(text).and_then(|c| size(&c, "allowed")),
    })
}

/// Memory on the GPU that is not this process's PyTorch memory, and how it was determined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "basis", rename_all = "kebab-case")]
pub enum OtherMemory {
    /// Sum of the `Process N` lines; the own process was named as such.
    Listed { bytes: u64 },
    /// Sum of the `Process N` lines but one, which is presumed to be this process because its
    /// usage is the closest above what PyTorch reserved.
    ListedPresumingSelf { bytes: u64, presumed_self: ProcessUsage },
    /// total − free − reserved: other processes plus this process's own non-PyTorch memory
    /// (CUDA context, library workspaces), since the message lists no processes.
    Estimated { bytes: u64 },
}

impl OtherMemory {
    pub fn bytes(&self) -> u64 {
        match self {
            OtherMemory::Listed { bytes }
            | OtherMemory::ListedPresumingSelf { bytes, .. }
            | OtherMemory::Estimated { bytes } => *bytes,
        }
    }
}

/// Other processes are blamed only when they hold at least this share of the GPU.
const OTHERS_SHARE: f64 = 0.10;
/// Tensors holding this share of the GPU (or of the cap) make it nearly full: fragmentation is
/// then the immediate cause, but removing it gains little.
const NEARLY_FULL_SHARE: f64 = 0.90;
/// An estimate (total − free − reserved) includes this process's CUDA context and library
/// workspaces, commonly several hundred MiB and more with NCCL; below this it proves nothing.
const ESTIMATE_FLOOR: u64 = 2 << 30;

/// What the figures point to, with the numbers that decided it.
#[derive(Clone, Debug, Serialize)]
pub struct OomAnalysis {
    pub figures: OomFigures,
    pub diagnosis: Diagnosis,
    pub other_memory: OtherMemory,
    /// One line per figure that mattered, in the report's language.
    pub reasons: Vec<String>,
}

pub fn other_memory(figures: &OomFigures) -> OtherMemory {
    let listed: u64 = figures.processes.iter().map(|p| p.bytes).sum();
    if figures.this_process.is_some() {
        return OtherMemory::Listed { bytes: listed };
    }
    if !figures.processes.is_empty() {
        // The "Process N" lines can include the failing process itself (PID namespaces hide
        // which one is ours). Its usage is at least what PyTorch reserved in it.
        let floor = figures.reserved - figures.reserved / 50;
        if let Some(own) = figures.processes.iter().filter(|p| p.bytes >= floor).min_by_key(|p| p.bytes) {
            return OtherMemory::ListedPresumingSelf { bytes: listed - own.bytes, presumed_self: own.clone() };
        }
        return OtherMemory::Listed { bytes: listed };
    }
    OtherMemory::Estimated { bytes: figures.total.saturating_sub(figures.free).saturating_sub(figures.reserved) }
}

pub fn analyse(figures: OomFigures, lang: Lang) -> OomAnalysis {
    let other = other_memory(&figures);
    let total = figures.total.max(1) as f64;
    let fragmented = figures.unallocated_reserved();
    // The allocator releases every fully unused segment before it gives up, so cached memory
    // that still covers the request sits in partly used segments: whatever its share of the
    // GPU, no free block was large enough.
    let fragmentation_counts = fragmented >= figures.requested && figures.requested > 0;
    let capped = figures.allowed.is_some_and(|allowed| figures.reserved + figures.requested > allowed);
    let others_floor = match other {
        OtherMemory::Estimated { .. } => ESTIMATE_FLOOR,
        _ => 0,
    };
    let others_count = other.bytes() >= figures.requested
        && other.bytes() as f64 >= OTHERS_SHARE * total
        && other.bytes() >= others_floor
        && figures.requested <= figures.total;
    let diagnosis = match (others_count, fragmentation_counts) {
        (true, true) if other.bytes() >= fragmented => Diagnosis::OtherProcesses,
        (_, true) => Diagnosis::Fragmentation,
        _ if capped => Diagnosis::MemoryFraction,
        (true, false) => Diagnosis::OtherProcesses,
        (false, false) => Diagnosis::GenuineShortage,
    };
    let reasons = reasons(&figures, &other, diagnosis, lang);
    OomAnalysis { figures, diagnosis, other_memory: other, reasons }
}

/// `1.23 GiB`, `512.00 MiB`, `0 B`: the way PyTorch prints sizes.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            return format!("{:.2} {unit}", bytes as f64 / scale as f64);
        }
    }
    format!("{bytes} B")
}

fn percent(part: u64, whole: u64) -> String {
    format!("{:.1}%", part as f64 * 100.0 / whole.max(1) as f64)
}

fn reasons(f: &OomFigures, other: &OtherMemory, diagnosis: Diagnosis, lang: Lang) -> Vec<String> {
    let b = format_bytes;
    let zh = lang == Lang::Zh;
    let gpu = f.gpu.map_or_else(String::new, |g| format!("GPU {g}: "));
    let mut out = Vec::new();
    out.push(if zh {
        format!("{gpu}申请 {}，总量 {} 中空闲 {}", b(f.requested), b(f.total), b(f.free))
    } else {
        format!("{gpu}requested {}, free {} of {}", b(f.requested), b(f.free), b(f.total))
    });
    let fragmented = f.unallocated_reserved();
    out.push(if zh {
        format!(
            "PyTorch 已分配 {}，已保留但未分配 {}（占 GPU 的 {}）",
            b(f.allocated),
            b(fragmented),
            percent(fragmented, f.total)
        )
    } else {
        format!(
            "PyTorch: {} allocated, {} reserved but unallocated ({} of the GPU)",
            b(f.allocated),
            b(fragmented),
            percent(fragmented, f.total)
        )
    });
    if let Some(allowed) = f.allowed {
        out.push(if zh {
            format!("本进程被 `set_per_process_memory_fraction` 限制为 {}", b(allowed))
        } else {
            format!("this process is capped at {} by `set_per_process_memory_fraction`", b(allowed))
        });
    }
    if let Some(own) = f.this_process {
        out.push(if zh {
            format!("本进程（含非 PyTorch 显存）占用 {}", b(own))
        } else {
            format!("this process, including non-PyTorch memory: {}", b(own))
        });
    }
    out.push(match other {
        OtherMemory::Listed { bytes } => {
            let pids: Vec<String> = f.processes.iter().map(|p| format!("{} ({})", p.pid, b(p.bytes))).collect();
            match (zh, pids.is_empty()) {
                (true, true) => "消息中未列出其他进程".to_owned(),
                (false, true) => "no other process is listed".to_owned(),
                (true, false) => format!("其他进程共占用 {}：{}", b(*bytes), pids.join("，")),
                (false, false) => format!("other processes hold {}: {}", b(*bytes), pids.join(", ")),
            }
        }
        OtherMemory::ListedPresumingSelf { bytes, presumed_self } => {
            if zh {
                format!(
                    "进程 {}（{}）很可能就是本进程：PyTorch 在本进程中保留了 {}；其余进程共占用 {}",
                    presumed_self.pid,
                    b(presumed_self.bytes),
                    b(f.reserved),
                    b(*bytes)
                )
            } else {
                format!(
                    "process {} ({}) is most likely this process itself: PyTorch reserved {} here; the other processes hold {}",
                    presumed_self.pid,
                    b(presumed_self.bytes),
                    b(f.reserved),
                    b(*bytes)
                )
            }
        }
        OtherMemory::Estimated { bytes } => {
            if zh {
                format!("非 PyTorch 显存（总量 − 空闲 − PyTorch 保留）约 {}，其中包括本进程的 CUDA 上下文", b(*bytes))
            } else {
                format!(
                    "memory outside PyTorch (total − free − reserved): about {}, including this process's CUDA context",
                    b(*bytes)
                )
            }
        }
    });
    out.push(verdict(f, other, diagnosis, zh));
    if diagnosis == Diagnosis::Fragmentation && nearly_full(f) {
        let limit = f.allowed.unwrap_or(f.total);
        out.push(if zh {
            format!(
                "GPU 也几乎满了：张量占用了 {}（{} 的 {}），消除碎片最多只能腾出 {}",
                b(f.allocated),
                b(limit),
                percent(f.allocated, limit),
                b(fragmented)
            )
        } else {
            format!(
                "the GPU is also nearly full: tensors hold {} ({} of {}), so removing the fragmentation frees at most {}",
                b(f.allocated),
                percent(f.allocated, limit),
                b(limit),
                b(fragmented)
            )
        });
    }
    out
}

/// Whether the tensors alone fill nearly all the GPU, or all the cap of a capped process.
pub fn nearly_full(f: &OomFigures) -> bool {
    f.allocated as f64 >= NEARLY_FULL_SHARE * f.allowed.unwrap_or(f.total).max(1) as f64
}

fn verdict(f: &OomFigures, other: &OtherMemory, diagnosis: Diagnosis, zh: bool) -> String {
    let b = format_bytes;
    match diagnosis {
        Diagnosis::Fragmentation => {
            if zh {
                format!(
                    "已保留但未分配的 {} 不少于所申请的 {}，却没有一块连续空间足够大：这是碎片化",
                    b(f.unallocated_reserved()),
                    b(f.requested)
                )
            } else {
                format!(
                    "the {} reserved but unallocated is at least the {} requested, yet no cached block was large enough: fragmentation",
                    b(f.unallocated_reserved()),
                    b(f.requested)
                )
            }
        }
        Diagnosis::OtherProcesses => {
            if zh {
                format!("其他进程占用的 {} 足以满足这次申请：显存被其他进程占用", b(other.bytes()))
            } else {
                format!("memory held outside this process ({}) would have covered the request", b(other.bytes()))
            }
        }
        Diagnosis::MemoryFraction => {
            let allowed = f.allowed.unwrap_or_default();
            if zh {
                format!("PyTorch 已保留 {}，再申请 {} 就会超过 {} 的上限", b(f.reserved), b(f.requested), b(allowed))
            } else {
                format!(
                    "PyTorch reserved {} and the request of {} would exceed the cap of {}",
                    b(f.reserved),
                    b(f.requested),
                    b(allowed)
                )
            }
        }
        Diagnosis::OutsideAllocator => String::new(),
        Diagnosis::GenuineShortage if f.free >= f.requested => {
            if zh {
                format!(
                    "报告的空闲显存 {} 不少于所申请的 {}，申请却仍然失败：空闲量只是一个快照，而 CUDA 需要一整段连续空间外加余量",
                    b(f.free),
                    b(f.requested)
                )
            } else {
                format!(
                    "the {} reported free is not less than the {} requested, yet the allocation failed: the free figure is a snapshot, and CUDA needs one contiguous range plus headroom",
                    b(f.free),
                    b(f.requested)
                )
            }
        }
        Diagnosis::GenuineShortage if f.requested > f.total => {
            if zh {
                format!("单次申请 {} 超过了整块 GPU 的 {}", b(f.requested), b(f.total))
            } else {
                format!("the single request of {} exceeds the whole GPU ({})", b(f.requested), b(f.total))
            }
        }
        Diagnosis::GenuineShortage => {
            if zh {
                "碎片和其他进程都不足以解释：张量本身需要的显存超过了 GPU 能提供的".to_owned()
            } else {
                "neither the cache nor other processes account for it: the tensors themselves need more than the GPU has"
                    .to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    #[test]
    fn parses_the_parenthesised_format() {
        let f = parse("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.44 MiB free; 14.68 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!(f.format, OomFormat::Parenthesised);
        assert_eq!(f.requested, 20 * MIB);
        assert_eq!(f.reserved, bytes("14.68", "GiB"));
        assert_eq!(f.gpu, Some(0));
    }

    #[test]
    fn parses_the_cached_variant() {
        let f = parse("Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)").unwrap();
        assert_eq!(f.requested, MIB);
        assert_eq!(f.free, 576 * 1024);
        assert_eq!(f.reserved, bytes("10.90", "GiB") + bytes("30.96", "MiB"));
        assert_eq!(f.unallocated_reserved(), bytes("30.96", "MiB"));
    }

    #[test]
    fn parses_zero_bytes() {
        let f = parse("Tried to allocate 192.00 MiB (GPU 0; 4.00 GiB total capacity; 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!(f.free, 0);
    }

    #[test]
    fn parses_the_capped_process_variant() {
        let f = parse("Tried to allocate 64.00 MiB (GPU 0; 4.00 GiB total capacity; 2.93 GiB already allocated; 0 bytes free; 3.00 GiB allowed; 2.99 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!(f.reserved, bytes("2.99", "GiB"));
        assert_eq!(f.allocated, bytes("2.93", "GiB"));
        assert_eq!(f.allowed, Some(3 * GIB));
        let analysis = analyse(f, Lang::En);
        assert_eq!(analysis.diagnosis, Diagnosis::MemoryFraction);
        assert!(analysis.reasons.last().unwrap().contains("exceed the cap of 3.00 GiB"), "{:?}", analysis.reasons);
    }

    #[test]
    fn parses_the_cap_of_the_sentence_format() {
        let f = parse("Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 129.29 GiB is free. Including non-PyTorch memory, this process has 10.51 GiB memory in use. 13.98 GiB allowed; Of the allocated memory 10.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.").unwrap();
        assert_eq!(f.allowed, Some(bytes("13.98", "GiB")));
        assert_eq!(analyse(f, Lang::En).diagnosis, Diagnosis::MemoryFraction);
    }

    #[test]
    fn a_cache_covering_the_request_is_fragmentation_whatever_its_share() {
        // 250 MiB requested, 3.87 GiB cached on an 80 GiB GPU: under 5% of it, still no block fitted.
        let f = OomFigures {
            format: OomFormat::Sentences,
            gpu: Some(0),
            requested: 250 * MIB,
            total: 80 * GIB,
            free: 100 * MIB,
            allocated: 75 * GIB,
            reserved: 75 * GIB + bytes("3.87", "GiB"),
            this_process: Some(79 * GIB),
            allowed: None,
            processes: Vec::new(),
        };
        let analysis = analyse(f, Lang::En);
        assert_eq!(analysis.diagnosis, Diagnosis::Fragmentation);
        assert!(analysis.reasons.last().unwrap().contains("the GPU is also nearly full"), "{:?}", analysis.reasons);
    }

    #[test]
    fn no_figures_no_parse() {
        assert!(parse("RuntimeError: CUDA error: out of memory").is_none());
    }

    #[test]
    fn presumes_the_closest_process_above_reserved_is_self() {
        let f = OomFigures {
            format: OomFormat::Sentences,
            gpu: Some(0),
            requested: 2 * GIB,
            total: 80 * GIB,
            free: GIB,
            allocated: 60 * GIB,
            reserved: 62 * GIB,
            this_process: None,
            allowed: None,
            processes: vec![ProcessUsage { pid: 1, bytes: 63 * GIB }, ProcessUsage { pid: 2, bytes: 16 * GIB }],
        };
        let OtherMemory::ListedPresumingSelf { bytes, presumed_self } = other_memory(&f) else { panic!() };
        assert_eq!(presumed_self.pid, 1);
        assert_eq!(bytes, 16 * GIB);
        assert_eq!(analyse(f, Lang::En).diagnosis, Diagnosis::OtherProcesses);
    }

    #[test]
    fn formats_like_pytorch() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(20 * MIB), "20.00 MiB");
        assert_eq!(format_bytes(3 * GIB / 2), "1.50 GiB");
    }
}
