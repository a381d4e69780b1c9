//! A filter in front of the protocol transport: it passes on each well-formed message and drops,
//! with a line in the server's log, each one that is not.
//!
//! tower-lsp-server answers the first malformed message (bad JSON, a missing `Content-Length`,
//! a body that is not a JSON-RPC message) with a parse error and then stops reading, because its
//! framed reader ends at the first decode error: one bad message from an editor would end the
//! session. Filtering here keeps the server alive.
//!
//! The filter reads the client's input on a thread of its own, with blocking reads: not with
//! tokio's stdin, which reads on the blocking pool (see `stdio`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::DuplexStream;
use tokio::sync::oneshot;
use tokio_util::io::SyncIoBridge;
use tower_lsp_server::jsonrpc::{Request, Response};

/// A header line longer than this is garbage, not a header.
const MAX_HEADER_LINE: u64 = 8 * 1024;
/// The largest message accepted: a few hundred megabytes of source text is no editor's buffer.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;
/// How much of the input is read at once.
const READ_BUFFER: usize = 64 * 1024;

/// One framed unit read from the client.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    Message(Vec<u8>),
    Malformed(String),
}

/// The client's stream with every malformed message removed; a signal that fires once the `exit`
/// notification has been passed on; and whether a `shutdown` request was passed on before it.
/// The protocol's exit code depends on that, and the transport may see `exit` before the handler
/// of a `shutdown` just ahead of it has run. `input` is read on a thread of its own; the stream
/// ends when the input does. Must be called inside a tokio runtime.
pub fn well_formed_messages<I>(input: I) -> io::Result<(DuplexStream, oneshot::Receiver<()>, Arc<AtomicBool>)>
where
    I: Read + Send + 'static,
{
    let (forward, filtered) = tokio::io::duplex(64 * 1024);
    let mut forward = SyncIoBridge::new(forward);
    let (exit_tx, exit_rx) = oneshot::channel();
    let mut exit_tx = Some(exit_tx);
    let shutdown_received = Arc::new(AtomicBool::new(false));
    let shutdown_seen = Arc::clone(&shutdown_received);
    std::thread::Builder::new().name("culint-input".to_owned()).spawn(move || {
        let mut input = BufReader::with_capacity(READ_BUFFER, input);
        loop {
            match next_frame(&mut input) {
                Ok(Some(Frame::Message(body))) => {
                    let header = format!("Content-Length: {}\r\n\r\n", body.len());
                    let sent = forward.write_all(header.as_bytes()).and_then(|()| forward.write_all(&body));
                    if sent.is_err() {
                        // The transport has stopped reading: the session is over.
                        break;
                    }
                    match closing_message(&body) {
                        Some(Closing::Shutdown) if exit_tx.is_some() => shutdown_seen.store(true, Ordering::SeqCst),
                        Some(Closing::Exit) => {
                            if let Some(exit_tx) = exit_tx.take() {
                                let _ = exit_tx.send(());
                            }
                        }
                        _ => {}
                    }
                }
                Ok(Some(Frame::Malformed(reason))) => {
                    super::log::write(&format!("culint: ignored a malformed message from the client: {reason}"));
                }
                Ok(None) => break,
                Err(error) => {
                    super::log::write(&format!("culint: cannot read from the client: {error}"));
                    break;
                }
            }
        }
    })?;
    Ok((filtered, exit_rx, shutdown_received))
}

/// The messages that end a session.
#[derive(Debug, PartialEq, Eq)]
enum Closing {
    /// The `shutdown` request.
    Shutdown,
    /// The `exit` notification.
    Exit,
}

/// Whether `body` is the `shutdown` request or the `exit` notification. Only a body that names
/// one of them is decoded.
fn closing_message(body: &[u8]) -> Option<Closing> {
    let finder = |name: &[u8]| memchr::memmem::find(body, name).is_some();
    if !finder(b"\"exit\"") && !finder(b"\"shutdown\"") {
        return None;
    }
    let message = serde_json::from_slice::<serde_json::Value>(body).ok()?;
    match (message["method"].as_str(), message.get("id").is_some()) {
        (Some("exit"), false) => Some(Closing::Exit),
        (Some("shutdown"), true) => Some(Closing::Shutdown),
        _ => None,
    }
}

/// Read the next frame; `None` at the end of the stream.
fn next_frame<R: BufRead>(input: &mut R) -> io::Result<Option<Frame>> {
    let mut content_length = None;
    let mut problem = None;
    let mut line = Vec::new();
    let mut saw_header = false;
    loop {
        line.clear();
        let read = (&mut *input).take(MAX_HEADER_LINE).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(if saw_header {
                Some(Frame::Malformed("the stream ended inside a header".into()))
            } else {
                None
            });
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            // Blank lines between messages carry nothing.
            continue;
        }
        saw_header = true;
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(length) => content_length = Some(length),
                    Err(_) => problem = Some(format!("`Content-Length` is `{}`, not a number", value.trim())),
                }
            }
            Some(_) => {}
            None => problem = Some(format!("`{}` is not a header", truncate(text))),
        }
    }
    if let Some(problem) = problem {
        return Ok(Some(Frame::Malformed(problem)));
    }
    let Some(length) = content_length else {
        return Ok(Some(Frame::Malformed("a message without `Content-Length`".into())));
    };
    if length > MAX_MESSAGE {
        // Skip the body without holding it.
        io::copy(&mut (&mut *input).take(length as u64), &mut io::sink())?;
        return Ok(Some(Frame::Malformed(format!("a message of {length} bytes is over the limit of {MAX_MESSAGE}"))));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body)?;
    Ok(Some(match check_message(&body) {
        Ok(()) => Frame::Message(body),
        Err(reason) => Frame::Malformed(reason),
    }))
}

