//! What search sees of a tool: its names, its prose and its parameters — nothing else of the
//! schema. Built from a raw `tools/list` entry; never fails (missing parts become empty).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as search sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDoc {
    /// The server's name in the stack (its config key).
    pub server: String,
    /// The tool's name as the server sent it (e.g. `get_file_contents`).
    pub tool: String,
    /// The human title (`title`, else `annotations.title`), if any.
    pub title: Option<String>,
    /// The tool's description (empty if it has none).
    pub description: String,
    /// Parameters from `inputSchema.properties`, including one level of nesting.
    pub params: Vec<ParamDoc>,
    /// Names of the required top-level parameters (`inputSchema.required`).
    pub required: Vec<String>,
}

/// One parameter of a tool: its name and its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamDoc {
    /// The property name; nested properties are written `parent.child`.
    pub name: String,
    /// The property's `description` (empty if it has none).
    pub description: String,
}

impl ToolDoc {
    /// Reads a tool definition (one element of a `tools/list` result's `tools`).
    ///
    /// Takes `name`, `title` (top-level, else `annotations.title`), `description`,
    /// `inputSchema.properties` (name and description of each, plus the properties of an
    /// object or of an array's object items one level down) and `inputSchema.required`.
    pub fn from_definition(server: &str, tool: &Value) -> ToolDoc {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let title = text(tool.get("title"))
            .or_else(|| text(tool.get("annotations").and_then(|a| a.get("title"))));
        let schema = tool.get("inputSchema");
        let mut params = Vec::new();
        if let Some(props) = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, prop) in props {
                params.push(ParamDoc {
                    name: name.clone(),
                    description: text(prop.get("description")).unwrap_or_default(),
                });
                for (child, child_prop) in nested_properties(prop) {
                    params.push(ParamDoc {
                        name: format!("{name}.{child}"),
                        description: text(child_prop.get("description")).unwrap_or_default(),
                    });
                }
            }
        }
        let required = schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(|n| text(Some(n))).collect())
            .unwrap_or_default();
        ToolDoc {
            server: server.to_string(),
            tool: text(tool.get("name")).unwrap_or_default(),
            title,
            description: text(tool.get("description")).unwrap_or_default(),
            params,
            required,
        }
    }
}

/// The properties one level below `prop`: its own (an object) or its items' (an array of
/// objects).
fn nested_properties(prop: &Value) -> impl Iterator<Item = (&String, &Value)> {
    let own = prop.get("properties");
    let items = prop.get("items").and_then(|i| i.get("properties"));
    own.or(items)
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|map| map.iter())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_names_title_params_and_required() {
        let def = json!({
            "name": "create_entities",
            "annotations": {"title": "Create Entities"},
            "description": "Create entities in the graph",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "entities": {
                        "type": "array",
                        "description": "The entities",
                        "items": {"type": "object", "properties": {
                            "entityType": {"type": "string", "description": "Kind of entity"}
                        }}
                    },
                    "dryRun": {"type": "boolean"}
                },
                "required": ["entities"]
            }
        });
        let doc = ToolDoc::from_definition("memory", &def);
        assert_eq!(doc.server, "memory");
        assert_eq!(doc.tool, "create_entities");
        assert_eq!(doc.title.as_deref(), Some("Create Entities"));
        let names: Vec<&str> = doc.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["entities", "entities.entityType", "dryRun"]);
        assert_eq!(doc.params[1].description, "Kind of entity");
        assert_eq!(doc.params[2].description, "");
        assert_eq!(doc.required, ["entities"]);
    }

    #[test]
    fn tolerates_a_bare_definition() {
        let doc = ToolDoc::from_definition("s", &json!({"name": 3}));
        assert_eq!(doc.tool, "");
        assert!(doc.params.is_empty() && doc.required.is_empty() && doc.title.is_none());
    }
}
