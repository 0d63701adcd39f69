//! The releases of external programs we know to work, shared by `doctor` (which checks the
//! installed one) and the launch errors that tell how to install it. A constant, not logic:
//! it sits on the ground floor so that neither has to name the other.

/// The mcpo release whose pins (`scripts/mcpo-constraints.txt`) we know to work.
pub const MCPO_SPEC: &str = "mcpo==0.0.20";