/// Accept exactly what the transport can decode: a JSON-RPC request, notification or response.
fn check_message(body: &[u8]) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON ({e})"))?;
    if serde_json::from_value::<Request>(value.clone()).is_ok() || serde_json::from_value::<Response>(value).is_ok() {
        Ok(())
    } else {
        Err("valid JSON, but not a JSON-RPC request, notification or response".into())
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = next_frame(&mut reader).unwrap() {
            out.push(frame);
        }
        out
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;

    #[test]
    fn passes_messages_and_drops_broken_ones() {
        let input = [
            framed(PING),
            framed(r#"{"jsonrpc": "2.0", "id": 999, "method": "#),
            framed("{}"),
            framed("[1, 2]"),
            "Content-Length: nine\r\n\r\n".to_owned(),
            "garbage without a colon\r\n\r\n".to_owned(),
            "Content-Type: text/plain\r\n\r\n".to_owned(),
            framed(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#),
        ]
        .concat();
        let frames = frames(input.as_bytes());
        let kinds: Vec<bool> = frames.iter().map(|f| matches!(f, Frame::Message(_))).collect();
        assert_eq!(kinds, [true, false, false, false, false, false, false, true], "{frames:?}");
        assert_eq!(frames[0], Frame::Message(PING.as_bytes().to_vec()));
        assert!(matches!(&frames[1], Frame::Malformed(reason) if reason.starts_with("invalid JSON")));
        assert!(matches!(&frames[4], Frame::Malformed(reason) if reason.contains("`nine`, not a number")));
    }

    #[test]
    fn a_body_that_is_not_utf8_is_dropped() {
        let mut input = b"Content-Length: 3\r\n\r\n\xff\xfe\xfd".to_vec();
        input.extend(framed(PING).as_bytes());
        let frames = frames(&input);
        assert!(matches!(&frames[0], Frame::Malformed(_)));
        assert_eq!(frames[1], Frame::Message(PING.as_bytes().to_vec()));
    }

    #[tokio::test]
    async fn the_filtered_stream_carries_the_good_messages() {
        let input = [framed("not json"), framed(PING)].concat();
        let (mut filtered, exit_received, _) = well_formed_messages(io::Cursor::new(input.into_bytes())).unwrap();
        let mut out = String::new();
        filtered.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, framed(PING));
        assert!(exit_received.await.is_err(), "no `exit` was sent");
    }

    /// A message larger than every buffer on its way arrives whole.
    #[tokio::test]
    async fn a_large_message_arrives_whole() {
        let text: String = (0..3 * 1024 * 1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let message = format!(r#"{{"jsonrpc":"2.0","method":"x/y","params":"{text}"}}"#);
        let (mut filtered, _, _) = well_formed_messages(io::Cursor::new(framed(&message).into_bytes())).unwrap();
        let mut out = String::new();
        filtered.read_to_string(&mut out).await.unwrap();
        assert!(out == framed(&message), "the message changed on the way");
    }

    #[tokio::test]
    async fn the_exit_notification_is_signalled_once_passed_on() {
        let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let input = [framed(PING), framed(exit)].concat();
        let (mut filtered, exit_received, shutdown_received) =
            well_formed_messages(io::Cursor::new(input.into_bytes())).unwrap();
        exit_received.await.expect("exit is signalled");
        let mut out = String::new();
        filtered.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, [framed(PING), framed(exit)].concat());
        // PING is a `shutdown` request, passed on before `exit`.
        assert!(shutdown_received.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_shutdown_request_passed_on_before_exit_is_noted() {
        let shutdown = r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#;
        let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        // A notification named `shutdown` and a request named `exit` are neither.
        let lookalikes = [r#"{"jsonrpc":"2.0","method":"shutdown"}"#, r#"{"jsonrpc":"2.0","id":8,"method":"exit"}"#];
        for (messages, noted) in
            [(vec![shutdown, exit], true), (lookalikes.to_vec(), false), (vec![exit, shutdown], false)]
        {
            let input: String = messages.iter().map(|m| framed(m)).collect();
            let (mut filtered, _, shutdown_received) =
                well_formed_messages(io::Cursor::new(input.into_bytes())).unwrap();
            filtered.read_to_string(&mut String::new()).await.unwrap();
            assert_eq!(shutdown_received.load(Ordering::SeqCst), noted, "{messages:?}");
        }
    }
}
