//! A server's tools as the bridge serves them: the definitions by name, in the server's order,
//! its OpenAPI document, and each tool's argument validator (compiled on the tool's first call,
//! then shared by every later one). A set is immutable; a server whose tools change gets a new
//! set (see `Upstream::replace_tools`).

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use crate::catalog;

/// One tool: its definition and its validator.
pub(super) struct Tool {
    pub(super) definition: Value,
    /// `None` inside: the schema does not compile, so the server judges the arguments.
    validator: OnceLock<Option<jsonschema::Validator>>,
}

impl Tool {
    /// The violations of `arguments` against the tool's `inputSchema` (empty when they fit).
    pub(super) fn violations(&self, arguments: &Value) -> Vec<String> {
        self.validator
            .get_or_init(|| catalog::argument_validator(&self.definition))
            .as_ref()
            .map(|validator| catalog::violations(validator, arguments))
            .unwrap_or_default()
    }
}

/// Every tool of one server, and its document.
pub(super) struct ToolSet {
    by_name: HashMap<String, Tool>,
    /// Names in the server's order (for the docs page).
    order: Vec<String>,
    /// The per-server OpenAPI document, serialized once.
    pub(super) document: Bytes,
}

impl ToolSet {
    /// The set of `definitions` (the first definition of a name wins, as in the tool listing)
    /// with `document`.
    pub(super) fn new(definitions: Vec<Value>, document: &Value) -> ToolSet {
        let mut by_name = HashMap::with_capacity(definitions.len());
        let mut order = Vec::with_capacity(definitions.len());
        for definition in definitions {
            let name = catalog::tool::name(&definition).to_string();
            if by_name.contains_key(&name) {
                continue;
            }
            order.push(name.clone());
            let tool = Tool {
                definition,
                validator: OnceLock::new(),
            };
            by_name.insert(name, tool);
        }
        ToolSet {
            by_name,
            order,
            document: Bytes::from(document.to_string()),
        }
    }

    /// The tool named `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name)
    }

    /// Every tool, in the server's order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &Tool)> {
        self.order
            .iter()
            .filter_map(|name| Some((name.as_str(), self.by_name.get(name)?)))
    }

    /// Every tool name, in the server's order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: Value) -> Value {
        json!({"name": name, "inputSchema": schema})
    }

    #[test]
    fn keeps_the_order_and_the_first_of_a_name() {
        let set = ToolSet::new(
            vec![
                tool("b", json!({"type": "object"})),
                tool("a", json!({"type": "object"})),
                tool("b", json!({"type": "object", "required": ["x"]})),
            ],
            &json!({}),
        );
        assert_eq!(set.names().collect::<Vec<_>>(), ["b", "a"]);
        assert!(set.get("b").unwrap().violations(&json!({})).is_empty());
    }

    #[test]
    fn validates_with_the_compiled_schema_every_time() {
        let set = ToolSet::new(
            vec![tool(
                "sum",
                json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
            )],
            &json!({}),
        );
        let sum = set.get("sum").unwrap();
        assert!(sum.violations(&json!({"a": 1})).is_empty());
        let wrong = sum.violations(&json!({"a": "one"}));
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(wrong[0].starts_with("at /a:"), "{wrong:?}");
        assert!(!sum.violations(&json!({})).is_empty());
    }

    #[test]
    fn a_schema_that_does_not_compile_lets_the_server_judge() {
        let set = ToolSet::new(
            vec![tool("odd", json!({"type": "no-such-type"}))],
            &json!({}),
        );
        assert!(set
            .get("odd")
            .unwrap()
            .violations(&json!({"x": 1}))
            .is_empty());
    }
}
