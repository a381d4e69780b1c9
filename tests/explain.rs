//! `explain` over realistic logs in tests/fixtures/explain/: which entry, which ranks, which call
//! site, and the out-of-memory figures and the diagnosis they lead to.

use std::path::PathBuf;

use culint::explain::oom::{OomFormat, OtherMemory};
use culint::explain::{ExplainOptions, Finding, Report, explain, explain_markdown};
use culint::knowledge::{Diagnosis, Lang, builtin};

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn report(name: &str) -> Report<'static> {
    explain(&fixture(name), builtin(), &ExplainOptions::default())
}

fn ids(report: &Report<'_>) -> Vec<String> {
    report.findings.iter().map(|f| f.entry.id.clone()).collect()
}

fn only<'r>(report: &'r Report<'_>) -> &'r Finding<'r> {
    assert_eq!(report.findings.len(), 1, "expected one finding, got {:?}", ids(report));
    &report.findings[0]
}

fn size(value: f64, unit: u64) -> u64 {
    (value * unit as f64).round() as u64
}

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

#[test]
fn old_format_with_reserved_far_above_allocated_is_fragmentation() {
    let report = report("oom_old_fragmentation.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-fragmentation");
    let oom = finding.oom.as_ref().unwrap();
    assert_eq!(oom.diagnosis, Diagnosis::Fragmentation);
    let f = &oom.figures;
    assert_eq!(f.format, OomFormat::Parenthesised);
    assert_eq!(f.gpu, Some(0));
    assert_eq!(f.requested, size(2.5, GIB));
    assert_eq!(f.total, size(23.69, GIB));
    assert_eq!(f.allocated, size(14.20, GIB));
    assert_eq!(f.free, size(1.12, GIB));
    assert_eq!(f.reserved, size(21.95, GIB));
    assert!(oom.reasons.iter().any(|r| r.contains("7.75 GiB reserved but unallocated")), "{:?}", oom.reasons);
}

#[test]
fn a_small_cache_covering_the_request_is_fragmentation_on_a_nearly_full_gpu() {
    let report = report("oom_old_genuine.log");
    let finding = only(&report);
    // 122.9 MiB cached against a 20 MiB request: no cached block fitted, whatever its share.
    assert_eq!(finding.entry.id, "cuda/oom-fragmentation");
    let oom = finding.oom.as_ref().unwrap();
    assert!(oom.reasons.iter().any(|r| r.contains("the GPU is also nearly full")), "{:?}", oom.reasons);
    assert_eq!(oom.figures.requested, 20 * MIB);
    assert_eq!(oom.figures.free, size(3.44, MIB));
    // 15.78 − 0.0034 − 14.68 ≈ 1.1 GiB outside PyTorch: this process's own context, not a culprit.
    assert!(matches!(oom.other_memory, OtherMemory::Estimated { bytes } if bytes < 2 * GIB));
    assert_eq!(finding.frames[0].file, "finetune.py");
    assert_eq!(finding.frames[0].line, 57);
}

#[test]
fn old_format_with_memory_outside_pytorch_is_other_processes() {
    let report = report("oom_old_other_processes.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-other-processes");
    let oom = finding.oom.as_ref().unwrap();
    let expected = size(31.75, GIB) - 512 * MIB - size(10.50, GIB);
    assert_eq!(oom.other_memory, OtherMemory::Estimated { bytes: expected });
}

#[test]
fn oldest_format_counts_cached_on_top_of_allocated() {
    let report = report("oom_cached_variant.log");
    let oom = only(&report).oom.as_ref().unwrap();
    assert_eq!(oom.figures.requested, 1024 * KIB);
    assert_eq!(oom.figures.reserved, size(10.90, GIB) + size(30.96, MIB));
    assert_eq!(oom.diagnosis, Diagnosis::Fragmentation);
}

#[test]
fn new_format_genuine_shortage() {
    let report = report("oom_new_genuine.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-genuine");
    let f = &finding.oom.as_ref().unwrap().figures;
    assert_eq!(f.format, OomFormat::Sentences);
    assert_eq!(f.requested, 2 * GIB);
    assert_eq!(f.total, size(79.15, GIB));
    assert_eq!(f.free, size(1.23, GIB));
    assert_eq!(f.this_process, Some(size(77.91, GIB)));
    assert_eq!(f.allocated, size(76.40, GIB));
    assert_eq!(f.reserved, size(76.40, GIB) + 784 * MIB);
    assert!(f.processes.is_empty());
}

