//! Finding cuBLAS and cuBLASLt. PyTorch wheels load the copies in the Python environment's
//! `nvidia/*/lib` folders (the nvidia-cublas wheels) before any system copy, so the probe does
//! the same: it loads that copy by full path first, and cudarc's later `dlopen` by name then
//! finds it, because the dynamic loader matches already-loaded libraries by their SONAME.

use std::path::PathBuf;

use super::guard::guarded;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaLibrary {
    Cublas,
    CublasLt,
}

impl CudaLibrary {
    /// The file name stem, as in `libcublasLt.so.13`.
    pub fn stem(self) -> &'static str {
        match self {
            CudaLibrary::Cublas => "libcublas",
            CudaLibrary::CublasLt => "libcublasLt",
        }
    }

    /// Whether cudarc finds the library by name; when it does, it stays loaded, so that its
    /// file can be read from /proc/self/maps.
    fn present_by_name(self) -> bool {
        // SAFETY: `is_culib_present` only tries to dlopen the candidate names; `culib` then
        // loads the first that works, which cannot panic once one was found.
        guarded("loading a CUDA library", || unsafe {
            match self {
                CudaLibrary::Cublas => {
                    cudarc::cublas::sys::is_culib_present() && {
                        cudarc::cublas::sys::culib();
                        true
                    }
                }
                CudaLibrary::CublasLt => {
                    cudarc::cublaslt::sys::is_culib_present() && {
                        cudarc::cublaslt::sys::culib();
                        true
                    }
                }
            }
        })
        .unwrap_or(false)
    }
}

/// Where a library came from, or why it could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LibraryStatus {
    Loaded {
        /// The file cudarc calls into, when /proc/self/maps shows it.
        path: Option<String>,
        /// The copy in the Python environment that PyTorch would load, when it is another file.
        torch_copy: Option<String>,
    },
    Missing {
        reason: String,
    },
}

/// Load `library` as cudarc finds it by name (the library path, as for any program); when it
/// finds none, load the copy in one of `python_dirs` (site-packages folders) by full path, which
/// is the one PyTorch uses.
pub fn load(library: CudaLibrary, python_dirs: &[PathBuf]) -> LibraryStatus {
    let wheel_copies = wheel_copies(library, python_dirs);
    if library.present_by_name() {
        let path = loaded_file(library);
        let torch_copy = wheel_copies
            .first()
            .filter(|copy| !same_file(copy, path.as_deref()))
            .map(|copy| copy.display().to_string());
        return LibraryStatus::Loaded { path, torch_copy };
    }
    let mut preload_errors = Vec::new();
    for candidate in &wheel_copies {
        // SAFETY: loading cuBLAS runs only its initialisers, which PyTorch runs too.
        match unsafe { libloading::Library::new(candidate) } {
            // Kept loaded for the life of the process: cudarc's dlopen by name then finds it,
            // because the dynamic loader matches loaded libraries by their SONAME.
            Ok(handle) => {
                std::mem::forget(handle);
                break;
            }
            Err(error) => preload_errors.push(format!("{}: {error}", candidate.display())),
        }
    }
    if library.present_by_name() {
        return LibraryStatus::Loaded { path: loaded_file(library), torch_copy: None };
    }
    let mut reason = format!(
        "{} not found: no {}.so.13 or .so.12 on the library path (LD_LIBRARY_PATH, ldconfig) nor in the Python environment's nvidia/*/lib folders",
        library.stem(),
        library.stem()
    );
    if !preload_errors.is_empty() {
        reason.push_str(&format!("; loading failed for {}", preload_errors.join("; ")));
    }
    LibraryStatus::Missing { reason }
}

fn same_file(copy: &std::path::Path, loaded: Option<&str>) -> bool {
    let Some(loaded) = loaded else { return false };
    match (std::fs::canonicalize(copy), std::fs::canonicalize(loaded)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The file cudarc's handle to `library` resolves to: the mapping that holds its create function.
fn loaded_file(library: CudaLibrary) -> Option<String> {
    type Create = unsafe extern "C" fn();
    // SAFETY: only looks up a symbol's address; the function is not called.
    let address = guarded("looking up a CUDA library symbol", || unsafe {
        let symbol = match library {
            CudaLibrary::Cublas => cudarc::cublas::sys::culib().get::<Create>(b"cublasCreate_v2"),
            CudaLibrary::CublasLt => cudarc::cublaslt::sys::culib().get::<Create>(b"cublasLtCreate"),
        };
        symbol.ok().map(|symbol| *symbol as usize)
    })
    .ok()
    .flatten()?;
    file_containing(&std::fs::read_to_string("/proc/self/maps").ok()?, address)
}

/// The file mapped at `address`, from the text of /proc/self/maps.
fn file_containing(maps: &str, address: usize) -> Option<String> {
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        let path = fields.nth(4)?;
        (start <= address && address < end && path.starts_with('/')).then(|| path.to_owned())
    })
}

