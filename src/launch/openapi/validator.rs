//! Test support: the real OpenAPI validator (`openapi-spec-validator`, installed into `.deps/`
//! by scripts/install-test-deps.sh), shared by the merge's and the native generator's tests.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the validator on `documents` (name, document), all in one run; panics with its output
/// when it rejects one, skips with a note when it is not installed.
pub(crate) fn validate(documents: &[(String, &Value)]) {
    let validator =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv-openapi/bin/openapi-spec-validator");
    if !validator.exists() {
        eprintln!(
            "skipped: {} is missing (run scripts/install-test-deps.sh)",
            validator.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = documents
        .iter()
        .map(|(name, document)| {
            let file = dir.path().join(format!("{name}.json"));
            std::fs::write(&file, serde_json::to_vec_pretty(document).unwrap()).unwrap();
            file
        })
        .collect();
    let output = Command::new(&validator).args(&files).output().unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
