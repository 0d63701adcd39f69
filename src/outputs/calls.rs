//! Tool results of calls (the gateway's, `call`'s, the native bridge's when asked), within
//! their budget: what is over it is cut at a clean boundary and kept behind a handle that
//! `read_output` reads on, for the client that made the call only. Every call is recorded in
//! the usage log (sizes and time, never arguments or content) by a writer thread of its own, so
//! a call waits on no file.
//!
//! A result smaller in bytes than the budget in tokens fits without counting (tokens never
//! outnumber bytes): it is measured and passed on in place; only larger ones go to a blocking
//! task (the tokenizer, the handle's file).

use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::{
    json_len, read, Budget, ClientScope, OutputsError, Stats, Store, Structured, UsageLog,
    UsageRecord,
};

/// The budget, the handle store and the usage log of one gateway or command.
pub struct Outputs {
    budget: Budget,
    /// `None` when the store cannot be opened (results then pass whole).
    store: Option<Arc<Store>>,
    usage: UsageWriter,
}

impl Outputs {
    /// Outputs within `budget` (0: off, unless a tool's own budget says otherwise), kept in
    /// the user's store.
    pub fn new(budget: Budget) -> Outputs {
        let store = match Store::open_default() {
            Ok(store) => Some(Arc::new(store)),
            Err(e) => {
                tracing::warn!(error = %e, "no output store: results pass uncut");
                None
            }
        };
        Outputs {
            budget,
            store,
            usage: UsageWriter::start(UsageLog::open_default()),
        }
    }

    /// The `read_output` tool, when results are budgeted.
    pub fn tool(&self) -> Option<Value> {
        let budgeted = self.store.is_some() && !self.budget.is_off();
        budgeted.then(super::read_output_tool)
    }

    /// `read_output` for `scope`, as a `CallToolResult` (errors as `isError`); `None` when
    /// results are not budgeted (no such tool).
    pub async fn read(&self, arguments: Value, scope: ClientScope) -> Option<Value> {
        let read = self.read_checked(arguments, scope).await?;
        Some(read::as_result(read))
    }

    /// `read_output` for `scope`: the part read as a `CallToolResult`, or why not; `None`
    /// when results are not budgeted.
    pub async fn read_checked(
        &self,
        arguments: Value,
        scope: ClientScope,
    ) -> Option<Result<Value, OutputsError>> {
        let store = Arc::clone(self.store.as_ref()?);
        let budget = self.budget;
        let read = tokio::task::spawn_blocking(move || {
            read::read_checked(&store, &scope, &arguments, budget)
        });
        read.await.ok()
    }

    /// The budget of tools without one of their own (0 when results pass whole).
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// `result` of the call `served` says, within its tool's own budget or the default, and
    /// the call recorded.
    pub async fn apply(
        &self,
        served: Served,
        result: Value,
        scope: ClientScope,
        took: Duration,
    ) -> Value {
        let called = (served.server.as_str(), served.tool.as_str());
        let budget = served.budget.unwrap_or(self.budget);
        let bytes = json_len(&result);
        let store = match &self.store {
            // Tokens never outnumber bytes: a result this small fits without counting.
            Some(store) if !budget.is_off() && bytes > budget.max_tokens => Arc::clone(store),
            _ => return self.passed_whole(called, result, bytes, &scope, took),
        };
        let structured = served.structured.clone();
        let cut = tokio::task::spawn_blocking(move || {
            let budgeted = super::budget_result_with(result, budget, &store, &scope, &structured);
            (budgeted.map_err(|e| e.to_string()), scope)
        })
        .await;
        match cut {
            Ok((Ok(budgeted), scope)) => {
                self.usage.record(called, &scope, &budgeted.stats, took);
                count_cut(called.0, &budgeted.stats);
                budgeted.result
            }
            Ok((Err(message), _)) => unbudgeted(&message),
            Err(e) => unbudgeted(&e.to_string()),
        }
    }

    /// [`Outputs::apply`] on this thread (blocking: file writes, maybe the tokenizer), for a
    /// caller that is not in a hurry (`call --batch` printing a result).
    pub fn apply_blocking(
        &self,
        called: (&str, &str),
        result: Value,
        scope: &ClientScope,
        took: Duration,
    ) -> Value {
        let store = match &self.store {
            Some(store) if !self.budget.is_off() => store,
            _ => {
                let bytes = json_len(&result);
                return self.passed_whole(called, result, bytes, scope, took);
            }
        };
        match super::budget_result(result, self.budget, store, scope) {
            Ok(budgeted) => {
                self.usage.record(called, scope, &budgeted.stats, took);
                count_cut(called.0, &budgeted.stats);
                budgeted.result
            }
            Err(e) => unbudgeted(&e.to_string()),
        }
    }

