//! Editing a description in the operator's own editor: `$VISUAL`, else `$EDITOR` (the order
//! git and most Unix tools use). The TUI gives the terminal back, the editor runs on a
//! temporary file holding the description, the terminal is taken again and the text comes
//! back as [`Msg::EditedExternally`]. The caller stops reading keys meanwhile, or the key
//! reader's thread would take the editor's keystrokes.
//!
//! The editor value runs through `sh -c` like git's `core.editor`, so `code --wait` or
//! `emacs -nw` work as set; with `exec`, so that ending the child ends the editor itself, not
//! just a shell that would leave it running on the terminal.

use std::ffi::OsString;
use std::io::Write;

use tokio_util::sync::CancellationToken;

use super::msg::{ExternalEdit, Msg};
use super::terminal;

/// What to do when neither variable is set.
pub const NO_EDITOR: &str = "$VISUAL and $EDITOR are unset (i edits here)";

/// The editor to run: `visual` unless empty, else `editor` unless empty.
pub fn choose(visual: Option<OsString>, editor: Option<OsString>) -> Option<String> {
    [visual, editor]
        .into_iter()
        .flatten()
        .map(|v| v.to_string_lossy().trim().to_string())
        .find(|v| !v.is_empty())
}

/// Suspends the TUI, edits `edit.text` in the operator's editor, takes the terminal back and
/// answers with the edited text or why there is none. A shutdown (SIGTERM) while the editor
/// runs ends it.
pub async fn run(
    tui: &mut ratatui::DefaultTerminal,
    edit: ExternalEdit,
    shutdown: &CancellationToken,
) -> Msg {
    let result = match choose(std::env::var_os("VISUAL"), std::env::var_os("EDITOR")) {
        None => Err(NO_EDITOR.to_string()),
        Some(editor) => match terminal::suspend() {
            Err(e) => Err(format!("cannot hand the terminal to the editor: {e}")),
            Ok(()) => {
                let result = edit_in(&editor, &edit.text, shutdown).await;
                if let Err(e) = terminal::resume(tui) {
                    tracing::warn!(error = %e, "cannot take the terminal back after the editor");
                }
                result
            }
        },
    };
    Msg::EditedExternally {
        row: edit.row,
        tool: edit.tool,
        result,
    }
}

/// Runs `editor` on a temporary file holding `text` and returns what the file holds after.
/// Fails, saying why, when the editor cannot start, exits unsuccessfully (the edit is then
/// dropped, as git drops a commit message) or the file cannot be written or read.
pub async fn edit_in(
    editor: &str,
    text: &str,
    shutdown: &CancellationToken,
) -> Result<String, String> {
    let mut file = tempfile::Builder::new()
        .prefix("mcp-launch-description-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    // Editors expect a final newline; it is trimmed off again when saved.
    file.write_all(format!("{text}\n").as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
    let path = file.path().to_path_buf();
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("exec {editor} \"$1\""))
        .arg("mcp-launch")
        .arg(&path)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{editor}`: {e}"))?;
    let status = tokio::select! {
        status = child.wait() => status.map_err(|e| format!("`{editor}` failed: {e}"))?,
        () = shutdown.cancelled() => {
            let _ = child.kill().await;
            return Err("mcp-launch is stopping".into());
        }
    };
    match status.code() {
        Some(0) => {}
        Some(127) => return Err(format!("`{editor}` was not found (set $VISUAL or $EDITOR)")),
        Some(code) => return Err(format!("`{editor}` exited with status {code}")),
        None => return Err(format!("`{editor}` was ended by a signal")),
    }
    // Read by path: editors that save by renaming a new file into place are read right.
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visual_wins_and_blank_values_do_not_count() {
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(
            choose(some("code --wait"), some("vi")).as_deref(),
            Some("code --wait")
        );
        assert_eq!(choose(some("  "), some("nano")).as_deref(), Some("nano"));
        assert_eq!(choose(None, some("vi")).as_deref(), Some("vi"));
        assert_eq!(choose(some(""), None), None);
        assert_eq!(choose(None, None), None);
    }

    #[tokio::test]
    async fn the_editor_edits_a_file_holding_the_text() {
        let never = CancellationToken::new();
        let edited = edit_in("sed -i s/Echoes/Returns/", "Echoes back the input", &never).await;
        assert_eq!(edited.unwrap(), "Returns back the input\n");
    }

    #[tokio::test]
    async fn a_failing_or_missing_editor_says_so() {
        let never = CancellationToken::new();
        let failed = edit_in("false", "text", &never).await.unwrap_err();
        assert!(failed.contains("exited with status 1"), "{failed}");
        let missing = edit_in("mcp-launch-no-such-editor", "text", &never)
            .await
            .unwrap_err();
        assert!(missing.contains("was not found"), "{missing}");
    }

    #[tokio::test]
    async fn a_shutdown_ends_the_editor() {
        let stop = CancellationToken::new();
        stop.cancel();
        let stopped = edit_in("tail -f", "text", &stop).await.unwrap_err();
        assert!(stopped.contains("stopping"), "{stopped}");
    }
}
