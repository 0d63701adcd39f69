//! Answering "what does each server offer?" the cheap way first: fresh servers from the tool
//! index (nothing started), the rest checked live in parallel, and the index updated with what
//! the live checks saw.

use std::time::{Duration, SystemTime};

use crate::config::ServerEntry;
use crate::mcp::{ServerInfo, ToolList};

use super::approvals;
use super::index::{self, ToolIndex};
use super::preflight::{
    attach_token_counts, listed_report, preflight, preflight_keeping, OpenSessions,
    PreflightOptions, ServerReport, Status,
};
use super::tool;

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
                count_tokens: true,
                ..PreflightOptions::from_env()
            },
            refresh,
            ttl: index::ttl_from_env(),
        }
    }

    /// The same without token counts, for callers that show none (`up`, `search`): the
    /// tokenizer is then never loaded (~50 MB while it counts, ~25 MB of it kept by the
    /// allocator afterwards). What they record in the tool index lacks counts, which the
    /// next reader that shows them fills in from the token cache.
    pub fn without_tokens(mut self) -> Self {
        self.preflight.count_tokens = false;
        self
    }
}

/// One report per entry, in order: `Status::Cached` ones from the tool index, the others from
/// a parallel live check whose results are then recorded in the index (other servers' entries
/// are kept, so a partial refresh stays partial).
pub async fn resolve(entries: &[ServerEntry], opts: &ResolveOptions) -> Vec<ServerReport> {
    resolve_with(entries, opts, false).await.0
}

/// [`resolve`], keeping open the session of every server checked live that connected (the
/// ones answered from the index were not started).
pub async fn resolve_keeping(
    entries: &[ServerEntry],
    opts: &ResolveOptions,
) -> (Vec<ServerReport>, OpenSessions) {
    resolve_with(entries, opts, true).await
}

async fn resolve_with(
    entries: &[ServerEntry],
    opts: &ResolveOptions,
    keep: bool,
) -> (Vec<ServerReport>, OpenSessions) {
    let now = SystemTime::now();
    let mut index = ToolIndex::open();
    let offered = opts.preflight.connect.offered_capabilities();
    let mut reports: Vec<Option<ServerReport>> = entries
        .iter()
        .map(|entry| {
            if opts.refresh || entry.disabled {
                return None;
            }
            let found = index.fresh(entry, opts.ttl, now)?;
            let report = index::cached_report(entry, found, &offered)?;
            tracing::debug!(server = %entry.qualified, "answered from the tool index");
            Some(report)
        })
        .collect();
    let live_at: Vec<usize> = (0..entries.len())
        .filter(|&i| reports[i].is_none())
        .collect();
    let live: Vec<ServerEntry> = live_at.iter().map(|&i| entries[i].clone()).collect();
    // Counted once below, for live and cached reports together (entries recorded by a caller
    // that counts nothing, `up`, answer without counts).
    let uncounted = PreflightOptions {
        count_tokens: false,
        ..opts.preflight
    };
    let (checked, sessions) = match (live.is_empty(), keep) {
        (true, _) => (Vec::new(), OpenSessions::default()),
        (false, true) => preflight_keeping(&live, &uncounted).await,
        (false, false) => (preflight(&live, &uncounted).await, OpenSessions::default()),
    };
    let mut checked = checked.into_iter();
    for slot in reports.iter_mut().filter(|r| r.is_none()) {
        *slot = checked.next();
    }
    let mut reports: Vec<ServerReport> = reports.into_iter().flatten().collect();
    if opts.preflight.count_tokens {
        attach_token_counts(&mut reports).await;
    }
    if !live_at.is_empty() {
        for &i in &live_at {
            keep_known_tools(&index, &entries[i], &mut reports[i], &offered, now);
            reports[i].stale = index.record(&entries[i], &reports[i], now);
            reports[i].needs = index.needs_of(&entries[i]);
        }
        index.save();
    }
    review(&mut reports);
    (reports, sessions)
}

/// A server that needs login keeps the tools it listed last (from the tool index, whatever
/// their age), so a listing still shows what it offers; its status and error stay.
fn keep_known_tools(
    index: &ToolIndex,
    entry: &ServerEntry,
    report: &mut ServerReport,
    offered: &serde_json::Value,
    now: SystemTime,
) {
    if report.status != Status::NeedsLogin {
        return;
    }
    let Some(known) = (index.fresh(entry, Duration::MAX, now))
        .and_then(|found| index::cached_report(entry, found, offered))
    else {
        return;
    };
    *report = ServerReport {
        status: Status::NeedsLogin,
        error: report.error.take(),
        ..known
    };
}