/// `nvidia/*/lib/<stem>.so.<N>` files under the given site-packages folders, newest major first.
fn wheel_copies(library: CudaLibrary, python_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in python_dirs {
        let Ok(packages) = std::fs::read_dir(dir.join("nvidia")) else { continue };
        for package in packages.flatten() {
            let lib = package.path().join("lib");
            let Ok(files) = std::fs::read_dir(&lib) else { continue };
            for file in files.flatten() {
                let name = file.file_name().to_string_lossy().into_owned();
                if let Some(major) = soname_major(&name, library.stem()) {
                    found.push((major, file.path()));
                }
            }
        }
    }
    found.sort_by_key(|(major, _)| std::cmp::Reverse(*major));
    found.into_iter().map(|(_, path)| path).collect()
}

/// `Some(13)` for `libcublas.so.13` with stem `libcublas` (not for `libcublasLt.so.13`).
fn soname_major(file_name: &str, stem: &str) -> Option<u32> {
    file_name.strip_prefix(stem)?.strip_prefix(".so.")?.parse().ok()
}

/// The file a library with this stem was mapped from, read from /proc/self/maps (Linux only).
pub fn mapped_path(stem: &str) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let needle = format!("/{stem}.so");
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains(&needle))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_map_to_files() {
        let maps = "7f0000000000-7f0000001000 r--p 00000000 fd:01 12 /usr/lib/libcublas.so.13.1.0.3\n\
                    7f0000001000-7f0000009000 r-xp 00001000 fd:01 12 /usr/lib/libcublas.so.13.1.0.3\n\
                    7f0000009000-7f000000a000 rw-p 00000000 00:00 0\n";
        assert_eq!(file_containing(maps, 0x7f0000001234).as_deref(), Some("/usr/lib/libcublas.so.13.1.0.3"));
        assert_eq!(file_containing(maps, 0x7f0000009010), None);
        assert_eq!(file_containing(maps, 0x10), None);
    }

    #[test]
    fn sonames_are_matched_by_stem() {
        assert_eq!(soname_major("libcublas.so.13", "libcublas"), Some(13));
        assert_eq!(soname_major("libcublasLt.so.12", "libcublas"), None);
        assert_eq!(soname_major("libcublasLt.so.12", "libcublasLt"), Some(12));
        assert_eq!(soname_major("libcublas.so", "libcublas"), None);
    }

    #[test]
    fn wheel_copies_are_found_newest_first() {
        let site = tempfile::tempdir().unwrap();
        for (package, file) in
            [("cublas", "libcublas.so.12"), ("cu13", "libcublas.so.13"), ("cu13", "libcublasLt.so.13")]
        {
            let lib = site.path().join("nvidia").join(package).join("lib");
            std::fs::create_dir_all(&lib).unwrap();
            std::fs::write(lib.join(file), b"").unwrap();
        }
        let found = wheel_copies(CudaLibrary::Cublas, &[site.path().to_owned()]);
        let names: Vec<_> = found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["libcublas.so.13", "libcublas.so.12"]);
    }

    #[test]
    fn a_missing_library_is_reported_not_panicked() {
        let site = tempfile::tempdir().unwrap();
        let lib = site.path().join("nvidia/cublas/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libcublasLt.so.12"), b"not an ELF file").unwrap();
        // On this CI machine there is no cuBLAS, so loading fails with a reason naming the file.
        if CudaLibrary::CublasLt.present_by_name() {
            return;
        }
        let LibraryStatus::Missing { reason } = load(CudaLibrary::CublasLt, &[site.path().to_owned()]) else {
            panic!("a fake library cannot load")
        };
        assert!(reason.contains("libcublasLt not found") && reason.contains("libcublasLt.so.12"), "{reason}");
    }
}
