//! What we know of each server: status, tools and their token cost — gathered by a parallel
//! preflight over every server of every stack; the tool index and token counts it keeps in the
//! user cache dir; the project's overrides (`./.mcp-launch/overrides.json`). Every file it
//! writes is written atomically.
//!
//! Knows nothing of terminals or HTTP serving. One bad server never hides the others: each
//! server's failure lands in its own [`ServerReport`].

pub mod approvals;
mod check;
pub mod embedder;
mod era;
mod expose;
mod fingerprint;
mod index;
pub mod needs;
mod output_schema;
mod overrides;
mod preflight;
mod repair;
mod resolve;
mod search_index;
mod tokens;
pub mod tool;
mod trim;
mod vectors;

pub use approvals::{Approval, Approvals, ApprovalsError};
pub use check::{
    argument_validator, argument_violations, expected_shape, schema_validator, similar_names,
    violations,
};
pub use expose::{
    expose, expose_approved, expose_uncounted, total_after, total_before, ExposedTool,
};
pub(crate) use fingerprint::fnv1a;
pub use fingerprint::server_identity;
pub use index::{IndexEntry, ToolIndex, DEFAULT_TTL, TTL, TTL_ENV};
pub use output_schema::{is_cut_tolerant, move_output_schema_to_meta, OUTPUT_SCHEMA_META};
pub use overrides::{
    Action, Change, Edit, LaunchChoices, Overrides, OverridesError, Pin, ServerOverrides, ToolView,
    Updated, ALL_TOOLS, OVERRIDES_FILE, OVERRIDES_VERSION,
};
pub use overrides::{ClientTools, Clients, ItemKind, ItemNames, ToolNames};
pub use preflight::{
    connect, endpoint, preflight, preflight_keeping, ItemLists, OpenSessions, PreflightOptions,
    RelayedProblem, ServerProblem, ServerReport, Status, ITEM_LISTS,
};
pub use repair::{
    repair_tool, Repair, Repaired, ServerRepairs, ToolRepairs, Unrepairable, INPUT_SCHEMA_META,
};
pub use resolve::{
    count_tokens, from_index, indexed, needed_capabilities, record_live, remember, resolve,
    resolve_keeping, ResolveOptions,
};
pub use search_index::{ChangedTool, SearchCatalog};
pub use tokens::TokenCounter;
pub use trim::{trim_description, CHATGPT_DESCRIPTION_LIMIT, ELLIPSIS};
pub use vectors::{ready_search_vectors, search_vectors, vectors as tool_vectors};
