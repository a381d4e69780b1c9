//! Which file configures a directory: the nearest culint.toml, or pyproject.toml with a
//! `[tool.culint]` table, walking up from that directory.

use std::path::{Path, PathBuf};

use super::{ConfigError, MAX_CONFIG_FILE_SIZE, culint_table_of_pyproject};

/// Looked for in this order in each directory: culint.toml wins over pyproject.toml beside it.
pub const CONFIG_FILE_NAMES: &[&str] = &["culint.toml", "pyproject.toml"];

/// The configuration file that applies in `dir` itself (not its parents), if any. A
/// pyproject.toml without `[tool.culint]` does not count.
pub fn find_config_file(dir: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let culint_toml = dir.join("culint.toml");
    if culint_toml.is_file() {
        return Ok(Some(culint_toml));
    }
    let pyproject = dir.join("pyproject.toml");
    if pyproject.is_file() {
        if std::fs::metadata(&pyproject).is_ok_and(|m| m.len() > MAX_CONFIG_FILE_SIZE) {
            // `load` explains the refusal when this file is named with `--config`; a
            // pyproject.toml this large is not one culint's configuration lives in.
            return Ok(None);
        }
        let text = std::fs::read_to_string(&pyproject)
            .map_err(|e| ConfigError::new(&pyproject, format!("cannot read: {e}")))?;
        // Most pyproject.toml files never mention culint: skip parsing them.
        if !text.contains("culint") {
            return Ok(None);
        }
        if culint_table_of_pyproject(&pyproject, &text)?.is_some() {
            return Ok(Some(pyproject));
        }
    }
    Ok(None)
}
