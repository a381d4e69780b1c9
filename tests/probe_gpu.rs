//! The probe on a real NVIDIA GPU. These tests are ignored by default; run them with
//! `cargo test --test probe_gpu -- --ignored`. Without a GPU each one says so and passes.
//! They compare the probe with `nvidia-smi` where that is installed.

use std::process::Command;

use culint::probe::{self, ProbeOptions, ProbeReport, Verdict};

fn gpu_report(options: &ProbeOptions) -> Option<ProbeReport> {
    let report = probe::run(options);
    if report.unavailable.is_some() {
        eprintln!("skipped: {}", report.reason.as_deref().unwrap_or("no GPU"));
        return None;
    }
    Some(report)
}

/// (name, total MiB, compute capability) per GPU from nvidia-smi, in CUDA's order when
/// CUDA_DEVICE_ORDER=PCI_BUS_ID and no CUDA_VISIBLE_DEVICES is set.
fn nvidia_smi() -> Option<Vec<(String, u64, String)>> {
    let output = Command::new("nvidia-smi")
        .args(["--query-gpu=name,memory.total,compute_cap", "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    Some(
        text.lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(',').map(str::trim).collect();
                Some((fields.first()?.to_string(), fields.get(1)?.parse().ok()?, fields.get(2)?.to_string()))
            })
            .collect(),
    )
}

fn check<'r>(report: &'r ProbeReport, device: usize, id: &str) -> &'r probe::Check {
    report.devices[device].checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no check {id}"))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn reports_what_the_gpu_really_has() {
    let Some(report) = gpu_report(&ProbeOptions::default()) else { return };
    assert!(report.device_count >= 1);
    assert_eq!(report.devices.len(), report.device_count);
    let driver_cuda = report.driver.cuda_version.as_deref().unwrap();
    assert!(driver_cuda.starts_with("1"), "{driver_cuda}");
    for device in &report.devices {
        let total = device.total_bytes.unwrap();
        let free = device.free_bytes.unwrap();
        let largest = device.largest_allocation_bytes.unwrap();
        assert!(total > 4 << 30, "{total}");
        assert!(free <= total && free > 0);
        assert!(largest <= free && largest as f64 > 0.5 * free as f64, "largest {largest}, free {free}");
        let (major, _) = device.compute_capability.unwrap();
        assert_eq!(device.bf16, Some(major >= 8));
        assert!(device.uuid.as_deref().unwrap().starts_with("GPU-"));
    }
    if let Some(smi) = nvidia_smi().filter(|smi| smi.len() == report.device_count)
        && std::env::var_os("CUDA_VISIBLE_DEVICES").is_none()
    {
        for (device, (name, total_mib, compute_cap)) in report.devices.iter().zip(&smi) {
            assert_eq!(device.name.as_deref(), Some(name.as_str()));
            let (major, minor) = device.compute_capability.unwrap();
            assert_eq!(&format!("{major}.{minor}"), compute_cap);
            // The driver keeps some memory back: on an H200, CUDA reports 143155 MiB where
            // nvidia-smi shows 143771 MiB.
            let cuda_mib = device.total_bytes.unwrap() >> 20;
            assert!(cuda_mib <= *total_mib && cuda_mib * 100 >= total_mib * 99, "{cuda_mib} vs {total_mib} MiB");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_checks_pass_or_say_the_library_is_missing() {
    let Some(report) = gpu_report(&ProbeOptions { quick: true, ..ProbeOptions::default() }) else { return };
    for id in ["cublas.handle", "cublaslt.heuristic"] {
        let found = check(&report, 0, id);
        match found.verdict {
            Verdict::Ok => {}
            Verdict::Skipped => assert!(found.summary.contains("not found"), "{found:?}"),
            _ => panic!("{id} on a healthy GPU: {found:?}"),
        }
    }
    let handle = check(&report, 0, "cublas.handle");
    if handle.verdict == Verdict::Ok {
        assert!(handle.summary.contains("handle created and destroyed"), "{handle:?}");
        let heuristic = check(&report, 0, "cublaslt.heuristic");
        assert!(heuristic.summary.contains("bf16 4096x4096x4096 GEMM"), "{heuristic:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn quick_skips_the_allocation_search_and_memory_comes_back() {
    let Some(full) = gpu_report(&ProbeOptions { device: Some(0), ..ProbeOptions::default() }) else { return };
    let Some(quick) = gpu_report(&ProbeOptions { device: Some(0), quick: true, ..ProbeOptions::default() }) else {
        return;
    };
    assert_eq!(quick.devices.len(), 1);
    assert_eq!(quick.devices[0].largest_allocation_bytes, None);
    assert_eq!(check(&quick, 0, "memory.largest-allocation").verdict, Verdict::Skipped);
    // The search freed everything: the next probe sees the same free memory, within 256 MiB.
    let before = full.devices[0].free_bytes.unwrap() as i64;
    let after = quick.devices[0].free_bytes.unwrap() as i64;
    assert!((before - after).abs() < 256 << 20, "free before {before}, after {after}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_device_that_does_not_exist_is_a_failed_check() {
    let Some(report) = gpu_report(&ProbeOptions { device: Some(99), quick: true, ..ProbeOptions::default() }) else {
        return;
    };
    assert!(report.devices.is_empty());
    let devices = report.checks.iter().find(|c| c.id == "devices").unwrap();
    assert_eq!(devices.verdict, Verdict::Fail);
    assert_eq!(devices.knowledge.as_deref(), Some("cuda/invalid-device-ordinal"));
    assert_eq!(report.exit_code(), probe::EXIT_FINDINGS);
    assert!(probe::hardware_facts(Some(99)).unwrap_err().contains("device 99 does not exist"));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hardware_facts_agree_with_the_report() {
    let Some(report) = gpu_report(&ProbeOptions { quick: true, ..ProbeOptions::default() }) else { return };
    let facts = probe::hardware_facts(None).unwrap();
    assert_eq!(Some(facts.clone()), report.hardware_facts());
    assert_eq!(facts.gpus, Some(report.device_count));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_binary_prints_valid_json_and_a_verdict_per_check() {
    if probe::hardware_facts(None).is_err() {
        eprintln!("skipped: no GPU");
        return;
    }
    let binary = std::env::var("CULINT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_culint").to_owned());
    let output = Command::new(&binary).args(["probe", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(include_str!("../docs/probe-schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&report).map(|e| e.to_string()).collect();
    assert_eq!(errors, Vec::<String>::new());
    assert!(matches!(output.status.code(), Some(0 | 1)));
    let text = Command::new(&binary).arg("probe").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap().len()
        + report["devices"].as_array().unwrap().iter().map(|d| d["checks"].as_array().unwrap().len()).sum::<usize>();
    let verdict_lines = text
        .lines()
        .filter(|line| ["  ok ", "  warning ", "  fail ", "  skipped "].iter().any(|v| line.starts_with(v)))
        .count();
    assert_eq!(verdict_lines, checks, "{text}");
}
