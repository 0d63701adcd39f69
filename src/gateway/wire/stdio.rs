//! stdin and stdout for the stdio transport. MCP clients connect us through pipes: those are
//! read and written through the reactor (non-blocking, epoll), so a message costs no hand-off
//! to a blocking thread. Anything else (a terminal, a file) goes through tokio's blocking
//! stdio.

use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The process's stdin as an async reader.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// The process's stdout as an async writer.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// stdin and stdout: pipes through the reactor when they are pipes.
pub fn streams() -> (Input, Output) {
    let input: Input = match stdin_pipe() {
        Ok(pipe) => Box::pin(pipe),
        Err(e) => {
            tracing::debug!(error = %e, "stdin is not a pipe: blocking reads");
            Box::pin(tokio::io::stdin())
        }
    };
    let output: Output = match stdout_pipe() {
        Ok(pipe) => Box::pin(pipe),
        Err(e) => {
            tracing::debug!(error = %e, "stdout is not a pipe: blocking writes");
            Box::pin(tokio::io::stdout())
        }
    };
    (input, output)
}

fn stdin_pipe() -> std::io::Result<pipe::Receiver> {
    let fd: OwnedFd = std::io::stdin().as_fd().try_clone_to_owned()?;
    pipe::Receiver::from_owned_fd(fd)
}

fn stdout_pipe() -> std::io::Result<pipe::Sender> {
    let fd: OwnedFd = std::io::stdout().as_fd().try_clone_to_owned()?;
    pipe::Sender::from_owned_fd(fd)
}
