//! Which CUDA, cuBLAS and PyTorch environment variables exist, from
//! `knowledge/cuda_env_vars.toml`, and whether a value is one they accept.

use std::sync::LazyLock;

use serde::Deserialize;

use super::{alloc_conf, cublas_workspace};

/// A variable that NVIDIA's libraries, the driver, PyTorch or a build tool really reads.
#[derive(Debug, Deserialize)]
pub struct KnownVar {
    pub name: String,
    pub read_by: String,
    pub format: Format,
    #[serde(default)]
    pub choices: Vec<String>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub summary: String,
    pub source: String,
}

/// A variable that circulates as a fix but that nothing reads.
#[derive(Debug, Deserialize)]
pub struct DeadEnd {
    pub name: String,
    pub instead: String,
    pub note: String,
    pub source: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Free,
    Integer,
    Choice,
    CublasWorkspaceConfig,
    AllocConf,
    DeviceList,
}

#[derive(Deserialize)]
struct VarFile {
    var: Vec<KnownVar>,
    dead_end: Vec<DeadEnd>,
}

static VARS: LazyLock<VarFile> = LazyLock::new(|| {
    toml::from_str(include_str!("../../../knowledge/cuda_env_vars.toml"))
        .expect("knowledge/cuda_env_vars.toml is valid (checked by a unit test)")
});

pub fn known_vars() -> &'static [KnownVar] {
    &VARS.var
}

pub fn dead_ends() -> &'static [DeadEnd] {
    &VARS.dead_end
}

/// Whether `name` is in the families culint checks: `CUBLAS*` (which includes `CUBLASLT*`),
/// `CUDA_*`, and `PYTORCH_*` with `ALLOC` in it.
pub fn in_scope(name: &str) -> bool {
    name.starts_with("CUBLAS") || name.starts_with("CUDA_") || (name.starts_with("PYTORCH_") && name.contains("ALLOC"))
}

