//! Jupyter notebooks: the `.ipynb` file ([`ipynb`]), the IPython lines that are not Python
//! ([`magics`]), and the code cells as one program the rules read ([`program`]). The CLI and the
//! language server both lint a notebook as its [`Program`] and map each finding back to a cell.

pub mod ipynb;
pub mod magics;
pub mod program;

pub use ipynb::{CellKind, NotebookFile};
pub use program::{CellOffset, Program};

/// Whether a path names a notebook.
pub fn is_notebook(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
}

/// A notebook's program with the number each of its cells has in the notebook: one-based,
/// counting every cell (markdown too), as one counts them scrolling down.
#[derive(Clone, Debug)]
pub struct NumberedProgram {
    pub program: Program,
    /// The notebook number of each of the program's cells.
    pub numbers: Vec<usize>,
}
