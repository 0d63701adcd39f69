//! `mcp-launch output HANDLE [--range A:B] [--grep RE] [--jsonpath P]`.

use std::io::Write;

use clap::Args;
use serde_json::json;

use crate::outputs::{self, Budget, ClientScope, ReadRequest, Store};

use super::{CliError, GlobalArgs, Outcome};

/// Read a cut tool result by its handle (h_…).
///
/// A result over its token budget is cut, and its envelope names a handle that keeps the
/// whole output (24 h, in the user state dir). Read it by lines, grep it, or select from
/// JSON. Each answer stays within --max-output-tokens and ends with a note saying where to go
/// on. Only handles of local clients (`call`, stdio servers) can be read here.
///
/// Example: mcp-launch output h_3f9a0c… --range 200:400
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// The handle, as the envelope names it (h_ and 24 hex digits).
    #[arg(value_name = "HANDLE")]
    pub handle: String,
    /// Lines A to B (1-based, both included); `A:` to the end.
    #[arg(long, value_name = "A:B")]
    pub range: Option<String>,
    /// Only the lines matching this regex, numbered.
    #[arg(long, value_name = "RE", conflicts_with = "jsonpath")]
    pub grep: Option<String>,
    /// The nodes a JSONPath selects from a JSON output, e.g. '$.items[10:20]'.
    #[arg(long, value_name = "P")]
    pub jsonpath: Option<String>,
    /// At most this many tokens in the answer (0 = everything asked for).
    #[arg(long, value_name = "N", default_value_t = outputs::DEFAULT_MAX_TOKENS)]
    pub max_output_tokens: usize,
}

/// The offset and limit of `A:B`.
fn parse_range(text: &str) -> Result<(usize, Option<usize>), CliError> {
    let usage = || CliError::Usage {
        message: format!("--range {text:?} is not A:B"),
        help: "give lines as A:B (1-based, both included), e.g. --range 200:400 or --range 200:"
            .into(),
    };
    let (a, b) = text.split_once(':').ok_or_else(usage)?;
    let first = if a.is_empty() {
        1
    } else {
        a.parse::<usize>().map_err(|_| usage())?
    };
    let last = if b.is_empty() {
        None
    } else {
        Some(b.parse::<usize>().map_err(|_| usage())?)
    };
    let wrong = |message: String| CliError::Usage {
        message,
        help: "give lines as A:B with A <= B, both from 1, e.g. --range 200:400 or --range 200:"
            .into(),
    };
    if first == 0 || last == Some(0) {
        return Err(wrong(format!(
            "--range {text:?}: lines are numbered from 1"
        )));
    }
    if let Some(last) = last.filter(|&l| l < first) {
        return Err(wrong(format!(
            "--range {text:?} ends before it starts ({first} > {last})"
        )));
    }
    Ok((first - 1, last.map(|l| l - first + 1)))
}

/// The read's note with its next step as this command's flag: `more: offset 5` (lines read so
/// far, as MCP's `read_output` takes it) is `more: --range 6:`.
fn note_in_cli_words(note: &str) -> String {
    const MORE: &str = "; more: offset ";
    let Some((before, after)) = note.rsplit_once(MORE) else {
        return note.to_string();
    };
    let digits = after.trim_end_matches(']');
    match digits.parse::<usize>() {
        Ok(offset) => format!("{before}; more: --range {}:]", offset + 1),
        Err(_) => note.to_string(),
    }
}

/// Runs `output`.
pub async fn run(args: OutputArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if !outputs::is_handle(&args.handle) {
        return Err(CliError::Usage {
            message: format!("{:?} is not a handle (h_ and 24 hex digits)", args.handle),
            help: "copy the handle from the cut result's last line: `More: mcp-launch output h_…`"
                .into(),
        });
    }
    let (offset, limit) = match &args.range {
        Some(range) => {
            let (offset, limit) = parse_range(range)?;
            (Some(offset), limit)
        }
        None => (None, None),
    };
    let request = ReadRequest {
        offset,
        limit,
        grep: args.grep,
        jsonpath: args.jsonpath,
    };
    let handle = args.handle;
    let budget = Budget::new(args.max_output_tokens);
    let read = tokio::task::spawn_blocking(move || {
        let store = Store::open_default()?;
        store.read(&handle, &ClientScope::local(), &request, budget)
    })
    .await
    .map_err(|e| CliError::Output(std::io::Error::other(e)))??;
    if global.json {
        let mut answer = json!({
            "success": true,
            "text": read.text,
            "note": read.note,
            "nextOffset": read.next_offset,
        });
        if let Some(block) = &read.block {
            answer["block"] = block.clone();
        }
        crate::output::print_json(&answer)?;
        return Ok(Outcome::Success);
    }
    let mut out = std::io::stdout().lock();
    match &read.block {
        Some(block) => writeln!(out, "{block}")?,
        None => {
            out.write_all(read.text.as_bytes())?;
            if !read.text.is_empty() && !read.text.ends_with('\n') {
                writeln!(out)?;
            }
            let dim = crate::output::style::DIM;
            anstream::eprintln!("{dim}{}{dim:#}", note_in_cli_words(&read.note));
        }
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_one_based_and_inclusive() {
        assert_eq!(parse_range("1:10").unwrap(), (0, Some(10)));
        assert_eq!(parse_range("200:").unwrap(), (199, None));
        assert_eq!(parse_range(":5").unwrap(), (0, Some(5)));
        for bad in ["0:3", "5:4", "x:1", "12"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }
}
