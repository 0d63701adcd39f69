//! `cat`, `head`, `tail`, `ls` and `find`: files read as streams (never whole: a 50 MB
//! minified line is read up to a bound and skipped past), binary files summarised, special
//! files refused.

use std::fs::{File, FileType};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::GlobBuilder;
use ignore::WalkState;

use super::walk::{walker, Bounds};
use super::{Answer, Args, ToolError, Tools};
use crate::outputs::human_bytes;

/// An answer stops growing past this: the budget cuts it further, the handle keeps it, and
/// memory stays bounded whatever the file.
const ANSWER_MAX_BYTES: usize = 16 << 20;

/// A longer line is cut at this (minified files); the rest of it is skipped, not read in.
const LINE_MAX_BYTES: usize = 1 << 20;

/// How much of a file's start decides whether it is binary (a NUL byte, as git and rg do).
const SNIFF_BYTES: usize = 8192;

/// Entries `ls` lists, and paths `find` keeps.
const LIST_MAX: usize = 20_000;

const CAT_USAGE: &str = "path (required), offset (lines to skip), limit (lines)";
const HEAD_USAGE: &str = "path (required), n (lines, default 10)";
const LS_USAGE: &str = "path (default: the first root)";
const FIND_USAGE: &str = "pattern (glob like **/*.rs or *.toml, required), path";

fn what(kind: FileType) -> Option<&'static str> {
    if kind.is_fifo() {
        Some("FIFO")
    } else if kind.is_socket() {
        Some("socket")
    } else if kind.is_char_device() {
        Some("character device")
    } else if kind.is_block_device() {
        Some("block device")
    } else {
        None
    }
}

/// Refuses anything but a regular file at the canonical `path` (`shown` as the client wrote it).
pub(crate) fn check_regular(path: &Path, shown: &str) -> Result<(), ToolError> {
    let meta = std::fs::metadata(path).map_err(|source| ToolError::Io {
        path: shown.to_string(),
        source,
    })?;
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(ToolError::WrongType {
            path: shown.to_string(),
            found: "directory",
            instead: "ls, find or grep",
        });
    }
    if let Some(found) = what(kind) {
        return Err(ToolError::Special {
            path: shown.to_string(),
            found,
        });
    }
    Ok(())
}

/// Opens a regular file under the roots. Opened beneath its root by descriptor, non-blocking,
/// and checked again on the open file: a FIFO swapped in after the check can neither block
/// nor be read, a directory swapped for an outward symlink cannot lead out.
fn open_regular(tools: &Tools, shown: &str) -> Result<(PathBuf, File, u64), ToolError> {
    let path = tools.roots().resolve(shown)?;
    check_regular(&path, shown)?;
    let io = |source| ToolError::Io {
        path: shown.to_string(),
        source,
    };
    let file = tools.roots().open_beneath(&path, shown)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ToolError::Special {
            path: shown.to_string(),
            found: what(meta.file_type()).unwrap_or("special file"),
        });
    }
    Ok((path, file, meta.len()))
}

/// A summary of a binary file, or `None` for text.
fn binary_summary(file: &mut File, bytes: u64, shown: &str) -> Result<Option<String>, ToolError> {
    let mut head = vec![0u8; SNIFF_BYTES];
    let mut filled = 0;
    loop {
        let n = file
            .read(&mut head[filled..])
            .map_err(|source| ToolError::Io {
                path: shown.to_string(),
                source,
            })?;
        filled += n;
        if n == 0 || filled == head.len() {
            break;
        }
    }
    head.truncate(filled);
    file.seek(SeekFrom::Start(0))
        .map_err(|source| ToolError::Io {
            path: shown.to_string(),
            source,
        })?;
    if !head.contains(&0) {
        return Ok(None);
    }
    let kind = [
        (&b"\x89PNG"[..], "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1f\x8b", "gzip data"),
        (b"\x7fELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\x28\xb5\x2f\xfd", "zstd data"),
    ]
    .iter()
    .find(|(magic, _)| head.starts_with(magic))
    .map_or("binary data", |(_, kind)| kind);
    Ok(Some(format!(
        "{shown}: binary file ({kind}, {}); not shown\n",
        human_bytes(bytes as usize)
    )))
}

/// Reads one line of at most [`LINE_MAX_BYTES`] into `line`; the rest of a longer line is
/// skipped. `None` at the end of the file; `Some(true)` when the line was cut.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    line.clear();
    let n = reader
        .by_ref()
        .take(LINE_MAX_BYTES as u64)
        .read_until(b'\n', line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.ends_with(b"\n") || n < LINE_MAX_BYTES {
        return Ok(Some(false));
    }
    reader.skip_until(b'\n')?;
    Ok(Some(true))
}