#[test]
fn new_format_fragmentation_with_the_2_1_spelling() {
    let report = report("oom_new_fragmentation.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-fragmentation");
    let oom = finding.oom.as_ref().unwrap();
    assert_eq!(oom.figures.total, size(23.65, GIB));
    assert_eq!(oom.figures.unallocated_reserved(), size(4.84, GIB));
    assert!(oom.reasons.last().unwrap().contains("fragmentation"), "{:?}", oom.reasons);
}

#[test]
fn a_listed_process_that_is_this_process_is_not_blamed() {
    let report = report("oom_new_self_listed.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-genuine");
    let oom = finding.oom.as_ref().unwrap();
    let OtherMemory::ListedPresumingSelf { bytes, presumed_self } = &oom.other_memory else {
        panic!("{:?}", oom.other_memory);
    };
    assert_eq!(presumed_self.pid, 48213);
    assert_eq!(*bytes, 0);
    assert!(oom.reasons.iter().any(|r| r.contains("process 48213") && r.contains("most likely this process")));
}

#[test]
fn new_format_other_processes() {
    let report = report("oom_new_other_processes.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-other-processes");
    let oom = finding.oom.as_ref().unwrap();
    assert_eq!(oom.other_memory, OtherMemory::Listed { bytes: 40 * GIB });
    assert_eq!(oom.figures.processes[0].pid, 1111);
    assert_eq!(oom.figures.this_process, Some(size(37.5, GIB)));
}

#[test]
fn oom_without_figures_is_outside_the_allocator_and_says_so() {
    let report = report("oom_no_figures.log");
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-outside-allocator");
    assert!(finding.undetermined && finding.oom.is_none());
    let markdown = report.to_markdown();
    assert!(markdown.contains("no memory figures") && markdown.contains("other processes hold the GPU"), "{markdown}");
}

#[test]
fn an_allocator_message_cut_before_its_figures_stays_this_processs_shortage() {
    let report = explain(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free.",
        builtin(),
        &ExplainOptions::default(),
    );
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/oom-genuine");
    assert!(report.to_text(false).contains("figures are cut off"));
}

#[test]
fn torchrun_ranks_are_merged_into_one_finding() {
    let report = report("torchrun_cublas_alloc_failed.log");
    assert_eq!(ids(&report), ["cublas/alloc-failed", "distributed/child-failed"]);
    let finding = &report.findings[0];
    assert_eq!(finding.occurrences.len(), 4);
    assert_eq!(finding.ranks, ["rank0", "rank1", "rank2", "rank3"]);
    assert_eq!(finding.call_sites, ["cublasCreate"]);
    assert!(finding.occurrences.iter().all(|o| o.message.starts_with("RuntimeError: CUDA error")));
    let first = &finding.occurrences[0];
    assert_eq!(first.line, 35);
    assert_eq!(first.rank.as_deref(), Some("rank3"));
    assert_eq!(finding.frames[0].file, "/workspace/proj/train.py");
    assert_eq!(finding.frames.len(), 3, "the same traceback of four ranks is listed once: {:?}", finding.frames);
    let text = report.to_text(false);
    assert!(text.contains("line 35, 4 times on ranks (rank0, rank1, rank2, rank3)"), "{text}");
    assert_eq!(text.matches("when calling `cublasCreate(handle)`").count(), 1, "one line stands for all ranks: {text}");
    assert!(text.contains("… 3 more"), "{text}");
}

#[test]
fn deepspeed_tee_log_puts_the_oom_before_the_nccl_errors_it_caused() {
    let report = report("deepspeed_tee_oom_nccl.log");
    assert_eq!(ids(&report), ["cuda/oom-other-processes", "nccl/unhandled-cuda-error"]);
    let oom = &report.findings[0];
    assert_eq!(oom.ranks, ["rank0"]);
    let analysis = oom.oom.as_ref().unwrap();
    assert_eq!(analysis.figures.processes.len(), 3);
    assert_eq!(analysis.other_memory, OtherMemory::Listed { bytes: 3 * size(9.12, GIB) });
    assert_eq!(analysis.figures.requested, size(1.5, GIB));
    let nccl = &report.findings[1];
    assert_eq!(nccl.ranks, ["rank1", "rank2", "rank3"]);
    assert_eq!(nccl.details, ["out of memory"], "the CUDA failure behind the NCCL error");
    assert_eq!(nccl.frames[0].line, 131);
}

