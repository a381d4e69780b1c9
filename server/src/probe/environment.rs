//! The environment variables in effect for the probe, which a training job started from the
//! same shell inherits: CUDA_VISIBLE_DEVICES, the allocator config and the cuBLAS variables,
//! validated with the same code as rules CUL204 and CUL602.

use crate::cuda_env::env_vars::{self, Lookup};

use super::report::Check;

/// One check per variable in scope that is set, or one `ok` line when none is.
pub fn checks(vars: &[(String, String)]) -> Vec<Check> {
    let mut relevant: Vec<&(String, String)> = vars.iter().filter(|(name, _)| env_vars::in_scope(name)).collect();
    relevant.sort();
    let mut checks = Vec::new();
    for (name, value) in relevant {
        let id = format!("env.{name}");
        let check = match env_vars::lookup(name) {
            Lookup::Known(var) => match env_vars::check_value(var, value).as_slice() {
                [] => Check::ok(&id, format!("{name}={value}")),
                problems => Check::warning(&id, problems.join("; "))
                    .action(format!("Fix or unset {name}; it is read by {} ({})", var.read_by, var.source)),
            },
            Lookup::DeadEnd(dead_end) => {
                Check::warning(&id, format!("{name} is set, but nothing reads it: {}", dead_end.note))
                    .action(format!("Unset {name}. {}", dead_end.instead))
            }
            Lookup::Unknown { suggestion: Some(suggestion) } => Check::warning(
                &id,
                format!("{name} is set, but neither NVIDIA nor PyTorch reads it; did you mean {suggestion}?"),
            )
            .action(format!("Rename it to {suggestion} or unset it.")),
            // Many tools define CUDA_* variables of their own; only the library families are
            // flagged without a likely misspelling.
            Lookup::Unknown { suggestion: None } if name.starts_with("CUDA_") => continue,
            Lookup::Unknown { suggestion: None } => Check::warning(
                &id,
                format!("{name} is set, but neither NVIDIA nor PyTorch reads it, so it changes nothing"),
            )
            .action(format!("Unset {name}.")),
            Lookup::OutOfScope => continue,
        };
        checks.push(check);
    }
    if checks.is_empty() {
        checks.push(Check::ok("env", "no CUDA, cuBLAS or allocator variables set; the defaults apply"));
    }
    checks
}

/// Both allocator variables set: PYTORCH_ALLOC_CONF wins and the other is ignored.
pub fn shadowed_alloc_conf(vars: &[(String, String)]) -> Option<Check> {
    let has = |name: &str| vars.iter().any(|(n, _)| n == name);
    (has("PYTORCH_ALLOC_CONF") && has("PYTORCH_CUDA_ALLOC_CONF")).then(|| {
        Check::warning(
            "env.alloc-conf-shadowed",
            "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are both set; PyTorch reads only PYTORCH_ALLOC_CONF",
        )
        .action("Keep one of the two, with all the options in it.")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::report::Verdict;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn no_variables_is_one_ok_line() {
        let checks = checks(&vars(&[("HOME", "/root")]));
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].verdict, Verdict::Ok);
    }

    #[test]
    fn each_variable_gets_a_verdict() {
        let checks = checks(&vars(&[
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:true"),
            ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
            ("CUBLASLT_HEURISTIC_MODE", "1"),
            ("CUBLAS_MAGIC", "1"),
            ("CUDA_MY_TOOL_HOME", "/opt"),
            ("CUDA_VISIBLE_DEVICE", "0"),
        ]));
        let verdicts: Vec<(&str, Verdict)> = checks.iter().map(|c| (c.id.as_str(), c.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                ("env.CUBLASLT_HEURISTIC_MODE", Verdict::Warning),
                ("env.CUBLAS_MAGIC", Verdict::Warning),
                ("env.CUBLAS_WORKSPACE_CONFIG", Verdict::Ok),
                ("env.CUDA_VISIBLE_DEVICE", Verdict::Warning),
                ("env.PYTORCH_CUDA_ALLOC_CONF", Verdict::Warning),
            ]
        );
        assert!(checks[4].summary.contains("`True` or `False`"));
        assert!(checks[3].summary.contains("did you mean CUDA_VISIBLE_DEVICES"));
    }

    #[test]
    fn both_allocator_variables_warn() {
        assert!(shadowed_alloc_conf(&vars(&[("PYTORCH_ALLOC_CONF", "a"), ("PYTORCH_CUDA_ALLOC_CONF", "b")])).is_some());
        assert!(shadowed_alloc_conf(&vars(&[("PYTORCH_CUDA_ALLOC_CONF", "b")])).is_none());
    }
}
