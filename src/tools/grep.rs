//! `grep`: a regex over the files under a path (gitignore-aware, parallel), ranked —
//! definitions before uses, then files by match density — within the budget, ending with
//! breadcrumbs to what was left out.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkFinish, SinkMatch,
};
use ignore::{WalkBuilder, WalkState};

use super::walk::{walker, Bounds};
use super::{Answer, ToolError, Tools};
use crate::outputs::{self, Kind};

const USAGE: &str =
    "pattern (regex, required), path, glob (e.g. *.rs), context (lines), ignore_case";

/// Text of a shown line beyond this is cut (minified files would drown the answer).
const LINE_SHOWN_BYTES: usize = 300;

/// Lines kept for the answer and its handle; matches past it are counted, not kept.
const LINES_KEPT: usize = 200_000;

/// Tokens kept back for the breadcrumbs line (checked after: the answer is fitted again
/// when they take more).
const BREADCRUMB_TOKENS: usize = 100;

/// A line that declares the name the match starts in: `fn x`, `def x`, `class X`…
static DEFINITION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^\s*(?:(?:pub(?:\([^)]*\))?|export|default|async|static|public|private|protected|abstract|final|unsafe|extern|override|inline|virtual)\s+)*(?:fn|def|class|struct|enum|trait|type|interface|impl|func|function|mod|module|macro_rules!|const|let|var|val|record|union|namespace)\s+",
    )
    .expect("a valid regex")
});

/// One line of a file's hits: a match or context.
struct HitLine {
    number: u64,
    text: String,
    is_match: bool,
}

/// A file's hits.
struct FileHits {
    path: PathBuf,
    lines: Vec<HitLine>,
    matches: usize,
    definitions: usize,
    bytes: u64,
}

impl FileHits {
    /// Definitions first, then matches per KB.
    fn rank(&self) -> (bool, u64) {
        let kb = (self.bytes / 1024).max(1);
        (self.definitions > 0, self.matches as u64 * 1_000_000 / kb)
    }
}

struct Collect<'a> {
    matcher: &'a RegexMatcher,
    hits: FileHits,
    kept: &'a AtomicUsize,
}

impl Collect<'_> {
    fn keep(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        if self.kept.fetch_add(1, Ordering::Relaxed) >= LINES_KEPT {
            return;
        }
        let line = trim_newline(bytes);
        let text = String::from_utf8_lossy(line);
        let shown = if text.len() <= LINE_SHOWN_BYTES {
            text.into_owned()
        } else {
            // A long (minified) line: the part around the match, not its start.
            let found = match self.matcher.find(text.as_bytes()) {
                Ok(Some(m)) if is_match => (m.start(), m.end()),
                _ => (0, 0),
            };
            outputs::window(&text, found.0, found.1, LINE_SHOWN_BYTES)
        };
        self.hits.lines.push(HitLine {
            number: number.unwrap_or(0),
            text: shown,
            is_match,
        });
    }
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.hits.matches += 1;
        let line = trim_newline(found.bytes());
        if is_definition(self.matcher, line) {
            self.hits.definitions += 1;
        }
        self.keep(found.line_number(), line, true);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.keep(context.line_number(), context.bytes(), false);
        Ok(true)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        // The bytes searched: the file's size for density, without a stat of every file.
        self.hits.bytes = finish.byte_count();
        Ok(())
    }
}

fn is_definition(matcher: &RegexMatcher, line: &[u8]) -> bool {
    let Ok(Some(found)) = matcher.find(line) else {
        return false;
    };
    let text = String::from_utf8_lossy(line);
    DEFINITION
        .find(&text)
        .is_some_and(|d| found.start() <= d.end() && d.end() < found.end().max(found.start() + 1))
}

/// The arguments of `grep`.
pub(crate) struct GrepArgs {
    pub pattern: String,
    pub path: String,
    pub glob: Option<String>,
    pub context: usize,
    pub ignore_case: bool,
}

impl GrepArgs {
    pub fn from(arguments: &serde_json::Value) -> Result<GrepArgs, ToolError> {
        let args = super::Args::new(arguments, USAGE);
        Ok(GrepArgs {
            pattern: args.required_str("pattern")?,
            path: args.str("path")?.unwrap_or_else(|| ".".into()),
            glob: args.str("glob")?,
            context: args.count("context")?.unwrap_or(0).min(20),
            ignore_case: args.bool("ignore_case")?.unwrap_or(false),
        })
    }
}

