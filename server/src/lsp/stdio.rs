//! The process's stdout as the server writes to it: from a thread of its own (see `outbox`), with
//! blocking writes, each frame in one.
//!
//! Tokio's own stdin and stdout run each read and write on the blocking pool, which is bounded
//! by the cores (see `cli/server.rs`). A read of stdin waits there for the whole session, so on
//! one core no write could ever start and the server never answered `initialize`; on two, every
//! write waited behind any engine work on the pool. So neither is used: the input is read on a
//! thread of its own too (see `framing`).

use std::fs::File;
use std::io;

/// The process's stdout, unbuffered: each frame goes out in one write, not split at its header's
/// line break as `std::io::Stdout`'s line buffering would.
pub fn stdout() -> io::Result<File> {
    #[cfg(unix)]
    let handle = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
    #[cfg(windows)]
    let handle = std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?;
    Ok(File::from(handle))
}