#[test]
fn pdsh_host_prefixes_name_host_and_rank() {
    let report = report("deepspeed_pdsh_illegal_access.log");
    assert_eq!(ids(&report), ["cuda/illegal-memory-access", "nccl/unhandled-cuda-error"]);
    assert_eq!(report.findings[0].ranks, ["worker-1 rank4", "worker-1 rank5", "worker-1 rank6", "worker-1 rank7"]);
    assert_eq!(report.findings[1].ranks.len(), 4);
    assert!(report.findings[1].ranks.iter().all(|r| r.starts_with("worker-0 ")));
}

#[test]
fn cublas_errors_from_each_call_site() {
    for (file, id, call) in [
        ("cublaslt_heuristic_alloc_failed.log", "cublas/alloc-failed", "cublasLtMatmulAlgoGetHeuristic"),
        ("cublas_internal_error_create.log", "cublas/internal-error", "cublasCreate"),
        ("cublas_internal_error_gemm.log", "cublas/internal-error", "cublasGemmEx"),
        ("cublas_not_supported_bf16.log", "cublas/not-supported", "cublasGemmStridedBatchedEx"),
        ("cublas_invalid_value_sgemm.log", "cublas/invalid-value", "cublasSgemm"),
        ("cublas_execution_failed_lt.log", "cublas/execution-failed", "cublasLtMatmul"),
    ] {
        let report = report(file);
        let finding = only(&report);
        assert_eq!(finding.entry.id, id, "{file}");
        assert_eq!(finding.call_sites, [call], "{file}");
    }
}

#[test]
fn the_assertion_is_reported_before_the_cublas_error_it_caused() {
    let report = report("assert_then_not_initialized.log");
    assert_eq!(ids(&report), ["cuda/device-side-assert", "cublas/not-initialized"]);
    assert_eq!(report.findings[0].occurrences.len(), 3);
    assert_eq!(report.findings[0].occurrences[0].line, 2);
    assert_eq!(report.findings[1].frames[0].file, "/data/run/finetune.py");
}

#[test]
fn tracebacks_without_a_cuda_error_do_not_match() {
    let report = report("no_cuda_error.log");
    assert!(report.is_empty(), "{:?}", ids(&report));
    assert_eq!(explain_markdown(&fixture("no_cuda_error.log"), Lang::En), "");
}

#[test]
fn local_files_of_the_traceback_are_found_and_linted() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain/project");
    let options = ExplainOptions { lang: Lang::En, lint_root: Some(root) };
    let report = explain(&fixture("traceback_local.log"), builtin(), &options);
    let finding = only(&report);
    let frames: Vec<(&str, usize, Option<&str>)> =
        finding.local_frames.iter().map(|f| (f.path.as_str(), f.line, f.source.as_deref())).collect();
    assert_eq!(
        frames,
        [("train.py", 20, Some("loss = train_step(batch)")), ("train.py", 10, Some("logits = model(batch.cuda())"))]
    );
    // The script keeps every loss's graph (CUL401) and empties the cache each step (CUL201),
    // both within reach of the frames; they show once those rules are registered.
    for (code, line) in [("CUL401", 21), ("CUL201", 22)] {
        if culint::rules::by_code(code).is_some() {
            assert!(
                finding.likely_causes.iter().any(|c| c.code == code && c.line == line && c.path == "train.py"),
                "{code} at train.py:{line} expected in {:?}",
                finding.likely_causes
            );
        }
    }
    assert!(finding.likely_causes.iter().all(|c| c.path == "train.py"));
    let text = report.to_text(false);
    assert!(text.contains("train.py:10 in train_step: logits = model(batch.cuda())"), "{text}");
}

#[test]
fn without_a_root_nothing_is_linted() {
    let report = report("traceback_local.log");
    assert!(only(&report).local_frames.is_empty());
}

