//! Test support: the real OpenAPI validator (`openapi-spec-validator`, installed into `.deps/`
//! by scripts/install-test-deps.sh), shared by the merge's and the native generator's tests.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the validator on `documents` (name, document), all in one run; panics with its output
/// when it rejects one, and when it is not installed (a test that cannot fail proves nothing).
pub(crate) fn validate(documents: &[(String, &Value)]) {
    let validator =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv-openapi/bin/openapi-spec-validator");
    validate_with(&validator, documents);
}

/// [`validate`] with the validator at `validator`.
fn validate_with(validator: &Path, documents: &[(String, &Value)]) {
    assert!(
        validator.exists(),
        "{} is missing: run `bash scripts/install-test-deps.sh`",
        validator.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = documents
        .iter()
        .map(|(name, document)| {
            let file = dir.path().join(format!("{name}.json"));
            std::fs::write(&file, serde_json::to_vec_pretty(document).unwrap()).unwrap();
            file
        })
        .collect();
    let output = Command::new(validator).args(&files).output().unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    #[should_panic(expected = "is missing: run `bash scripts/install-test-deps.sh`")]
    fn a_missing_validator_fails_the_test() {
        let missing = Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/no-such-validator");
        validate_with(&missing, &[("doc".to_string(), &json!({}))]);
    }
}
