//! Stable fingerprints: what keys the token cache and the tool index.

use serde_json::json;

use crate::config::{ServerEntry, ServerSpec};

/// 64-bit FNV-1a: stable across runs and Rust versions (unlike `DefaultHasher`), and plenty
/// for keying cache entries.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A server's identity: its stack, name and everything that decides what runs (command, args,
/// env, cwd) or where it lives (url, headers). Any change gives another identity, so the tool
/// index never answers for a server whose definition moved. `None` for an unusable entry.
///
/// Only the hash is stored: env values and headers often hold secrets.
pub fn server_identity(entry: &ServerEntry) -> Option<String> {
    let spec = entry.spec.as_ref().ok()?;
    let what = match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!(["stdio", command, args, env, cwd]),
        ServerSpec::Http { url, headers } => json!(["http", url, headers]),
        ServerSpec::Sse { url, headers } => json!(["sse", url, headers]),
    };
    let key = json!([entry.stack, entry.name, what]).to_string();
    Some(format!("{:016x}", fnv1a(key.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(args: &[&str]) -> ServerEntry {
        ServerEntry {
            name: "s".into(),
            qualified: "s".into(),
            stack: "st".into(),
            line: None,
            disabled: false,
            spec: Ok(ServerSpec::Stdio {
                command: "cmd".into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: vec![("TOKEN".into(), "secret".into())],
                cwd: None,
            }),
        }
    }

    #[test]
    fn identity_follows_the_definition() {
        let a = server_identity(&entry(&["x"])).unwrap();
        assert_eq!(a, server_identity(&entry(&["x"])).unwrap());
        assert_ne!(a, server_identity(&entry(&["y"])).unwrap());
        let mut other_stack = entry(&["x"]);
        other_stack.stack = "other".into();
        assert_ne!(a, server_identity(&other_stack).unwrap());
        assert!(!a.contains("secret"));
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
