//! The bodies of the `cargo fuzz` targets (`fuzz/fuzz_targets/`), one function per hostile-input
//! parser: each takes arbitrary bytes, drives the real code path and panics only when a
//! property breaks. They live in the library so that `cargo test` replays every target's corpus
//! (`fuzz/corpus/<target>/`) on stable Rust (`fuzzing::tests`), and the fuzz crate stays a thin
//! shell around them; `scripts/fuzz.sh` runs them under libFuzzer.
//!
//! This room sits on the top floor (it reaches into every parser) and nothing uses it.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

mod edits;
mod gateway;
mod inputs;
mod outputs;
mod wire;

#[cfg(test)]
mod tests;

pub use edits::{client_config, overrides};
pub use gateway::{http_batch, stdio_splice};
pub use inputs::{config, front_path};
pub use outputs::{cut, jsonpath, read_output};
pub use wire::{gateway_wire, sse, stdio};

/// A target's body: arbitrary bytes in, a panic when a property breaks.
pub type Body = fn(&[u8]);

/// Every target: its name (its directory under `fuzz/corpus/` and its file under
/// `fuzz/fuzz_targets/`) and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("stdio", stdio),
    ("sse", sse),
    ("config", config),
    ("jsonpath", jsonpath),
    ("read_output", read_output),
    ("front_path", front_path),
    ("cut", cut),
    ("gateway_wire", gateway_wire),
    ("overrides", overrides),
    ("client_config", client_config),
    ("http_batch", http_batch),
    ("stdio_splice", stdio_splice),
];

/// An error as the user sees it: its message, kind and help, none empty.
fn rendered(error: &dyn crate::error::Actionable) {
    assert!(!error.to_string().is_empty() && !error.kind().is_empty());
    assert!(!error.help().is_empty(), "{error} has no help");
}

/// Runs a future that never waits (its input is in memory) to its end.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("an in-memory read waited"),
    }
}

/// The first byte of `data` (0 when empty) and the rest.
fn split_first(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (*first, rest),
        None => (0, data),
    }
}
