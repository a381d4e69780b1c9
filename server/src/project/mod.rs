//! Cross-file knowledge: summaries of the functions in other modules of the same project.

/// Function summaries of the project files a lint run can see.
#[derive(Debug, Default)]
pub struct ProjectIndex {}