pub(crate) fn grep(tools: &Tools, args: GrepArgs) -> Result<Answer, ToolError> {
    let roots = tools.roots();
    let start = roots.resolve(&args.path)?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .line_terminator(Some(b'\n'))
        .size_limit(1 << 23)
        .build(&args.pattern)
        .map_err(|e| ToolError::invalid(format!("pattern: {e}"), USAGE))?;
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(args.context)
        .after_context(args.context)
        .build();
    let bounds = Bounds::new(tools.limits);
    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let kept = AtomicUsize::new(0);
    let search_file = |searcher: &mut Searcher, path: &Path| {
        let mut sink = Collect {
            matcher: &matcher,
            hits: FileHits {
                path: path.to_path_buf(),
                lines: Vec::new(),
                matches: 0,
                definitions: 0,
                bytes: 0,
            },
            kept: &kept,
        };
        // Opened beneath its root by descriptor (never out of it, whatever was swapped in
        // since the walk saw it); unreadable files are skipped, as rg does (cat reports them).
        let Ok(file) = roots.open_beneath(path, "") else {
            return;
        };
        if searcher.search_file(&matcher, &file, &mut sink).is_ok() && sink.hits.matches > 0 {
            found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(sink.hits);
        }
    };
    let meta = std::fs::metadata(&start).map_err(|source| ToolError::Io {
        path: args.path.clone(),
        source,
    })?;
    if meta.is_file() {
        super::files::check_regular(&start, &args.path)?;
        search_file(&mut searcher.clone(), &start);
    } else {
        let mut builder: WalkBuilder = walker(&start);
        if let Some(glob) = &args.glob {
            super::files::check_glob(glob, "glob", USAGE)?;
            let mut overrides = ignore::overrides::OverrideBuilder::new(&start);
            overrides
                .add(glob)
                .map_err(|e| ToolError::invalid(format!("glob: {e}"), USAGE))?;
            let overrides = overrides
                .build()
                .map_err(|e| ToolError::invalid(format!("glob: {e}"), USAGE))?;
            builder.overrides(overrides);
        }
        let stopped = AtomicBool::new(false);
        builder.build_parallel().run(|| {
            let mut searcher = searcher.clone();
            let bounds = &bounds;
            let search_file = &search_file;
            let stopped = &stopped;
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !bounds.visit() {
                    stopped.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    search_file(&mut searcher, entry.path());
                }
                WalkState::Continue
            })
        });
    }
    let mut files = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort_by(|a, b| b.rank().cmp(&a.rank()).then_with(|| a.path.cmp(&b.path)));
    Ok(render(tools, &roots, &files, &bounds, &args))
}

fn block(roots: &super::roots::Roots, hits: &FileHits, has_context: bool) -> String {
    let mut text = roots.display(&hits.path);
    text.push('\n');
    let mut last = 0u64;
    for line in &hits.lines {
        if has_context && last != 0 && line.number > last + 1 {
            text.push_str("--\n");
        }
        last = line.number;
        let mark = if line.is_match { ':' } else { '-' };
        text.push_str(&format!("{}{mark}{}\n", line.number, line.text));
    }
    text
}

