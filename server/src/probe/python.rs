//! The PyTorch the user's Python would import, found without importing it: ask the interpreter
//! for its search path (with `-S`, so no site hooks or `.pth` files run), then read
//! `torch/version.py` from the first folder that has one.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::report::TorchInfo;

/// How long the interpreter may take to print its paths.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(10);

/// Prints sys.path (which holds PYTHONPATH under -S) and the site folders `site` would add.
/// Under -S a virtual environment's own site-packages is not on sys.path, so it is found from
/// the `pyvenv.cfg` beside the interpreter, as `site` itself would. (Debian's patched
/// `site.getsitepackages` names `dist-packages` folders when the venv is not active, so the
/// folder is globbed rather than asked for.)
const PATHS_SCRIPT: &str = "import glob, json, os, site, sys, sysconfig
paths = sysconfig.get_paths()
user = site.getusersitepackages() if site.check_enableusersite() else None
here = os.path.dirname(sys.executable)
venv = next((d for d in (here, os.path.dirname(here)) if os.path.isfile(os.path.join(d, 'pyvenv.cfg'))), None)
system = True
if venv:
    with open(os.path.join(venv, 'pyvenv.cfg')) as cfg:
        for line in cfg:
            key, _, value = line.partition('=')
            if key.strip() == 'include-system-site-packages':
                system = value.strip().lower() == 'true'
print(json.dumps({'executable': sys.executable, 'sys_path': sys.path[1:], 'user_site': user,
    'venv_site_packages': glob.glob(os.path.join(venv, 'lib*', 'python*', 'site-packages')) + glob.glob(os.path.join(venv, 'Lib', 'site-packages')) if venv else [],
    'system_site_packages': system,
    'site_packages': site.getsitepackages(), 'purelib': paths.get('purelib'), 'platlib': paths.get('platlib')}))";

#[derive(Deserialize)]
struct PythonPaths {
    executable: String,
    sys_path: Vec<String>,
    user_site: Option<String>,
    venv_site_packages: Vec<String>,
    system_site_packages: bool,
    site_packages: Vec<String>,
    purelib: Option<String>,
    platlib: Option<String>,
}

/// Where a Python environment looks for packages, in import order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PythonEnvironment {
    pub executable: String,
    pub search_path: Vec<PathBuf>,
}

