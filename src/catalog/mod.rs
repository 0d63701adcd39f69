//! What we know of each server: status, tools and their token cost — gathered by a parallel
//! preflight over every server of every stack. Token counts are cached by content in the user
//! cache dir (the only file this module writes, atomically).
//!
//! Knows nothing of terminals or HTTP serving. One bad server never hides the others: each
//! server's failure lands in its own [`ServerReport`].

mod check;
mod preflight;
mod tokens;
pub mod tool;

pub use check::{argument_violations, expected_shape, similar_names};
pub use preflight::{
    connect, endpoint, preflight, preflight_one, PreflightOptions, ServerProblem, ServerReport,
    Status,
};
pub use tokens::TokenCounter;
