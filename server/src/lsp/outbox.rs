//! The one way out to the client: tower-lsp-server's transport writes its frames here, and the
//! server sends its diagnostics here itself, serialized straight to bytes.
//!
//! The transport's `Client` turns every notification's params into a `serde_json::Value` tree,
//! writes the tree out, then frees it. For the hundreds of diagnostics of a large script that
//! cost half as much again as linting it after a keystroke; written straight out they cost a
//! third of that (BENCHMARKS.md), so diagnostics bypass it.
//!
//! Frames never interleave. The transport encodes a whole message into its buffer before writing
//! any of it, and [`TransportOutput`] always takes the whole buffer, so each write it receives
//! is a run of whole frames; [`Outbox::send_now`] takes whole frames too. A thread of its own writes
//! the queue out in order, with blocking writes (see `stdio` for why not tokio's stdout). The
//! queue is bounded: a client that reads slowly holds the server back rather than letting frames
//! pile up.

use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;
use tokio::sync::mpsc::{Receiver, Sender, channel};
use tokio_util::sync::PollSender;

/// How many frames may wait to be written before a sender waits.
const QUEUED_FRAMES: usize = 64;

/// Queues frames for the client.
#[derive(Clone)]
pub struct Outbox {
    queue: Sender<Frame>,
}

/// What tower-lsp-server writes to: it queues each write whole, once the queue has room.
pub struct TransportOutput {
    queue: PollSender<Frame>,
}

impl Outbox {
    /// Start writing to `output` on a thread of its own: the outbox for the server's own
    /// messages, and the writer to hand to the transport.
    pub fn start<O>(output: O) -> io::Result<(Outbox, TransportOutput)>
    where
        O: Write + Send + 'static,
    {
        let (queue, queued) = channel(QUEUED_FRAMES);
        std::thread::Builder::new().name("culint-output".to_owned()).spawn(move || write_out(output, queued))?;
        Ok((Outbox { queue: queue.clone() }, TransportOutput { queue: PollSender::new(queue) }))
    }

    /// Queue a frame, waiting on this thread while the queue is full: for the threads that lint
    /// and the blocking pool, never for an async thread. Nothing is sent once the client has
    /// stopped reading.
    pub fn send_now(&self, frame: Frame) {
        // A closed queue means the session is over: there is no one left to tell.
        drop(self.queue.blocking_send(frame));
    }

    /// Queue a frame from an async thread, waiting while the queue is full.
    pub async fn send(&self, frame: Frame) {
        // As in `send_now`: a closed queue means the session is over.
        drop(self.queue.send(frame).await);
    }
}

/// A message as it goes over the wire: its header, then its JSON body. The body is written
/// behind room left for the header, so that a large one is not copied to put the header in
/// front of it.
pub struct Frame {
    bytes: Vec<u8>,
    /// Where the frame starts in `bytes`.
    start: usize,
}

impl Frame {
    /// Room for `Content-Length: `, any length's digits and the blank line after them.
    const HEADER_ROOM: usize = 40;

    /// A buffer to write a body of about `body_capacity` bytes into, after the room for its
    /// header: the body's frame is [`Frame::of_buffer`].
    pub fn buffer(body_capacity: usize) -> Vec<u8> {
        let mut buffer = Vec::with_capacity(Self::HEADER_ROOM + body_capacity);
        buffer.resize(Self::HEADER_ROOM, b' ');
        buffer
    }

    /// The frame of the body written into `buffer`, which came from [`Frame::buffer`].
    pub fn of_buffer(mut buffer: Vec<u8>) -> Self {
        let header = format!("Content-Length: {}\r\n\r\n", buffer.len() - Self::HEADER_ROOM);
        let start = Self::HEADER_ROOM - header.len();
        buffer[start..Self::HEADER_ROOM].copy_from_slice(header.as_bytes());
        Self { bytes: buffer, start }
    }