#[test]
fn chinese_report_translates_labels_and_reasons() {
    let text = fixture("oom_new_fragmentation.log");
    let markdown = explain_markdown(&text, Lang::Zh);
    assert!(markdown.contains("碎片化导致的 CUDA 显存不足"), "{markdown}");
    assert!(markdown.contains("**出错时的显存** (诊断：碎片化)"), "{markdown}");
    assert!(markdown.contains("已保留但未分配 4.84 GiB"), "{markdown}");
    assert!(markdown.contains("**可行的办法**"));
}

#[test]
fn json_carries_occurrences_figures_and_localized_fields() {
    let report =
        explain(&fixture("deepspeed_tee_oom_nccl.log"), builtin(), &ExplainOptions { lang: Lang::Zh, lint_root: None });
    let json = report.to_json();
    assert_eq!(json["matched"], true);
    assert_eq!(json["lang"], "zh");
    let oom = &json["findings"][0];
    assert_eq!(oom["id"], "cuda/oom-other-processes");
    assert_eq!(oom["oom"]["diagnosis"], "other-processes");
    assert_eq!(oom["oom"]["figures"]["requested"], size(1.5, GIB));
    assert_eq!(oom["oom"]["other_memory"]["basis"], "listed");
    assert_eq!(oom["occurrences"][0]["rank"], "rank0");
    assert!(oom["title"].as_str().unwrap().contains("其他进程"));
    assert!(oom["workarounds"][0]["sources"].as_array().is_some_and(|s| !s.is_empty()));
    assert_eq!(json["findings"][1]["count"], 6);
}

#[test]
fn colour_only_when_asked() {
    let report = report("oom_old_genuine.log");
    assert!(!report.to_text(false).contains('\u{1b}'));
    assert!(report.to_text(true).contains("\u{1b}[1;31m[cuda/oom-fragmentation]"));
}

