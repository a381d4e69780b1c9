//! The process's stdin and stdout as the server uses them: each on a thread of its own, with
//! blocking reads and writes.
//!
//! Tokio's own stdin and stdout run each read and write on the blocking pool, which is bounded
//! by the cores (see `cli/server.rs`). The read of stdin waits there for the whole session, so on
//! one core no write could ever start and the server never answered `initialize`; on two, every
//! write waited behind any engine work on the pool.

use std::fs::File;
use std::io::{self, Read, Write};

use tokio::io::DuplexStream;
use tokio_util::io::SyncIoBridge;

/// How much of the input may wait, read but not yet taken by the server: a few large messages
/// (a `didOpen` carries the whole file).
const INPUT_BUFFER: usize = 1 << 20;
/// The most one read of the input takes.
const READ_CHUNK: usize = 64 * 1024;

/// The bytes of `input`, read on a thread of its own, as a stream for the server. The stream
/// ends when the input does. Must be called inside a tokio runtime.
pub fn input_on_thread<R: Read + Send + 'static>(mut input: R) -> io::Result<DuplexStream> {
    let (stream, forward) = tokio::io::duplex(INPUT_BUFFER);
    let mut forward = SyncIoBridge::new(forward);
    std::thread::Builder::new().name("culint-input".to_owned()).spawn(move || {
        let mut chunk = vec![0; READ_CHUNK];
        loop {
            let read = match input.read(&mut chunk) {
                Ok(0) => return,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    super::log::write(&format!("culint: cannot read from the client: {error}"));
                    return;
                }
            };
            // A failed write means the session is over and nothing reads the stream any more.
            if forward.write_all(&chunk[..read]).is_err() {
                return;
            }
        }
    })?;
    Ok(stream)
}

/// The process's stdout, unbuffered: each frame goes out in one write, not split at its header's
/// line break as `std::io::Stdout`'s line buffering would.
pub fn stdout() -> io::Result<File> {
    #[cfg(unix)]
    let handle = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
    #[cfg(windows)]
    let handle = std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?;
    Ok(File::from(handle))
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_input_arrives_whole_and_ends_with_the_input() {
        // More than the stream holds at once, so the thread waits for the reader part of the way.
        let sent: Vec<u8> = (0..3 * INPUT_BUFFER).map(|i| (i % 251) as u8).collect();
        let mut stream = input_on_thread(io::Cursor::new(sent.clone())).unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        assert_eq!(received.len(), sent.len());
        assert!(received == sent, "the bytes changed on the way");
    }
}