fn render(
    tools: &Tools,
    roots: &super::roots::Roots,
    files: &[FileHits],
    bounds: &Bounds,
    args: &GrepArgs,
) -> Answer {
    let total: usize = files.iter().map(|f| f.matches).sum();
    let mut notes = Vec::new();
    if let Some(why) = bounds.stopped() {
        notes.push(format!(
            "# stopped early ({why}): narrow the path or add a glob"
        ));
    }
    if total == 0 {
        notes.push(format!("# no match for {:?}", args.pattern));
        return Answer::text(notes.join("\n") + "\n");
    }
    let blocks: Vec<String> = files
        .iter()
        .map(|f| block(roots, f, args.context > 0))
        .collect();
    let plural = |n: usize, one: &str, many: &str| {
        format!(
            "{} {}",
            crate::output::thousands(n),
            if n == 1 { one } else { many }
        )
    };
    let summary = format!(
        "{} in {}",
        plural(total, "match", "matches"),
        plural(files.len(), "file", "files")
    );
    if tools.budget.is_off() {
        notes.push(format!("# {summary}"));
        return Answer::text(format!("{}{}\n", blocks.concat(), notes.join("\n")));
    }
    // The answer with its breadcrumbs must fit what the envelope leaves: fit the files, then
    // check the whole, and fit again with less room should the crumbs have pushed it over.
    let total_limit = tools
        .budget
        .max_tokens
        .saturating_sub(outputs::ENVELOPE_TOKENS)
        .max(1);
    let mut limit = total_limit.saturating_sub(BREADCRUMB_TOKENS).max(1);
    let mut handle: Option<Option<String>> = None;
    loop {
        let (shown, omitted) = fit(roots, files, &blocks, limit);
        let mut lines = notes.clone();
        if omitted.is_empty() {
            lines.push(format!("# {summary}"));
        } else {
            let handle = handle.get_or_insert_with(|| {
                let full: String = blocks.concat();
                tools
                    .store
                    .put(&tools.scope, Kind::Text, full.as_bytes())
                    .ok()
            });
            lines.push(breadcrumbs(omitted, &summary, handle.as_deref()));
        }
        let answer = format!("{shown}{}\n", lines.join("\n"));
        let cost = outputs::tokens(&answer);
        if cost <= total_limit || limit <= 1 {
            return Answer::text(answer);
        }
        limit = limit.saturating_sub(cost - total_limit + 8).max(1);
    }
}

/// The blocks that fit `limit` in rank order (the first cut inside when it alone is over),
/// and the matches left out, by area.
fn fit(
    roots: &super::roots::Roots,
    files: &[FileHits],
    blocks: &[String],
    limit: usize,
) -> (String, BTreeMap<String, usize>) {
    let mut shown = String::new();
    let mut used = 0;
    let mut is_full = false;
    let mut omitted: BTreeMap<String, usize> = BTreeMap::new();
    for (hits, text) in files.iter().zip(blocks) {
        if !is_full {
            if let Some(cost) = outputs::cost_within(text, limit - used) {
                used += cost;
                shown.push_str(text);
                continue;
            }
            is_full = true;
            if shown.is_empty() {
                // The best file alone is over the budget: its first lines.
                if let Some(cut) = outputs::cut_text(text, limit) {
                    let kept = &text[..cut.end];
                    shown.push_str(kept);
                    if !kept.ends_with('\n') {
                        shown.push_str("…\n");
                    }
                    let matches_shown = kept.lines().filter(|l| is_match_line(l)).count();
                    let left = hits.matches.saturating_sub(matches_shown);
                    if left > 0 {
                        *omitted.entry(area(roots, &hits.path)).or_default() += left;
                    }
                    continue;
                }
            }
        }
        *omitted.entry(area(roots, &hits.path)).or_default() += hits.matches;
    }
    (shown, omitted)
}

/// `# 612 more in src/rag/, 235 elsewhere (2,031 matches in 42 files); all: read_output …`.
fn breadcrumbs(omitted: BTreeMap<String, usize>, summary: &str, handle: Option<&str>) -> String {
    let mut areas: Vec<(String, usize)> = omitted.into_iter().collect();
    areas.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let named: Vec<String> = areas
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, (area, n))| {
            let more = if i == 0 { " more" } else { "" };
            format!("{}{more} in {area}", crate::output::thousands(*n))
        })
        .collect();
    let elsewhere: usize = areas.iter().skip(3).map(|(_, n)| n).sum();
    let mut crumb = format!("# {}", named.join(", "));
    if elsewhere > 0 {
        crumb.push_str(&format!(
            ", {} elsewhere",
            crate::output::thousands(elsewhere)
        ));
    }
    crumb.push_str(&format!(" ({summary})"));
    if let Some(handle) = handle {
        crumb.push_str(&format!("; all: read_output {{\"handle\": \"{handle}\"}}"));
    }
    crumb
}

/// `12:text` (a match), not `12-text` (context) nor a file name.
fn is_match_line(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && line.as_bytes().get(digits) == Some(&b':')
}

/// The directory a file's omitted matches are counted under: its first two levels.
fn area(roots: &super::roots::Roots, path: &Path) -> String {
    let shown = roots.display(path);
    let parts: Vec<&str> = shown.split('/').collect();
    match parts.len() {
        0 | 1 => "./".into(),
        2 => format!("{}/", parts[0]),
        _ => format!("{}/{}/", parts[0], parts[1]),
    }
}
