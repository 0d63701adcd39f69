//! End-to-end tests of the mcp-launch binary.
//!
//! One test binary, a module per command or topic; `util` holds the strict builder that runs
//! the binary in a fresh directory (`HOME` and the cache inside it), paths of the real test
//! servers installed by `scripts/install-test-deps.sh`, and the fault server's helpers;
//! `launch_util` holds what the `up` tests (`launch`, `native`) share.

mod launch_util;
mod metrics;
mod util;

mod call;
mod client_context;
mod clients;
mod config;
mod conformance;
mod daemon;
mod doctor;
mod durations;
mod gateway_2026;
mod handshake;
mod hostile;
mod index;
mod init;
mod input_required;
mod inspect;
mod launch;
mod links;
mod list;
mod native;
mod native_startup;
mod newcomer;
mod oauth;
mod oauth_cimd;
mod oauth_device;
mod oauth_gateway;
mod oauth_keyring;
mod oauth_preregistered;
mod oauth_sse;
mod output;
mod overrides;
mod planted;
mod remote;
mod remote_2026;
mod replicas;
mod replicas_more;
mod replicas_tasks;
mod rugpull;
mod schemathesis;
mod search;
mod security;
mod semantic;
mod serve;
mod serve_errors;
mod serve_key;
mod serve_oauth;
mod serve_oauth_cimd;
mod serve_oauth_ts;
mod serve_oidc;
mod serve_oidc_items;
mod serve_oidc_proxy;
mod session;
mod strict_clients;
mod tasks;
mod tasks25;
mod tokens;
mod tools;
mod top;
mod traces;
mod trust;
mod tui;
mod tui_consent;
mod up_mcp;