/// Records the digest of every tool seen for the first time (see [`super::approvals`]) —
/// a changed one keeps its approved digest — and notes in each report its tools changed
/// since approved. The approvals cannot fail a listing: a problem is a warning (and every
/// tool then reads as changed).
fn review(reports: &mut [ServerReport]) {
    for report in reports.iter_mut().filter(|r| r.has_tools()) {
        let (stack, server) = (&report.stack, &report.config_name);
        if let Err(e) = approvals::record_first_seen(stack, server, &report.tools) {
            tracing::warn!(server = %report.name, error = %e, "tool approvals not recorded");
        }
    }
    let approvals = approvals::Approvals::load();
    for report in reports.iter_mut() {
        let (stack, server) = (&report.stack, &report.config_name);
        report.changed = (report.tools.iter())
            .filter(|t| approvals.of(stack, server, t).is_changed())
            .map(|t| {
                let name = tool::name(t);
                let approved = approvals.approved(stack, server, name);
                let definition = approved.map(|a| a.definition.clone());
                (name.to_string(), definition.unwrap_or_default())
            })
            .collect();
    }
}

/// What the tool index knows fresh of each entry, without starting anything: a cached report
/// per known entry, and, for the others, a report with no tools yet and its position in the
/// second list (the gateway checks those in the background).
pub fn from_index(entries: &[ServerEntry]) -> (Vec<ServerReport>, Vec<usize>) {
    let index = ToolIndex::open();
    let (ttl, now) = (index::ttl_from_env(), SystemTime::now());
    // The gateway's sessions offer its servers what it relays to its clients.
    let offered = crate::mcp::relayed_capabilities();
    let cached = |entry: &ServerEntry| {
        let found = index.fresh(entry, ttl, now)?;
        index::cached_report(entry, found, &offered)
    };
    let mut unknown = Vec::new();
    let mut reports = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| match cached(entry) {
            Some(report) => report,
            None => {
                unknown.push(i);
                ServerReport::blank(entry, super::preflight::transport_of(entry))
            }
        })
        .collect::<Vec<_>>();
    review(&mut reports);
    (reports, unknown)
}

/// What the tool index knows fresh of `entry` for a client offering `offered` (the tools it
/// can call), without starting anything; `None` when it knows nothing that fresh.
pub fn indexed(entry: &ServerEntry, offered: &serde_json::Value) -> Option<ServerReport> {
    let index = ToolIndex::open();
    let found = index.fresh(entry, index::ttl_from_env(), SystemTime::now())?;
    index::cached_report(entry, found, offered)
}

/// The client capabilities `tool` of `entry` needs that `offered` lacks, as the listings in
/// the tool index tell; `None` when it needs none or the index does not know it.
pub fn needed_capabilities(
    entry: &ServerEntry,
    tool: &str,
    offered: &serde_json::Value,
) -> Option<Vec<String>> {
    let offered = super::needs::names(Some(offered));
    let needed = ToolIndex::open().needs_of(entry).remove(tool)?;
    let lacking: Vec<String> = needed
        .into_iter()
        .filter(|c| !offered.contains(c))
        .collect();
    (!lacking.is_empty()).then_some(lacking)
}

/// Records in the tool index what a live session listed outside a preflight (the native
/// bridge checking a server it started from the index), without token counts (`up` shows
/// none and must not load the tokenizer; readers fill them in), and returns that report with
/// its stale tools.
pub async fn record_live(entry: &ServerEntry, info: &ServerInfo, list: ToolList) -> ServerReport {
    let mut report = listed_report(entry, info, list);
    remember(entry, &mut report);
    report
}

/// Records a live check's report in the tool index, as [`resolve`] does, and fills in its
/// stale tools. Blocking file I/O (small): callers checking servers one by one (the TUI)
/// call it from one task at a time, or entries recorded concurrently may be lost.
pub fn remember(entry: &ServerEntry, report: &mut ServerReport) {
    let mut index = ToolIndex::open();
    report.stale = index.record(entry, report, SystemTime::now());
    report.needs = index.needs_of(entry);
    index.save();
    review(std::slice::from_mut(report));
}

/// Fills `tool_tokens` of every report (from the token cache, else the tokenizer, loaded at
/// most once for the call).
pub async fn count_tokens(reports: &mut [ServerReport]) {
    attach_token_counts(reports).await;
}
