//! Cross-file knowledge: summaries of the functions in other modules of the same project.

use std::path::Path;

use crate::semantic::FunctionSummary;

/// The answer to "what does `module.function` do?" for a call in some file.
#[derive(Clone, Debug)]
pub enum ProjectLookup {
    Found(FunctionSummary),
    /// The module is a project module (relative import, or a file that should exist under the
    /// project root) but it or the function cannot be found: rules stay quiet.
    Missing,
    /// Not a project module: a library.
    NotInProject,
}

/// Function summaries of the project files a lint run can see.
#[derive(Debug, Default)]
pub struct ProjectIndex {}

impl ProjectIndex {
    pub fn lookup(&self, _from_file: Option<&Path>, _qualified: &str) -> ProjectLookup {
        ProjectLookup::NotInProject
    }
}
