//! The process's stdin and stdout for the stdio transport (the gateway's and the lean tools
//! server's). MCP clients connect us through pipes (Python's `subprocess`, most clients) or
//! socket pairs (Node's `child_process`, so the TypeScript SDK): both are read and written
//! through the reactor (non-blocking, epoll), so a message costs no hand-off to a blocking
//! thread. Anything else (a terminal, a file) goes through tokio's blocking stdio.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;

use nix::sys::stat::{fstat, SFlag};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;
use tokio::net::UnixStream;

/// The process's stdin as an async reader.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// The process's stdout as an async writer.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// stdin and stdout: through the reactor when they are pipes or sockets.
pub fn streams() -> (Input, Output) {
    let input = io::stdin().as_fd().try_clone_to_owned().and_then(reader);
    let input: Input = input.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdin is neither a pipe nor a socket: blocking reads");
        Box::pin(tokio::io::stdin())
    });
    let output = io::stdout().as_fd().try_clone_to_owned().and_then(writer);
    let output: Output = output.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "stdout is neither a pipe nor a socket: blocking writes");
        Box::pin(tokio::io::stdout())
    });
    (input, output)
}

/// `fd` read through the reactor, when it is a pipe or a socket.
fn reader(fd: OwnedFd) -> io::Result<Input> {
    if is_socket(&fd)? {
        return Ok(Box::pin(socket(fd)?));
    }
    Ok(Box::pin(pipe::Receiver::from_owned_fd(fd)?))
}

/// `fd` written through the reactor, when it is a pipe or a socket.
fn writer(fd: OwnedFd) -> io::Result<Output> {
    if is_socket(&fd)? {
        return Ok(Box::pin(socket(fd)?));
    }
    Ok(Box::pin(pipe::Sender::from_owned_fd(fd)?))
}

fn is_socket(fd: &OwnedFd) -> io::Result<bool> {
    let stat = fstat(fd.as_fd()).map_err(io::Error::from)?;
    Ok(SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFSOCK)
}

/// A socket (one end of the client's socket pair) through the reactor.
fn socket(fd: OwnedFd) -> io::Result<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

#[cfg(test)]
mod tests {
    use std::os::fd::OwnedFd;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{reader, writer};

    #[tokio::test]
    async fn socket_pairs_and_pipes_are_read_and_written_through_the_reactor() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let mut input = reader(OwnedFd::from(ours.try_clone().expect("dup"))).expect("a socket");
        let mut output = writer(OwnedFd::from(ours)).expect("a socket");
        let mut theirs = tokio::net::UnixStream::from_std({
            theirs.set_nonblocking(true).expect("non-blocking");
            theirs
        })
        .expect("registered");
        theirs.write_all(b"ping\n").await.expect("client writes");
        let mut got = [0_u8; 5];
        input.read_exact(&mut got).await.expect("we read");
        assert_eq!(&got, b"ping\n");
        output.write_all(b"pong\n").await.expect("we write");
        output.flush().await.expect("flushed");
        theirs.read_exact(&mut got).await.expect("client reads");
        assert_eq!(&got, b"pong\n");

        let (read_end, write_end) = std::io::pipe().expect("a pipe");
        assert!(reader(OwnedFd::from(read_end)).is_ok());
        assert!(writer(OwnedFd::from(write_end)).is_ok());
    }

    #[tokio::test]
    async fn a_file_is_left_to_blocking_stdio() {
        let file = tempfile::tempfile().expect("a file");
        assert!(reader(OwnedFd::from(file)).is_err());
    }
}
