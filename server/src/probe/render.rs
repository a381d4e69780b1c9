//! The probe report for people: a terminal summary with one verdict line per check, and
//! Markdown for issues and the editor's "Probe GPU" view.

use std::fmt::Write;

use super::format::bytes;
use super::report::{Check, DeviceReport, ProbeReport, Verdict};

impl ProbeReport {
    /// The one-line headline: the driver, devices and PyTorch found.
    pub fn headline(&self) -> String {
        if let Some(reason) = &self.reason {
            return reason.clone();
        }
        let mut line = format!(
            "NVIDIA driver {}, CUDA {}, {} device{}",
            self.driver.driver_version.as_deref().unwrap_or("(version unknown)"),
            self.driver.cuda_version.as_deref().unwrap_or("?"),
            self.device_count,
            if self.device_count == 1 { "" } else { "s" }
        );
        if let Some(torch) = &self.torch {
            let _ = write!(
                line,
                ", PyTorch {} (CUDA {})",
                torch.version.as_deref().unwrap_or("?"),
                torch.cuda.as_deref().unwrap_or("none")
            );
        }
        line
    }

    /// Counts of warnings and failures, and the time taken.
    pub fn tally(&self) -> String {
        let count = |verdict| self.all_checks().filter(|check| check.verdict == verdict).count();
        let (warnings, failures, skipped) = (count(Verdict::Warning), count(Verdict::Fail), count(Verdict::Skipped));
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}, {}, {} skipped ({:.2} s)",
            plural(failures, "failure"),
            plural(warnings, "warning"),
            skipped,
            self.elapsed_ms as f64 / 1000.0
        )
    }

    /// The terminal summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "culint probe: {}", self.headline());
        let _ = writeln!(out);
        let _ = writeln!(out, "machine");
        write_checks(&mut out, &self.checks);
        for device in &self.devices {
            let _ = writeln!(out);
            let _ = writeln!(out, "{}", device_heading(device));
            write_checks(&mut out, &device.checks);
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", self.tally());
        out
    }

    /// Markdown: a heading per device and a table of checks.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## culint probe\n\n{}\n", escape(&self.headline()));
        let _ = writeln!(out, "### Machine\n");
        write_table(&mut out, &self.checks);
        for device in &self.devices {
            let _ = writeln!(out, "\n### {}\n", escape(&device_heading(device)));
            write_table(&mut out, &device.checks);
        }
        let _ = writeln!(out, "\n{}", self.tally());
        out
    }
}

fn device_heading(device: &DeviceReport) -> String {
    let mut heading = format!("GPU {}: {}", device.index, device.name.as_deref().unwrap_or("(name unknown)"));
    if let Some((major, minor)) = device.compute_capability {
        let _ = write!(heading, ", compute capability {major}.{minor}");
    }
    if let (Some(free), Some(total)) = (device.free_bytes, device.total_bytes) {
        let _ = write!(heading, ", {} free of {}", bytes(free), bytes(total));
    }
    heading
}

fn write_checks(out: &mut String, checks: &[Check]) {
    let width = checks.iter().map(|check| check.id.len()).max().unwrap_or(0);
    for check in checks {
        let _ = write!(out, "  {:<8} {:<width$}  {}", check.verdict.as_str(), check.id, check.summary);
        if let Some(knowledge) = &check.knowledge {
            let _ = write!(out, " [{knowledge}]");
        }
        let _ = writeln!(out);
        if let Some(action) = &check.action.as_ref().filter(|_| check.verdict >= Verdict::Warning) {
            let _ = writeln!(out, "  {:<8} {:<width$}  -> {action}", "", "");
        }
    }
}

fn write_table(out: &mut String, checks: &[Check]) {
    let _ = writeln!(out, "| verdict | check | finding | what to do | knowledge |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for check in checks {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} |",
            check.verdict.as_str(),
            check.id,
            escape(&check.summary),
            check.action.as_deref().map(escape).unwrap_or_default(),
            check.knowledge.as_deref().map(|id| format!("`{id}`")).unwrap_or_default()
        );
    }
}

/// Keep table cells intact.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ProbeReport {
        let mut report = ProbeReport::new(false);
        report.driver.driver_version = Some("580.159.04".into());
        report.driver.cuda_version = Some("13.0".into());
        report.device_count = 1;
        report.checks.push(Check::ok("driver", "NVIDIA driver 580.159.04 supports CUDA 13.0"));
        let mut device = DeviceReport::new(0);
        device.name = Some("NVIDIA H100 80GB HBM3".into());
        device.compute_capability = Some((9, 0));
        device.free_bytes = Some(80 << 30);
        device.total_bytes = Some(80 << 30);
        device.checks.push(
            Check::warning("memory.other-processes", "1 other process holds 10 GiB | a")
                .knowledge("cuda/oom-other-processes")
                .action("Stop it."),
        );
        report.devices.push(device);
        report.elapsed_ms = 840;
        report
    }

    #[test]
    fn text_has_one_line_per_check_with_action_and_knowledge() {
        let text = sample().to_text();
        assert!(text.starts_with("culint probe: NVIDIA driver 580.159.04, CUDA 13.0, 1 device\n"), "{text}");
        assert!(text.contains("  ok       driver  NVIDIA driver"), "{text}");
        assert!(text.contains("GPU 0: NVIDIA H100 80GB HBM3, compute capability 9.0, 80 GiB free of 80 GiB"));
        assert!(text.contains(
            "  warning  memory.other-processes  1 other process holds 10 GiB | a [cuda/oom-other-processes]"
        ));
        assert!(text.contains("-> Stop it."));
        assert!(text.trim_end().ends_with("0 failures, 1 warning, 0 skipped (0.84 s)"), "{text}");
    }

    #[test]
    fn markdown_escapes_table_cells() {
        let markdown = sample().to_markdown();
        assert!(markdown.contains("| warning | `memory.other-processes` | 1 other process holds 10 GiB \\| a | Stop it. | `cuda/oom-other-processes` |"));
        assert!(markdown.contains("### GPU 0: NVIDIA H100 80GB HBM3"));
    }
}
