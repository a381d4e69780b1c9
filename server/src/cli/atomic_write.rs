//! Writing a fixed file so that a crash never leaves half a file: write a temporary file in the
//! same directory, give it the original's permissions, then rename it over the original.

use std::io::{self, Write};
use std::path::Path;

/// Replace the contents of the existing file at `path`. A symbolic link is followed and its
/// target replaced. A read-only file is refused rather than replaced (the rename would succeed
/// for a user who may write the directory, which is not what read-only means).
pub fn write_atomically(path: &Path, contents: &str) -> io::Result<()> {
    let target = path.canonicalize()?;
    let metadata = std::fs::metadata(&target)?;
    if metadata.permissions().readonly() {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"));
    }
    let directory = target.parent().ok_or_else(|| io::Error::other("the file has no parent directory"))?;
    let mut temporary = tempfile::Builder::new().prefix(".culint-fix-").tempfile_in(directory)?;
    temporary.write_all(contents.as_bytes())?;
    temporary.as_file().set_permissions(metadata.permissions())?;
    temporary.as_file().sync_all()?;
    temporary.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_follows_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.py");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o750)).unwrap();
        let link = dir.path().join("link.py");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        write_atomically(&link, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
    }

    #[test]
    fn refuses_read_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.py");
        std::fs::write(&path, "old").unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(&path, permissions).unwrap();
        let error = write_atomically(&path, "new").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    }
}
