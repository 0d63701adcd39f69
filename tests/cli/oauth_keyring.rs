//! OAuth tokens in the OS keyring (issue 26): a real Secret Service (gnome-keyring) on a private
//! D-Bus session bus, read back with `secret-tool`; and the 0600 file when nothing answers.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::oauth::{call_prot, http, login_in, OAuthServer};
use crate::util::*;

const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=DIR</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// A private D-Bus session bus (no service activation: only what a test starts answers on
/// it), optionally with gnome-keyring's Secret Service, unlocked with a password; both
/// killed on drop.
struct Bus {
    children: Vec<Child>,
    address: String,
    home: PathBuf,
}

fn require(program: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is not installed: run scripts/install-test-deps.sh (it installs dbus, gnome-keyring and libsecret-tools)"
    );
}

impl Bus {
    /// A bus alone: no Secret Service answers on it.
    fn bare(home: &Path) -> Self {
        require("dbus-daemon");
        let run = home.join("bus");
        std::fs::create_dir_all(&run).unwrap();
        let config = run.join("bus.conf");
        std::fs::write(&config, BUS_CONFIG.replace("DIR", run.to_str().unwrap())).unwrap();
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1", "--nopidfile"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start dbus-daemon");
        let mut address = String::new();
        BufReader::new(daemon.stdout.take().unwrap())
            .read_line(&mut address)
            .expect("read the bus address");
        let address = address.trim().to_string();
        assert!(address.starts_with("unix:"), "no bus address: {address:?}");
        Bus {
            children: vec![daemon],
            address,
            home: home.to_path_buf(),
        }
    }

    /// A bus with gnome-keyring's Secret Service, its login collection unlocked.
    fn with_keyring(home: &Path) -> Self {
        Self::with_gnome_keyring(home, true)
    }

    /// A bus with gnome-keyring's Secret Service; `unlocked`: its login collection made and
    /// unlocked with a password, else none (storing asks for a prompt nobody answers).
    fn with_gnome_keyring(home: &Path, unlocked: bool) -> Self {
        require("gnome-keyring-daemon");
        require("secret-tool");
        let mut bus = Self::bare(home);
        let mut keyring = bus
            .command("gnome-keyring-daemon")
            .args(["--foreground", "--components=secrets"])
            .args(unlocked.then_some("--unlock"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start gnome-keyring-daemon");
        // The password of the login keyring it creates, then end of input.
        let mut stdin = keyring.stdin.take().unwrap();
        if unlocked {
            stdin.write_all(b"test-password").unwrap();
        }
        drop(stdin);
        bus.children.push(keyring);
        bus.wait_for_secret_service();
        bus
    }

    /// A command on this bus, with the test's HOME and XDG directories.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.home.join("bus"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"));
        command
    }

    fn wait_for_secret_service(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let asked = self
                .command("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
                .output()
                .expect("run dbus-send");
            if String::from_utf8_lossy(&asked.stdout).contains("boolean true") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "gnome-keyring never answered on the bus"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What the keyring holds for the MCP endpoint `url` (`secret-tool lookup`), if anything.
    fn lookup(&self, url: &str) -> Option<Value> {
        let out = self
            .command("secret-tool")
            .args(["lookup", "service", "mcp-launch", "username", url])
            .output()
            .expect("run secret-tool");
        let text = String::from_utf8_lossy(&out.stdout);
        (out.status.success() && !text.is_empty())
            .then(|| serde_json::from_str(&text).expect("our item is JSON"))
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

fn tokens_file(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".local/state/mcp-launch/oauth/tokens.json"))
        .expect("the token store's file")
}

fn tokens_of(item: &Value) -> Vec<String> {
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|key| item[*key].as_str().map(str::to_string))
        .collect()
}

#[test]
fn tokens_live_in_the_keyring_are_refreshed_there_and_logout_removes_them() {
    let server = OAuthServer::start_with(&[]);
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();
    let bus = Bus::with_keyring(&dir);
    let setup = setup.env("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    let on_bus = [("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())];

    login_in(&dir, "prot", &[], &on_bus);
    let item = bus
        .lookup(&server.url())
        .expect("the login put nothing in the keyring");
    let tokens = tokens_of(&item);
    assert_eq!(tokens.len(), 2, "{item}");
    let file = tokens_file(&dir);
    for token in &tokens {
        assert!(
            !file.contains(token.as_str()),
            "a token is in the file: {file}"
        );
    }
    let status = setup.cmd().args(["auth", "status", "--json"]).run();
    assert_eq!(status.json()["servers"][0]["store"], "keyring", "{status}");

    // A call finds the token in the keyring.
    let ok = call_prot(&setup, "echo").run();
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hi", "{ok}");
    assert_eq!(server.stats()["token_requests"], 1);

    // Expired at the server: the refresh's rotated tokens replace them in the keyring.
    http(server.port, "POST", "/test/expire");
    let refreshed = call_prot(&setup, "echo").run();
    assert_eq!(
        refreshed.json()["result"]["content"][0]["text"],
        "hi",
        "{refreshed}"
    );
    assert_eq!(server.stats()["token_requests"], 2);
    let rotated = tokens_of(&bus.lookup(&server.url()).expect("refreshed item"));
    assert_eq!(rotated.len(), 2);
    assert!(rotated.iter().all(|t| !tokens.contains(t)), "not rotated");
    let file = tokens_file(&dir);
    assert!(rotated.iter().all(|t| !file.contains(t.as_str())), "{file}");

    // Told to use the file only, the process does not read the keyring: it needs a login.
    let forced = call_prot(&setup, "echo")
        .env("MCP_LAUNCH_TOKEN_STORE", "file")
        .status(1)
        .run();
    assert_eq!(forced.error()["type"], "needs_login", "{forced}");
    assert!(forced.stdout.contains("OS keyring"), "{forced}");

    // Logout removes them from both.
    setup.cmd().args(["auth", "logout", "prot", "--json"]).run();
    assert_eq!(
        bus.lookup(&server.url()),
        None,
        "logout left the keyring item"
    );
    assert!(!tokens_file(&dir).contains("prot"));
}

#[test]
fn a_bus_without_a_secret_service_leaves_the_tokens_in_the_file() {
    let setup = Cmd::new();
    let bus = Bus::bare(setup.dir());
    falls_back_to_the_file(setup, bus);
}

#[test]
fn a_keyring_without_an_unlocked_collection_leaves_the_tokens_in_the_file() {
    let setup = Cmd::new();
    let bus = Bus::with_gnome_keyring(setup.dir(), false);
    falls_back_to_the_file(setup, bus);
}

/// A login and a call on `bus`, whose keyring cannot take the tokens: they go to the file.
fn falls_back_to_the_file(setup: Cmd, bus: Bus) {
    let server = OAuthServer::start_with(&[]);
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}});
    let setup = setup.config_json(config);
    let dir = setup.dir().to_path_buf();
    let setup = setup.env("DBUS_SESSION_BUS_ADDRESS", &bus.address);

    login_in(
        &dir,
        "prot",
        &[],
        &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())],
    );
    let status = setup.cmd().args(["auth", "status", "--json"]).run();
    assert_eq!(status.json()["servers"][0]["store"], "file", "{status}");
    assert!(tokens_file(&dir).contains("refresh_token"));
    let ok = call_prot(&setup, "echo").run();
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hi", "{ok}");
}
