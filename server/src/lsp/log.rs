//! The server's own log: stderr by default, or a file chosen with `culint server --log-file`.
//! Never stdout, which carries the protocol.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

static LOG_FILE: OnceLock<Mutex<File>> = OnceLock::new();

/// Send the log to `path` instead of stderr, appending to what is there.
pub fn to_file(path: &Path) -> io::Result<()> {
    let file = File::options().create(true).append(true).open(path)?;
    let _ = LOG_FILE.set(Mutex::new(file));
    Ok(())
}

pub fn write(message: &str) {
    match LOG_FILE.get() {
        Some(file) => {
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = writeln!(file, "{message}");
        }
        // The handler tests assert on what reaches the client; stderr would only clutter them.
        None if cfg!(test) => {}
        None => {
            let _ = writeln!(io::stderr().lock(), "{message}");
        }
    }
}