/// Pushes `line` (cut or not) to `text`; false once the answer is full.
fn push_line(text: &mut String, line: &[u8], is_cut: bool) -> bool {
    text.push_str(&String::from_utf8_lossy(line));
    if is_cut {
        text.push_str(" …[line cut at 1 MB]\n");
    }
    text.len() < ANSWER_MAX_BYTES
}

pub(crate) fn cat(tools: &Tools, arguments: &serde_json::Value) -> Result<Answer, ToolError> {
    let args = Args::new(arguments, CAT_USAGE);
    let shown = args.required_str("path")?;
    let offset = args.count("offset")?.unwrap_or(0);
    let limit = args.count("limit")?;
    lines(tools, &shown, offset, limit)
}

pub(crate) fn head(tools: &Tools, arguments: &serde_json::Value) -> Result<Answer, ToolError> {
    let args = Args::new(arguments, HEAD_USAGE);
    let shown = args.required_str("path")?;
    let n = args.count("n")?.unwrap_or(10);
    lines(tools, &shown, 0, Some(n))
}

fn lines(
    tools: &Tools,
    shown: &str,
    offset: usize,
    limit: Option<usize>,
) -> Result<Answer, ToolError> {
    let (_, mut file, bytes) = open_regular(tools, shown)?;
    if let Some(summary) = binary_summary(&mut file, bytes, shown)? {
        return Ok(Answer::text(summary));
    }
    let io = |source| ToolError::Io {
        path: shown.to_string(),
        source,
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut text = String::new();
    let wanted = limit.unwrap_or(usize::MAX);
    let mut taken = 0usize;
    let mut is_full = false;
    let started = std::time::Instant::now();
    let mut is_late = false;
    while taken < wanted {
        // Skipping to a far offset on a slow disk is bounded like a walk.
        if number.is_multiple_of(4096) && started.elapsed() > tools.limits.deadline {
            is_late = true;
            break;
        }
        let Some(is_cut) = read_line(&mut reader, &mut line).map_err(io)? else {
            break;
        };
        number += 1;
        if number <= offset {
            continue;
        }
        taken += 1;
        if !push_line(&mut text, &line, is_cut) {
            is_full = true;
            break;
        }
    }
    if number < offset && !is_late {
        return Ok(Answer::text(format!(
            "[{shown} has {number} lines: offset {offset} is past the end]\n"
        )));
    }
    if is_late {
        text.push_str(&format!(
            "[stopped at line {number} after {}: cat with offset {number} goes on]\n",
            humantime::format_duration(tools.limits.deadline)
        ));
    }
    if is_full {
        text.push_str(&format!(
            "[stopped at line {number} ({}): cat with offset {number} goes on]\n",
            human_bytes(ANSWER_MAX_BYTES)
        ));
    }
    Ok(Answer::text(text))
}

pub(crate) fn tail(tools: &Tools, arguments: &serde_json::Value) -> Result<Answer, ToolError> {
    let args = Args::new(arguments, HEAD_USAGE);
    let shown = args.required_str("path")?;
    let n = args.count("n")?.unwrap_or(10);
    let (_, mut file, bytes) = open_regular(tools, shown.as_str())?;
    if let Some(summary) = binary_summary(&mut file, bytes, &shown)? {
        return Ok(Answer::text(summary));
    }
    let io = |source| ToolError::Io {
        path: shown.clone(),
        source,
    };
    // Back from the end a chunk at a time until n line breaks are behind us (a last line
    // without one counts), or the answer's bound.
    const CHUNK: u64 = 64 << 10;
    let mut start = bytes;
    let mut newlines = 0usize;
    let mut chunk = vec![0u8; CHUNK as usize];
    let mut found_start = None;
    let mut first = true;
    while start > 0 && found_start.is_none() && bytes - start < ANSWER_MAX_BYTES as u64 {
        let from = start.saturating_sub(CHUNK);
        let len = (start - from) as usize;
        file.seek(SeekFrom::Start(from)).map_err(io)?;
        file.read_exact(&mut chunk[..len]).map_err(io)?;
        for i in (0..len).rev() {
            if chunk[i] != b'\n' {
                continue;
            }
            if first && from + i as u64 == bytes - 1 {
                continue; // the file's final newline ends the last line
            }
            newlines += 1;
            if newlines == n {
                found_start = Some(from + i as u64 + 1);
                break;
            }
        }
        first = false;
        start = from;
    }
    let begin = if n == 0 {
        bytes
    } else {
        found_start.unwrap_or(start)
    };
    file.seek(SeekFrom::Start(begin)).map_err(io)?;
    let mut reader = BufReader::new(file);
    let mut text = String::new();
    let mut line = Vec::new();
    while let Some(is_cut) = read_line(&mut reader, &mut line).map_err(io)? {
        if !push_line(&mut text, &line, is_cut) {
            break;
        }
    }
    Ok(Answer::text(text))
}

pub(crate) fn ls(tools: &Tools, arguments: &serde_json::Value) -> Result<Answer, ToolError> {
    let args = Args::new(arguments, LS_USAGE);
    let shown = args.str("path")?.unwrap_or_else(|| ".".into());
    let roots = tools.roots();
    let dir = roots.resolve(&shown)?;
    let io = |source| ToolError::Io {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::metadata(&dir).map_err(io)?;
    if !meta.is_dir() {
        check_regular(&dir, &shown)?;
        return Ok(Answer::text(format!(
            "{shown} {}\n",
            human_bytes(meta.len() as usize)
        )));
    }
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut count = 0usize;
    for entry in std::fs::read_dir(&dir).map_err(io)?.flatten() {
        count += 1;
        if count > LIST_MAX {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            dirs.push(format!("{name}/"));
        } else if kind.is_symlink() {
            files.push(format!("{name}@"));
        } else if let Some(special) = what(kind) {
            files.push(format!("{name} ({special})"));
        } else {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            files.push(format!("{name} {}", human_bytes(size as usize)));
        }
    }
    dirs.sort();
    files.sort();
    let mut text = String::new();
    for line in dirs.iter().chain(&files) {
        text.push_str(line);
        text.push('\n');
    }
    if count > LIST_MAX {
        text.push_str(&format!(
            "# {} entries, the first {} listed: use find to narrow\n",
            crate::output::thousands(count),
            crate::output::thousands(LIST_MAX)
        ));
    } else if count == 0 {
        text.push_str("# empty\n");
    }
    Ok(Answer::text(text))
}

/// The longest glob accepted, in bytes: real ones are a few dozen.
const GLOB_MAX_BYTES: usize = 1024;
/// The most wildcards (`*`, `?`, `[`, `{`) a glob may hold: 100,000 `*` made globset panic.
const GLOB_MAX_WILDCARDS: usize = 64;

/// Refuses a glob (argument `name`) too long or too wild to compile safely, naming the limit.
pub(crate) fn check_glob(glob: &str, name: &str, usage: &'static str) -> Result<(), ToolError> {
    let wildcards = glob.bytes().filter(|b| b"*?[{".contains(b)).count();
    if glob.len() > GLOB_MAX_BYTES || wildcards > GLOB_MAX_WILDCARDS {
        return Err(ToolError::invalid(
            format!(
                "{name}: a glob of {} bytes with {wildcards} wildcards is refused (at most {GLOB_MAX_BYTES} bytes and {GLOB_MAX_WILDCARDS} wildcards); use a shorter one such as **/*.rs",
                glob.len()
            ),
            usage,
        ));
    }
    Ok(())
}

pub(crate) fn find(tools: &Tools, arguments: &serde_json::Value) -> Result<Answer, ToolError> {
    let args = Args::new(arguments, FIND_USAGE);
    let pattern = args.required_str("pattern")?;
    let shown = args.str("path")?.unwrap_or_else(|| ".".into());
    let roots = tools.roots();
    let start = roots.resolve(&shown)?;
    check_glob(&pattern, "pattern", FIND_USAGE)?;
    let glob = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::invalid(format!("pattern: {e}"), FIND_USAGE))?
        .compile_matcher();
    // A pattern without a slash matches names at any depth, as `find -name` does.
    let by_name = !pattern.contains('/');
    let bounds = Bounds::new(tools.limits);
    let found: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let total = std::sync::atomic::AtomicUsize::new(0);
    walker(&start).build_parallel().run(|| {
        let (bounds, found, total, glob, start, roots) =
            (&bounds, &found, &total, &glob, &start, &roots);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !bounds.visit() {
                return WalkState::Quit;
            }
            let Ok(relative) = entry.path().strip_prefix(start) else {
                return WalkState::Continue;
            };
            if relative.as_os_str().is_empty() {
                return WalkState::Continue;
            }
            let is_match = if by_name {
                glob.is_match(entry.file_name())
            } else {
                glob.is_match(relative)
            };
            if is_match {
                let n = total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n < LIST_MAX {
                    let mut shown = roots.display(entry.path());
                    if entry.file_type().is_some_and(|t| t.is_dir()) {
                        shown.push('/');
                    }
                    found
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(shown);
                }
            }
            WalkState::Continue
        })
    });
    let mut found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort();
    let total = total.into_inner();
    let mut text = found.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&format!(
        "# {} {}",
        crate::output::thousands(total),
        if total == 1 { "match" } else { "matches" }
    ));
    if total > LIST_MAX {
        text.push_str(&format!(
            ", the first {} listed",
            crate::output::thousands(LIST_MAX)
        ));
    }
    if let Some(why) = bounds.stopped() {
        text.push_str(&format!("; stopped early ({why}): narrow the path"));
    }
    text.push('\n');
    Ok(Answer::text(text))
}
