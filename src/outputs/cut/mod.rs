//! Cutting at clean boundaries: text after a whole line (inside a line only when the first
//! line alone is over, and then on a character boundary), JSON after whole array elements or
//! object members, so what is kept is still valid JSON.
//!
//! Layout: `text` (lines), `json` (elements and members; arrays only, for outputSchemas).

mod json;
mod text;

pub use json::{cut_json, cut_json_arrays, parse_json_text, ArraysCut, JsonCut, JsonCutAt};
pub use text::{count_lines, cut_text, TextCut};

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
