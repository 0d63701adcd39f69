//! Answering "what does each server offer?" the cheap way first: fresh servers from the tool
//! index (nothing started), the rest checked live in parallel, and the index updated with what
//! the live checks saw.

use std::time::{Duration, SystemTime};

use crate::config::ServerEntry;

use super::index::{self, ToolIndex};
use super::preflight::{preflight, PreflightOptions, ServerReport};

/// How [`resolve`] answers.
#[derive(Debug, Clone, Copy)]
pub struct ResolveOptions {
    /// How live checks run.
    pub preflight: PreflightOptions,
    /// Check every server live, ignoring the index (`--refresh`).
    pub refresh: bool,
    /// How old an index entry may be and still answer.
    pub ttl: Duration,
}

impl ResolveOptions {
    /// Live checks with the environment's timeouts, token counting, and the index TTL from
    /// `MCP_LAUNCH_INDEX_TTL`.
    pub fn from_env(refresh: bool) -> Self {
        Self {
            preflight: PreflightOptions {
                connect: crate::mcp::ConnectOptions::from_env(),
                count_tokens: true,
            },
            refresh,
            ttl: index::ttl_from_env(),
        }
    }
}

/// One report per entry, in order: `Status::Cached` ones from the tool index, the others from
/// a parallel live check whose results are then recorded in the index (other servers' entries
/// are kept, so a partial refresh stays partial).
pub async fn resolve(entries: &[ServerEntry], opts: &ResolveOptions) -> Vec<ServerReport> {
    let now = SystemTime::now();
    let mut index = ToolIndex::open();
    let mut reports: Vec<Option<ServerReport>> = entries
        .iter()
        .map(|entry| {
            if opts.refresh || entry.disabled {
                return None;
            }
            let found = index.fresh(entry, opts.ttl, now)?;
            tracing::debug!(server = %entry.qualified, "answered from the tool index");
            Some(index::cached_report(entry, found))
        })
        .collect();
    let live: Vec<ServerEntry> = entries
        .iter()
        .zip(&reports)
        .filter(|(_, report)| report.is_none())
        .map(|(entry, _)| entry.clone())
        .collect();
    if live.is_empty() {
        return reports.into_iter().flatten().collect();
    }
    let mut checked = preflight(&live, &opts.preflight).await;
    for (entry, report) in live.iter().zip(checked.iter_mut()) {
        report.stale = index.record(entry, report, now);
    }
    index.save();
    let mut checked = checked.into_iter();
    for slot in reports.iter_mut().filter(|r| r.is_none()) {
        *slot = checked.next();
    }
    reports.into_iter().flatten().collect()
}
