//! Long-running helpers we supervise (mcpo, cloudflared): no stdin, both output streams read
//! line by line, masked, into the ring buffer and handed to a sink (which tags and logs them,
//! or looks for a tunnel URL in them).

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;

use super::{
    reap, start, Masker, ProcessGuard, SpawnError, SpawnSpec, StderrRing, STDERR_RING_BYTES,
};

/// Receives every line a service writes, stdout and stderr alike, masked, without its line
/// ending.
pub type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Lines longer than this are cut (a service that prints a megabyte on one line must not make
/// us hold it).
const MAX_LINE_BYTES: usize = 16 * 1024;

/// Starts `spec` in a new process group with stdin closed, feeding each output line to `sink`
/// and to the guard's ring buffer, and reaps it in the background.
pub fn spawn_service(spec: &SpawnSpec, sink: LineSink) -> Result<ProcessGuard, SpawnError> {
    let mut child = start(spec, Stdio::null())?;
    let pid = child.id().map(|id| id as i32);
    let ring = Arc::new(Mutex::new(StderrRing::new(STDERR_RING_BYTES)));
    let (done_tx, stderr_done) = watch::channel(false);
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
    ];
    let masker = spec.output_masker();
    let mut pending = Vec::new();
    for reader in readers.into_iter().flatten() {
        let ring = Arc::clone(&ring);
        let sink = Arc::clone(&sink);
        pending.push(tokio::spawn(forward_lines(
            reader,
            ring,
            masker.clone(),
            sink,
        )));
    }
    tokio::spawn(async move {
        for task in pending {
            let _ = task.await;
        }
        let _ = done_tx.send(true);
    });
    let exit = reap(child);
    Ok(ProcessGuard {
        pgid: pid,
        program: spec.program.clone(),
        stderr: ring,
        stderr_done,
        exit,
    })
}

/// Reads `reader` line by line until it ends; each line, masked, goes to the ring and `sink`.
pub(super) async fn forward_lines(
    reader: Box<dyn AsyncRead + Send + Unpin>,
    ring: Arc<Mutex<StderrRing>>,
    masker: Masker,
    sink: LineSink,
) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = masker.mask(String::from_utf8_lossy(&line).trim_end_matches('\r'));
                if let Ok(mut ring) = ring.lock() {
                    ring.push(text.as_bytes());
                    ring.push(b"\n");
                }
                sink(&text);
            }
        }
    }
}

/// Reads one line into `out` (without the newline), keeping at most [`MAX_LINE_BYTES`] of it.
/// Returns the number of bytes consumed (0 at end of stream).
async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    out: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = found.unwrap_or(buf.len());
        reader.consume(used);
        consumed += used;
        if found.is_some() {
            return Ok(consumed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::process::Exit;

    #[tokio::test]
    async fn both_streams_reach_the_sink_and_the_ring() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink: LineSink = {
            let seen = Arc::clone(&seen);
            Arc::new(move |line: &str| seen.lock().unwrap().push(line.to_string()))
        };
        let guard = spawn_service(
            &SpawnSpec {
                program: "sh".into(),
                args: vec!["-c".into(), "echo out; echo err >&2; exit 4".into()],
                ..SpawnSpec::default()
            },
            sink,
        )
        .unwrap();
        assert_eq!(
            guard.settle(Duration::from_secs(5)).await,
            Some(Exit::Code(4))
        );
        let mut lines = seen.lock().unwrap().clone();
        lines.sort();
        assert_eq!(lines, ["err", "out"]);
        assert!(guard.stderr_tail(5).contains("err"));
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let seen = Arc::new(Mutex::new(Vec::<usize>::new()));
        let sink: LineSink = {
            let seen = Arc::clone(&seen);
            Arc::new(move |line: &str| seen.lock().unwrap().push(line.len()))
        };
        let guard = spawn_service(
            &SpawnSpec {
                program: "sh".into(),
                args: vec![
                    "-c".into(),
                    "head -c 100000 /dev/zero | tr '\\0' a; echo; echo short".into(),
                ],
                ..SpawnSpec::default()
            },
            sink,
        )
        .unwrap();
        guard.settle(Duration::from_secs(5)).await;
        assert_eq!(*seen.lock().unwrap(), [MAX_LINE_BYTES, 5]);
    }
}
