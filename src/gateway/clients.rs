//! Client config snippets (being written on branch `clients`).