/// What culint knows about a variable name.
#[derive(Debug)]
pub enum Lookup {
    Known(&'static KnownVar),
    DeadEnd(&'static DeadEnd),
    /// In scope but read by nothing culint knows of; `suggestion` is a known name one or two
    /// edits away, when there is one.
    Unknown {
        suggestion: Option<&'static str>,
    },
    OutOfScope,
}

pub fn lookup(name: &str) -> Lookup {
    if let Some(var) = known_vars().iter().find(|var| var.name == name) {
        return Lookup::Known(var);
    }
    if let Some(dead_end) = dead_ends().iter().find(|dead_end| dead_end.name == name) {
        return Lookup::DeadEnd(dead_end);
    }
    if !in_scope(name) {
        return Lookup::OutOfScope;
    }
    Lookup::Unknown { suggestion: super::closest(name, known_vars().iter().map(|var| var.name.as_str())) }
}

/// Problems with `value` as a value of `var`; empty when it is accepted.
pub fn check_value(var: &KnownVar, value: &str) -> Vec<String> {
    let name = &var.name;
    match var.format {
        Format::Free => Vec::new(),
        Format::Integer => match value.trim().parse::<i64>() {
            Ok(n) if var.min.is_some_and(|min| n < min) || var.max.is_some_and(|max| n > max) => {
                vec![format!("{name}={value} is out of range; it takes {}", range_text(var))]
            }
            Ok(_) => Vec::new(),
            Err(_) => vec![format!("{name}={value} is not a whole number; it takes {}", range_text(var))],
        },
        Format::Choice if var.choices.iter().any(|choice| choice == value) => Vec::new(),
        Format::Choice => vec![format!("{name}={value} is not one of {}", var.choices.join(", "))],
        Format::CublasWorkspaceConfig => match cublas_workspace::parse(value) {
            Ok(_) => Vec::new(),
            Err(message) => vec![format!("{name}: {message}")],
        },
        Format::AllocConf => {
            alloc_conf::validate(value).into_iter().map(|p| format!("{name}: {}", p.message)).collect()
        }
        Format::DeviceList => visible_devices_problems(value),
    }
}

fn range_text(var: &KnownVar) -> String {
    match (var.min, var.max) {
        (Some(min), Some(max)) => format!("a whole number from {min} to {max}"),
        (Some(min), None) => format!("a whole number of at least {min}"),
        (None, Some(max)) => format!("a whole number up to {max}"),
        (None, None) => "a whole number".to_owned(),
    }
}

/// `CUDA_VISIBLE_DEVICES` entries are device indices or `GPU-`/`MIG-` UUIDs. The driver stops at
/// the first entry it cannot read: that device and every one after it stay hidden.
fn visible_devices_problems(value: &str) -> Vec<String> {
    let entries: Vec<&str> = value.split(',').map(str::trim).collect();
    let bad = entries
        .iter()
        .position(|entry| !(entry.parse::<u32>().is_ok() || entry.starts_with("GPU-") || entry.starts_with("MIG-")));
    match bad {
        Some(_) if value.trim().is_empty() || value.trim() == "-1" => Vec::new(),
        Some(index) => {
            let hidden = entries.len() - index;
            vec![format!(
                "CUDA_VISIBLE_DEVICES={value}: `{}` is not a device index or GPU-/MIG- UUID, so CUDA hides it and the {} entr{} after it",
                entries[index],
                hidden - 1,
                if hidden - 1 == 1 { "y" } else { "ies" }
            )]
        }
        None => Vec::new(),
    }
}

/// Whether `CUDA_VISIBLE_DEVICES` hides every GPU (`""` or `-1`).
pub fn hides_every_gpu(visible_devices: &str) -> bool {
    let value = visible_devices.trim();
    value.is_empty() || value == "-1" || value.starts_with("-1,")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_file_loads_with_sources() {
        assert!(known_vars().len() > 40);
        assert!(known_vars().iter().all(|v| !v.source.is_empty() && in_scope(&v.name)), "every entry is in scope");
        for name in [
            "CUBLASLT_LOG_LEVEL",
            "CUBLASLT_LOG_MASK",
            "CUBLASLT_LOG_FILE",
            "CUBLASLT_HEURISTICS_CACHE_CAPACITY",
            "CUBLASLT_DISABLE_CPU_INSTRUCTIONS_MASK",
            "CUBLASLT_WORKSPACE_SIZE",
            "CUBLAS_WORKSPACE_CONFIG",
            "PYTORCH_CUDA_ALLOC_CONF",
            "PYTORCH_ALLOC_CONF",
            "CUDA_VISIBLE_DEVICES",
        ] {
            assert!(matches!(lookup(name), Lookup::Known(_)), "{name}");
        }
    }

    #[test]
    fn heuristic_mode_is_a_dead_end() {
        let Lookup::DeadEnd(entry) = lookup("CUBLASLT_HEURISTIC_MODE") else { panic!("not a dead end") };
        assert!(entry.note.contains("ALLOC_FAILED"));
    }

    #[test]
    fn unknown_names_get_suggestions() {
        assert!(matches!(lookup("CUDA_VISIBLE_DEVICE"), Lookup::Unknown { suggestion: Some("CUDA_VISIBLE_DEVICES") }));
        assert!(matches!(lookup("CUBLAS_MAGIC"), Lookup::Unknown { suggestion: None }));
        assert!(matches!(
            lookup("PYTORCH_CUDA_ALLOC_CONFIG"),
            Lookup::Unknown { suggestion: Some("PYTORCH_CUDA_ALLOC_CONF") }
        ));
        assert!(matches!(lookup("HOME"), Lookup::OutOfScope));
        assert!(matches!(lookup("PYTORCH_JIT"), Lookup::OutOfScope));
    }

    #[test]
    fn values_are_checked_by_format() {
        let Lookup::Known(workspace) = lookup("CUBLAS_WORKSPACE_CONFIG") else { unreachable!() };
        assert!(check_value(workspace, ":4096:8").is_empty());
        assert_eq!(check_value(workspace, "4096:8").len(), 1);
        let Lookup::Known(level) = lookup("CUBLASLT_LOG_LEVEL") else { unreachable!() };
        assert!(check_value(level, "5").is_empty());
        assert!(check_value(level, "6")[0].contains("from 0 to 5"));
        assert!(check_value(level, "debug")[0].contains("not a whole number"));
        let Lookup::Known(order) = lookup("CUDA_DEVICE_ORDER") else { unreachable!() };
        assert!(check_value(order, "PCI_BUS_ID").is_empty());
        assert_eq!(check_value(order, "pci_bus_id").len(), 1);
        let Lookup::Known(conf) = lookup("PYTORCH_CUDA_ALLOC_CONF") else { unreachable!() };
        assert!(check_value(conf, "expandable_segments:true")[0].starts_with("PYTORCH_CUDA_ALLOC_CONF: "));
    }

    #[test]
    fn visible_devices() {
        let Lookup::Known(visible) = lookup("CUDA_VISIBLE_DEVICES") else { unreachable!() };
        assert!(check_value(visible, "0,1").is_empty());
        assert!(check_value(visible, "GPU-8f6c7c5e-1b2a-4c1d-9e2f-0a1b2c3d4e5f").is_empty());
        assert!(check_value(visible, "").is_empty());
        let problems = check_value(visible, "0,cuda:1,2");
        assert!(problems[0].contains("`cuda:1`") && problems[0].contains("the 1 entry after it"), "{problems:?}");
        assert!(hides_every_gpu("") && hides_every_gpu("-1") && !hides_every_gpu("0"));
    }
}