    /// Bytes that are whole frames already.
    fn whole(bytes: Vec<u8>) -> Self {
        Self { bytes, start: 0 }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

impl AsyncWrite for TransportOutput {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let sent = match ready!(self.queue.poll_reserve(cx)) {
            Ok(()) => self.queue.send_item(Frame::whole(buf.to_vec())).map(|()| buf.len()),
            Err(closed) => Err(closed),
        };
        Poll::Ready(sent.map_err(|_| io::ErrorKind::BrokenPipe.into()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Write queued frames in order, flushing whenever the queue runs dry, until every sender is
/// gone or the client stops reading. Dropping the queue then tells the senders.
fn write_out<O: Write>(mut output: O, mut queued: Receiver<Frame>) {
    while let Some(frame) = queued.blocking_recv() {
        let mut written = output.write_all(frame.as_bytes());
        while written.is_ok()
            && let Ok(frame) = queued.try_recv()
        {
            written = output.write_all(frame.as_bytes());
        }
        if let Err(error) = written.and_then(|()| output.flush()) {
            super::log::write(&format!("culint: cannot write to the client: {error}"));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::io::SyncIoBridge;

    use super::*;

    fn notification(method: &str, params: impl serde::Serialize) -> Frame {
        let message = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        let mut buffer = Frame::buffer(0);
        serde_json::to_writer(&mut buffer, &message).unwrap();
        Frame::of_buffer(buffer)
    }

    /// The header is written into the room in front of the body, whatever the length's digits.
    #[test]
    fn a_frame_is_its_header_then_its_body() {
        for length in [0, 9, 10, 99_999, 1_000_000] {
            let mut buffer = Frame::buffer(length);
            buffer.extend(std::iter::repeat_n(b'x', length));
            let frame = Frame::of_buffer(buffer);
            let expected = format!("Content-Length: {length}\r\n\r\n{}", "x".repeat(length));
            assert_eq!(frame.as_bytes(), expected.as_bytes());
        }
    }

    #[tokio::test]
    async fn frames_from_both_writers_arrive_whole_and_in_order() {
        let (server_side, mut client_side) = tokio::io::duplex(16);
        let (outbox, mut transport) = Outbox::start(SyncIoBridge::new(server_side)).unwrap();
        transport.write_all(b"Content-Length: 2\r\n\r\n{}").await.unwrap();
        let queued = outbox.clone();
        tokio::task::spawn_blocking(move || queued.send_now(notification("a/b", [1, 2]))).await.unwrap();
        transport.write_all(b"Content-Length: 4\r\n\r\nnull").await.unwrap();
        drop((outbox, transport));
        let mut received = String::new();
        client_side.read_to_string(&mut received).await.unwrap();
        let body = r#"{"jsonrpc":"2.0","method":"a/b","params":[1,2]}"#;
        let expected = format!(
            "Content-Length: 2\r\n\r\n{{}}Content-Length: {}\r\n\r\n{body}Content-Length: 4\r\n\r\nnull",
            body.len()
        );
        assert_eq!(received, expected);
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_ends_the_transport_output() {
        let (server_side, client_side) = tokio::io::duplex(16);
        drop(client_side);
        let (outbox, mut transport) = Outbox::start(SyncIoBridge::new(server_side)).unwrap();
        tokio::task::spawn_blocking(move || outbox.send_now(notification("a/b", ()))).await.unwrap();
        // The writer thread sees the closed pipe and stops; the transport's next write fails.
        let mut failed = false;
        for _ in 0..100 {
            if transport.write_all(b"x").await.is_err() {
                failed = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(failed, "writes kept succeeding after the client went away");
    }

    #[tokio::test]
    async fn a_client_that_reads_slowly_holds_the_sender_back() {
        let (server_side, mut client_side) = tokio::io::duplex(64);
        let (outbox, transport) = Outbox::start(SyncIoBridge::new(server_side)).unwrap();
        drop(transport);
        let frames = QUEUED_FRAMES * 4;
        let sending = tokio::task::spawn_blocking(move || {
            for i in 0..frames {
                outbox.send_now(notification("a/b", i));
            }
        });
        // Nothing reads: the queue fills and the sender waits.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!sending.is_finished(), "the sender queued every frame while the client read nothing");
        // Reading lets it finish, and every frame arrives.
        let mut received = String::new();
        client_side.read_to_string(&mut received).await.unwrap();
        sending.await.unwrap();
        assert_eq!(received.matches("Content-Length").count(), frames);
        assert!(received.ends_with(&format!("\"params\":{}}}", frames - 1)));
    }
}