#[test]
fn repeats_are_counted_but_only_the_first_are_kept() {
    let mut log = String::new();
    for thread in 0..1000 {
        log.push_str(&format!(
            "Indexing.cu:1289: indexSelectLargeIndex: block: [0,0,0], thread: [{thread},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        ));
    }
    log.push_str("RuntimeError: CUDA error: device-side assert triggered\n");
    let report = explain(&log, builtin(), &ExplainOptions::default());
    let finding = only(&report);
    assert_eq!(finding.count, 1001);
    assert_eq!(finding.occurrences.len(), culint::explain::MAX_OCCURRENCES);
    assert!(report.to_text(false).contains("line 1, 1001 times"));
}

#[test]
fn cudnn_errors_name_their_status() {
    let report = explain(
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nRuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
        builtin(),
        &ExplainOptions::default(),
    );
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cudnn/status-error");
    assert_eq!(finding.details, ["CUDNN_STATUS_INTERNAL_ERROR", "CUDNN_STATUS_NOT_SUPPORTED"]);
}

// The logs of tests/fixtures/explain/gpu/ were produced on an H200 by bench/explain_errors/run.sh.

fn gpu_report(name: &str, lint_root: Option<PathBuf>) -> Report<'static> {
    let options = ExplainOptions { lang: Lang::En, lint_root };
    explain(&fixture(&format!("gpu/{name}")), builtin(), &options)
}

fn bench_root() -> Option<PathBuf> {
    Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench"))
}

#[test]
fn two_ranks_on_one_gpu_are_a_duplicate_gpu_that_points_to_cul101() {
    let report = gpu_report("nccl_duplicate_gpu.log", bench_root());
    assert_eq!(ids(&report), ["nccl/invalid-usage", "distributed/child-failed"]);
    let finding = &report.findings[0];
    assert_eq!(finding.ranks, ["rank0", "rank1"]);
    assert_eq!(
        finding.details,
        ["Duplicate GPU detected : rank 1 and rank 0", "Duplicate GPU detected : rank 0 and rank 1"]
    );
    let first = report.first_failure.as_ref().unwrap();
    assert_eq!((first.rank.as_str(), first.from_summary, first.exit_code), ("rank0", true, Some(1)));
    assert_eq!(first.also_failed, ["rank1"]);
    // The traceback's script resolves by suffix under bench/, and CUL101 is found in it.
    assert!(finding.local_frames.iter().any(|f| f.path == "explain_errors/dup_gpu.py" && f.line == 14));
    if culint::rules::by_code("CUL101").is_some() {
        assert!(
            finding.likely_causes.iter().any(|c| c.code == "CUL101" && c.path == "explain_errors/dup_gpu.py"),
            "{:?}",
            finding.likely_causes
        );
    }
}

#[test]
fn the_rank_that_failed_first_is_named_and_the_others_only_followed() {
    let report = gpu_report("gloo_child_failed.log", None);
    assert_eq!(ids(&report), ["cuda/device-mismatch", "distributed/peer-lost", "distributed/child-failed"]);
    assert_eq!(report.findings[0].ranks, ["rank1"]);
    assert_eq!(report.findings[0].details, ["mat1 is on cpu"]);
    assert_eq!(report.findings[1].ranks, ["rank0", "rank2"]);
    let first = report.first_failure.as_ref().unwrap();
    assert_eq!(first.rank, "rank1");
    assert_eq!(first.entry.as_deref(), Some("cuda/device-mismatch"));
    assert_eq!(first.followers, ["rank0", "rank2"]);
    assert!(first.also_failed.is_empty());
    let notes = &report.findings[2].notes;
    assert!(
        notes[0].contains("root cause (first observed failure): rank 1 (local rank 1) on localhost, exit code 1"),
        "{notes:?}"
    );
    assert!(notes[1].contains("exit code -15 (SIGTERM"), "{notes:?}");
    let text = report.to_text(false);
    assert!(
        text.starts_with("Which rank failed first: rank1: cuda/device-mismatch, line 21 (torchrun's root cause, exit code 1); only followed: rank0, rank2"),
        "{text}"
    );
    let zh =
        explain(&fixture("gpu/gloo_child_failed.log"), builtin(), &ExplainOptions { lang: Lang::Zh, lint_root: None });
    assert!(zh.to_markdown().contains("**最先失败的进程**：rank1——cuda/device-mismatch"), "{}", zh.to_markdown());
}

#[test]
fn an_oom_on_one_rank_comes_first_under_agent_tags() {
    let report = gpu_report("gloo_child_failed_oom_tee.log", None);
    assert_eq!(report.findings[0].entry.id, "cuda/oom-genuine");
    assert_eq!(report.findings[0].ranks, ["rank1"]);
    let first = report.first_failure.as_ref().unwrap();
    assert_eq!((first.rank.as_str(), first.followers.clone()), ("rank1", vec!["rank0".to_owned(), "rank2".to_owned()]));
}

#[test]
fn a_watchdog_timeout_names_the_collective_and_the_abort() {
    let report = gpu_report("nccl_watchdog_timeout.log", None);
    assert_eq!(ids(&report), ["nccl/watchdog-timeout", "distributed/child-failed"]);
    assert_eq!(report.findings[0].notes, ["rank 0 timed out in ALLREDUCE, SeqNum 2"]);
    assert!(report.findings[1].notes[0].contains("exit code -6 (SIGABRT"), "{:?}", report.findings[1].notes);
    let first = report.first_failure.as_ref().unwrap();
    assert_eq!((first.rank.as_str(), first.entry.as_deref()), ("rank0", Some("nccl/watchdog-timeout")));
}

#[test]
fn ranks_at_different_collectives_are_called_out() {
    let log = "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n";
    let report = explain(log, builtin(), &ExplainOptions::default());
    let notes = &only(&report).notes;
    assert!(notes.contains(&"rank 3 timed out in ALLREDUCE, SeqNum 80078".to_owned()), "{notes:?}");
    assert!(notes.contains(&"rank 7 timed out in BROADCAST, SeqNum 80078".to_owned()), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("did not issue the same sequence of collectives")), "{notes:?}");
    // Only timeouts, all relaying something else: no rank is named as the first to fail.
    assert!(report.first_failure.is_none());
}

