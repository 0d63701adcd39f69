//! The releases of external programs we know to work, shared by `doctor` (which checks the
//! installed one) and the launch errors that tell how to install it. A constant, not logic:
//! it sits on the ground floor so that neither has to name the other.

/// The mcpo release whose pins (`scripts/mcpo-constraints.txt`) we know to work.
pub const MCPO_SPEC: &str = "mcpo==0.0.20";

/// The variable naming the mcpo to run instead of PATH's (read by the launcher and `doctor`).
pub const MCPO_ENV: &str = "MCP_LAUNCH_MCPO";

/// mcpo's working pins (`scripts/mcpo-constraints.txt`), carried in the binary: the build
/// checkout may be gone, and `doctor --mcpo-constraints` prints them for pip's `-c`.
pub const MCPO_CONSTRAINTS: &str = include_str!("../scripts/mcpo-constraints.txt");

/// Where the venv with mcpo's working pins goes, as the fixes show it.
pub const MCPO_VENV: &str = "~/.local/share/mcp-launch/mcpo";

/// How to install mcpo with its working pins, from the binary alone.
pub fn mcpo_install() -> String {
    format!(
        "python3 -m venv {MCPO_VENV} && {MCPO_VENV}/bin/pip install {MCPO_SPEC} \
         -c <(mcp-launch doctor --mcpo-constraints), then put {MCPO_VENV}/bin on PATH or set \
         {MCPO_ENV}={MCPO_VENV}/bin/mcpo"
    )
}
