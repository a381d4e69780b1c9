//! The one error type of configuration loading: it names the file and says what to change.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The configuration file at fault.
    pub path: PathBuf,
    pub message: String,
}

impl ConfigError {
    pub fn new(path: &Path, message: impl Into<String>) -> Self {
        Self { path: path.to_path_buf(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ConfigError {}