    /// Records a call whose result (of `bytes`) passes whole, and passes it.
    fn passed_whole(
        &self,
        called: (&str, &str),
        result: Value,
        bytes: usize,
        scope: &ClientScope,
        took: Duration,
    ) -> Value {
        let stats = Stats {
            bytes_sent: bytes,
            bytes_total: bytes,
            tokens_sent: None,
            tokens_cut: 0,
            is_cut: false,
            handles: Vec::new(),
        };
        self.usage.record(called, scope, &stats, took);
        result
    }
}

/// A call as [`Outputs::apply`] budgets and records it.
pub struct Served {
    /// The server (the gateway itself for its meta-tools).
    pub server: String,
    /// The tool on it.
    pub tool: String,
    /// The project's budget for the tool, if it set one.
    pub budget: Option<Budget>,
    /// How its `structuredContent` may be cut.
    pub structured: Structured,
}

/// How long the writer waits after a call's record for more, so that calls in a burst share
/// one write: each write of the log is six system calls (directory, size, open, write, close),
/// and paying them per call made them most of a gateway's system calls per `tools/call`.
const COALESCE: Duration = Duration::from_millis(20);

/// The usage log's writer thread: records are queued, never waited for, and written in
/// batches (what arrived within [`COALESCE`] of the first); dropping the writer writes what is
/// queued at once and ends the thread.
struct UsageWriter {
    queue: Option<mpsc::Sender<UsageRecord>>,
    thread: Option<JoinHandle<()>>,
}

impl UsageWriter {
    fn start(log: UsageLog) -> UsageWriter {
        let (queue, records) = mpsc::channel::<UsageRecord>();
        let thread = std::thread::Builder::new()
            .name("usage-log".into())
            .spawn(move || write_batches(&log, &records))
            .map_err(|e| tracing::warn!(error = %e, "no usage log"))
            .ok();
        UsageWriter {
            queue: thread.as_ref().map(|_| queue),
            thread,
        }
    }

    fn record(
        &self,
        (server, tool): (&str, &str),
        scope: &ClientScope,
        stats: &Stats,
        took: Duration,
    ) {
        let record = UsageRecord::new(server, tool, scope, stats, took);
        if let Some(queue) = &self.queue {
            let _ = queue.send(record);
        }
    }
}

impl Drop for UsageWriter {
    fn drop(&mut self) {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            // Out of its wait for more: what is queued is written now.
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The writer's loop: a batch begins with a record, takes what else arrives within
/// [`COALESCE`] (senders only queue: the thread sleeps, nobody wakes it per record), and is
/// written in one append. Ends once every sender is gone.
fn write_batches(log: &UsageLog, records: &mpsc::Receiver<UsageRecord>) {
    while let Ok(first) = records.recv() {
        std::thread::park_timeout(COALESCE);
        let batch: Vec<UsageRecord> = std::iter::once(first).chain(records.try_iter()).collect();
        if let Err(e) = log.append_all(&batch) {
            tracing::debug!(error = %e, "usage not recorded");
        }
    }
}

/// Counts a cut result in the metrics: the bytes and tokens kept out of the answer (the
/// tokens as the budget pass counted them: nothing is counted again here), the handles made.
fn count_cut(server: &str, stats: &Stats) {
    if stats.is_cut {
        let cut = crate::observe::OutputCut {
            bytes: stats.bytes_total.saturating_sub(stats.bytes_sent),
            tokens: stats.tokens_cut,
            handles: stats.handles.len(),
        };
        crate::observe::output_budgeted(server, cut);
    }
}

/// What the client gets when its result could not be budgeted (never the whole result
/// unbounded).
fn unbudgeted(message: &str) -> Value {
    tracing::warn!(%message, "a result could not be budgeted");
    serde_json::json!({"isError": true, "content": [{"type": "text",
        "text": format!("mcp-launch could not keep this result within its budget: {message}")}]})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst of calls' records is written in one append (the log's system calls once per
    /// batch, not per call), and dropping the writer writes what is queued at once. With the
    /// log rotated before every append, the current file holds exactly the last append's lines.
    #[test]
    fn a_burst_of_records_is_written_in_one_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("usage.jsonl");
        let writer = UsageWriter::start(UsageLog::at(&path).with_rotate_bytes(1));
        let scope = ClientScope::local();
        let stats = Stats {
            bytes_sent: 10,
            bytes_total: 10,
            tokens_sent: None,
            tokens_cut: 0,
            is_cut: false,
            handles: Vec::new(),
        };
        for _ in 0..50 {
            writer.record(("s", "t"), &scope, &stats, Duration::ZERO);
        }
        let started = std::time::Instant::now();
        drop(writer);
        assert!(started.elapsed() < COALESCE * 5, "{:?}", started.elapsed());
        let lines = |name: &str| {
            std::fs::read_to_string(dir.path().join(name))
                .unwrap_or_default()
                .lines()
                .count()
        };
        let last = lines("usage.jsonl");
        assert!(
            last > 1,
            "one append per record: the last held {last} line(s)"
        );
        assert!(last + lines("usage.jsonl.1") <= 50);
    }
}