/// Ask `python` (default `python3` on PATH) for its package folders.
pub fn environment(python: Option<&Path>) -> Result<PythonEnvironment, String> {
    let program = python.map_or_else(|| PathBuf::from("python3"), Path::to_path_buf);
    let mut child = Command::new(&program)
        .args(["-S", "-c", PATHS_SCRIPT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("could not run `{}`: {error}", program.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > PYTHON_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{}` did not answer within {} s", program.display(), PYTHON_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(format!("waiting for `{}` failed: {error}", program.display())),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().map(|mut out| out.read_to_string(&mut stdout));
    child.stderr.take().map(|mut err| err.read_to_string(&mut stderr));
    if !status.success() {
        let detail = stderr.lines().last().unwrap_or("no error output");
        return Err(format!("`{}` failed ({status}): {detail}", program.display()));
    }
    let paths: PythonPaths = serde_json::from_str(stdout.trim())
        .map_err(|error| format!("`{}` printed something unexpected: {error}", program.display()))?;
    let mut search_path: Vec<PathBuf> = Vec::new();
    let system: Vec<String> = if paths.system_site_packages {
        paths.site_packages.into_iter().chain(paths.purelib).chain(paths.platlib).collect()
    } else {
        Vec::new()
    };
    let ordered = paths
        .sys_path
        .into_iter()
        .chain(paths.venv_site_packages)
        .chain(paths.user_site.filter(|_| paths.system_site_packages))
        .chain(system)
        .filter(|dir| !dir.is_empty());
    for dir in ordered {
        let dir = PathBuf::from(dir);
        if !search_path.contains(&dir) {
            search_path.push(dir);
        }
    }
    Ok(PythonEnvironment { executable: paths.executable, search_path })
}

/// The torch this environment would import, read from its `torch/version.py`.
pub fn torch(environment: &PythonEnvironment) -> Option<TorchInfo> {
    environment.search_path.iter().find_map(|dir| {
        let file = dir.join("torch").join("version.py");
        let text = std::fs::read_to_string(&file).ok()?;
        Some(TorchInfo {
            python: environment.executable.clone(),
            version_file: Some(file.display().to_string()),
            version: assigned_string(&text, "__version__"),
            cuda: assigned_string(&text, "cuda"),
        })
    })
}

/// The string assigned to `name` at the top level of a version.py: `cuda = '12.4'`, or with an
/// annotation, `cuda: Optional[str] = '12.4'`. `None` for `= None` or when absent.
fn assigned_string(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let rest = rest.trim_start();
        let value = match rest.strip_prefix(':') {
            Some(annotated) => annotated.split_once('=')?.1,
            None => rest.strip_prefix('=')?,
        };
        let value = value.trim();
        let quote = value.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let inner = &value[1..];
        Some(inner[..inner.find(quote)?].to_owned())
    })
}

/// Parse `12.4` into (12, 4).
pub fn parse_cuda_version(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |minor| minor.parse().ok())?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION_PY: &str = "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda']\n__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\ngit_version = 'abc'\nhip: Optional[str] = None\n";

    #[test]
    fn reads_annotated_and_plain_assignments() {
        assert_eq!(assigned_string(VERSION_PY, "cuda").as_deref(), Some("13.0"));
        assert_eq!(assigned_string(VERSION_PY, "__version__").as_deref(), Some("2.11.0+cu130"));
        assert_eq!(assigned_string(VERSION_PY, "hip"), None);
        assert_eq!(assigned_string("cuda = \"12.4\"\n", "cuda").as_deref(), Some("12.4"));
        assert_eq!(assigned_string("cuda = None\n", "cuda"), None);
        assert_eq!(assigned_string("cudart = '1'\n", "cuda"), None);
    }

    #[test]
    fn parses_cuda_versions() {
        assert_eq!(parse_cuda_version("12.4"), Some((12, 4)));
        assert_eq!(parse_cuda_version("13"), Some((13, 0)));
        assert_eq!(parse_cuda_version("x"), None);
    }

    #[test]
    fn finds_torch_on_pythonpath_with_the_real_interpreter() {
        let site = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(site.path().join("torch")).unwrap();
        std::fs::write(site.path().join("torch/version.py"), VERSION_PY).unwrap();
        let python = which("python3").expect("python3 is on PATH on the CI machine");
        let mut env = environment(Some(&python)).unwrap();
        env.search_path.insert(0, site.path().to_owned());
        let torch = torch(&env).unwrap();
        assert_eq!(torch.cuda.as_deref(), Some("13.0"));
        assert!(torch.version_file.unwrap().ends_with("torch/version.py"));
        assert!(!env.executable.is_empty());
    }

    #[test]
    fn a_virtual_environment_is_searched_without_site_hooks() {
        let python = which("python3").expect("python3 is on PATH on the CI machine");
        let venv = tempfile::tempdir().unwrap();
        let status = Command::new(&python).args(["-m", "venv", "--without-pip"]).arg(venv.path()).status().unwrap();
        assert!(status.success());
        let env = environment(Some(&venv.path().join("bin/python3"))).unwrap();
        let venv_site =
            env.search_path.iter().find(|dir| dir.starts_with(venv.path()) && dir.ends_with("site-packages"));
        assert!(venv_site.is_some(), "{:?}", env.search_path);
        // Without include-system-site-packages the base interpreter's packages are not searched.
        let base_site =
            env.search_path.iter().any(|dir| !dir.starts_with(venv.path()) && dir.ends_with("site-packages"));
        assert!(!base_site, "{:?}", env.search_path);
    }

    #[test]
    fn a_missing_interpreter_is_an_error_naming_it() {
        let error = environment(Some(Path::new("/nonexistent/python3"))).unwrap_err();
        assert!(error.contains("/nonexistent/python3"), "{error}");
    }

    fn which(program: &str) -> Option<PathBuf> {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(program)).find(|p| p.exists())
    }
}