#[test]
fn out_of_memory_texts_from_the_gpu_get_their_diagnosis() {
    for (file, id) in [
        ("oom_memory_fraction.log", "cuda/oom-memory-fraction"),
        ("oom_fragmentation.log", "cuda/oom-fragmentation"),
        ("oom_other_process_late.log", "cuda/oom-other-processes"),
        ("oom_too_large.log", "cuda/oom-genuine"),
        ("oom_context_creation_conv.log", "cuda/oom-outside-allocator"),
    ] {
        assert_eq!(ids(&gpu_report(file, None)), [id], "{file}");
    }
    let report = gpu_report("oom_memory_fraction.log", None);
    let oom = only(&report).oom.as_ref().unwrap();
    assert_eq!(oom.diagnosis, Diagnosis::MemoryFraction);
    assert_eq!(oom.figures.allowed, Some(size(13.98, GIB)));
    assert!(oom.reasons.last().unwrap().contains("exceed the cap of 13.98 GiB"), "{:?}", oom.reasons);
    let report = gpu_report("oom_other_process_late.log", None);
    let oom = only(&report).oom.as_ref().unwrap();
    assert_eq!(oom.other_memory, OtherMemory::Listed { bytes: size(139.19, GIB) });
}

#[test]
fn private_pool_figures_are_read() {
    let report = explain(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 546.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 514.19 MiB is free. Process 562167 has 15.25 GiB memory in use. Of the allocated memory 13.73 GiB is allocated by PyTorch, with 46.00 MiB allocated in private pools (e.g., CUDA Graphs), and 736.86 MiB is reserved by PyTorch but unallocated.",
        builtin(),
        &ExplainOptions::default(),
    );
    let oom = only(&report).oom.as_ref().unwrap();
    assert_eq!(oom.figures.unallocated_reserved(), size(736.86, MIB));
    assert_eq!(oom.diagnosis, Diagnosis::Fragmentation);
}

#[test]
fn a_device_mismatch_shows_where_the_script_places_modules_and_tensors() {
    let report = gpu_report("device_mismatch_linear.log", bench_root());
    let finding = only(&report);
    assert_eq!(finding.entry.id, "cuda/device-mismatch");
    let lines: Vec<(usize, &str)> = finding.placements.iter().map(|p| (p.line, p.source.as_str())).collect();
    assert!(lines.contains(&(13, "model.to(device)")), "{lines:?}");
    assert!(report.to_text(false).contains("Where your code places modules and tensors"));
}

#[test]
fn kernel_address_errors_have_their_own_entries() {
    assert_eq!(ids(&gpu_report("misaligned_address.log", None)), ["cuda/misaligned-address"]);
    let report = explain(
        "Cuda failure: operation not supported on global/shared address space at line 286 in file pointpillar.cpp error status: 717",
        builtin(),
        &ExplainOptions::default(),
    );
    assert_eq!(ids(&report), ["cuda/invalid-address-space"]);
}

#[test]
fn cublas_status_numbers_map_to_their_names() {
    for (text, id) in [
        ("cuBLAS API failed with status 15", "cublas/not-supported"),
        ("[error] CuBLAS error 15", "cublas/not-supported"),
        ("cublasLt API failed with status 7", "cublas/invalid-value"),
    ] {
        assert_eq!(ids(&explain(text, builtin(), &ExplainOptions::default())), [id], "{text}");
    }
    // A status of another number is not a known status.
    assert!(explain("cuBLAS API failed with status 150", builtin(), &ExplainOptions::default()).is_empty());
}

#[test]
fn json_carries_the_first_failure_and_the_notes() {
    let json = gpu_report("gloo_child_failed.log", None).to_json();
    assert_eq!(json["first_failure"]["rank"], "rank1");
    assert_eq!(json["first_failure"]["entry"], "cuda/device-mismatch");
    assert_eq!(json["first_failure"]["from_summary"], true);
    assert_eq!(json["first_failure"]["followers"], serde_json::json!(["rank0", "rank2"]));
    let child = json["findings"].as_array().unwrap().iter().find(|f| f["id"] == "distributed/child-failed").unwrap();
    assert!(child["notes"][0].as_str().unwrap().starts_with("root cause (first observed failure): rank 1"));
    let single = explain("RuntimeError: CUDA error: misaligned address", builtin(), &ExplainOptions::default());
    assert!(single.to_json()["first_failure"].is_null(), "a single process has no first rank");
}
