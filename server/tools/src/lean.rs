//! The lean tool set: what a model with a small context window is offered. The core built-in
//! tools with one-line descriptions and compact schemas (the arguments the model needs, no
//! per-field prose), and two tools that stand for several: `find_symbol` with `want` for
//! definitions or references, and `edit_symbol` with `at` for the three edits by symbol.
//!
//! A lean tool is only a spec: a call to it is resolved ([`resolve`]) into the call of the
//! built-in tool it stands for, which then runs (permission, presentation, diagnostics after
//! edits, audit) exactly as a call the model made to that tool by name. The arguments a compact
//! schema leaves out keep their defaults.

use serde_json::{Value, json};

use super::ToolRegistry;
use super::symbol_edit::SYMBOL_EDIT_TOOLS;
use lode_llm::ToolSpec;
use lode_policy::Mode;

/// The built-in tools the lean profile offers under their own names, in order, with their
/// compact spec. `find_symbol` stands for itself and `find_references`; `edit_symbol` for the
/// edits by symbol.
const CORE: [&str; 11] = [
    "read_file",
    "list_files",
    "grep",
    "search_code",
    "find_symbol",
    "edit_file",
    "write_file",
    "edit_symbol",
    "run_command",
    "diagnostics",
    "update_plan",
];

/// The lean `find_symbol`'s `want` values and the tools they call.
const FIND: [(&str, &str); 2] = [
    ("definition", "find_symbol"),
    ("references", "find_references"),
];

/// The lean `edit_symbol`'s `at` values and the tools they call.
const EDIT_AT: [(&str, &str); 3] = [
    ("replace", SYMBOL_EDIT_TOOLS[0]),
    ("before", SYMBOL_EDIT_TOOLS[1]),
    ("after", SYMBOL_EDIT_TOOLS[2]),
];

/// The compact spec of a lean tool, by name.
fn compact_spec(name: &str) -> Option<ToolSpec> {
    let (description, parameters) = match name {
        "read_file" => (
            "Read a file's numbered lines; offset and limit pick a range.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"]}),
        ),
        "list_files" => (
            "List files matching a glob (e.g. `src/**/*.rs`); all files by default.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"}
            }}),
        ),
        "grep" => (
            "Search file contents with a regex.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string"}
            }, "required": ["pattern"]}),
        ),
        "search_code" => (
            "Find code by words or identifiers (ranked chunks).",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}
            }, "required": ["query"]}),
        ),
        "find_symbol" => (
            "Where a name is defined, or where it is used (want: references).",
            json!({"type": "object", "properties": {
                "name": {"type": "string"},
                "want": {"type": "string", "enum": ["definition", "references"]}
            }, "required": ["name"]}),
        ),
        "edit_file" => (
            "Replace old_string (exact, occurring once) with new_string in a file.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"}
            }, "required": ["path", "old_string", "new_string"]}),
        ),
        "write_file" => (
            "Create or overwrite a file with content.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["path", "content"]}),
        ),
        "edit_symbol" => (
            "Edit a definition named FILE:NAME (e.g. `src/lib.rs:add`, `src/a.py:Cls/method`): \
             at replace (default; text is the whole new definition), before or after it.",
            json!({"type": "object", "properties": {
                "symbol": {"type": "string"},
                "text": {"type": "string"},
                "at": {"type": "string", "enum": ["replace", "before", "after"]}
            }, "required": ["symbol", "text"]}),
        ),
        "run_command" => (
            "Run a shell command in the workspace (tests, builds).",
            json!({"type": "object", "properties": {
                "command": {"type": "string"}
            }, "required": ["command"]}),
        ),
        "diagnostics" => (
            "Compile errors and warnings of the project (or of path).",
            json!({"type": "object", "properties": {
                "path": {"type": "string"}
            }}),
        ),
        "update_plan" => (
            "Record the plan's steps and their status.",
            json!({"type": "object", "properties": {
                "entries": {"type": "array", "items": {"type": "object", "properties": {
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                }, "required": ["content"]}}
            }, "required": ["entries"]}),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    })
}

/// The built-in tools a lean tool stands for (itself, or the tools it merges).
fn stands_for(name: &str) -> Vec<&'static str> {
    match name {
        "find_symbol" => FIND.iter().map(|(_, tool)| *tool).collect(),
        "edit_symbol" => EDIT_AT.iter().map(|(_, tool)| *tool).collect(),
        _ => CORE.iter().copied().filter(|core| *core == name).collect(),
    }
}

/// Whether `name` is one of lode's built-in tools (lean or not): the lean profile replaces or
/// leaves out every one of them, and keeps the others (skills, MCP) as they are.
pub fn is_built_in(name: &str) -> bool {
    static NAMES: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| super::default_tools().names());
    NAMES.iter().any(|built_in| built_in == name)
}

/// The lean specs of the built-in tools `registry` offers in `mode`: a lean tool is offered when
/// `mode` offers every tool it stands for (so an edit by symbol is never offered in a read-only
/// mode).
pub fn lean_specs(registry: &ToolRegistry, mode: Mode) -> Vec<ToolSpec> {
    CORE.iter()
        .filter(|name| {
            stands_for(name)
                .iter()
                .all(|tool| registry.get_for_mode(tool, mode).is_some())
        })
        .filter_map(|name| compact_spec(name))
        .collect()
}

/// A call of a lean tool as the call of the built-in tool it stands for: `find_symbol` with
/// `want` and `edit_symbol` with `at` become the tool their value names, without that argument.
/// `None` for every other call (it runs as it is). An unknown `want` or `at` is left for the
/// tool to refuse: the call goes to the first tool, with the argument kept, so its argument
/// check names it.
pub fn resolve(name: &str, arguments: &Value) -> Option<(String, Value)> {
    let (key, choices) = match name {
        "find_symbol" => ("want", &FIND[..]),
        "edit_symbol" => ("at", &EDIT_AT[..]),
        _ => return None,
    };
    let chosen = match arguments.get(key) {
        None | Some(Value::Null) => Some(choices[0].1),
        Some(Value::String(value)) => choices
            .iter()
            .find(|(choice, _)| choice == value)
            .map(|(_, tool)| *tool),
        Some(_) => None,
    };
    let Some(tool) = chosen else {
        return Some((choices[0].1.to_owned(), arguments.clone()));
    };
    let mut arguments = arguments.clone();
    if let Value::Object(map) = &mut arguments {
        map.remove(key);
    }
    Some((tool.to_owned(), arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lean_tool_stands_for_built_in_tools_whose_arguments_it_uses() {
        let tools = super::super::default_tools();
        for name in CORE {
            let spec = compact_spec(name).unwrap();
            for tool in stands_for(name) {
                let full = tools.get(tool).unwrap().spec();
                let full_properties = full.parameters["properties"].as_object().unwrap();
                for property in spec.parameters["properties"].as_object().unwrap().keys() {
                    assert!(
                        full_properties.contains_key(property)
                            || (name == "find_symbol" && property == "want")
                            || (name == "edit_symbol" && property == "at"),
                        "{name}.{property} is not an argument of {tool}"
                    );
                }
            }
        }
    }

    #[test]
    fn merged_tools_resolve_to_the_tool_their_choice_names() {
        let args = json!({"symbol": "src/lib.rs:add", "text": "fn add() {}", "at": "after"});
        assert_eq!(
            resolve("edit_symbol", &args),
            Some((
                "insert_after_symbol".to_owned(),
                json!({"symbol": "src/lib.rs:add", "text": "fn add() {}"})
            ))
        );
        assert_eq!(
            resolve("edit_symbol", &json!({"symbol": "a:b", "text": "x"}))
                .unwrap()
                .0,
            "replace_symbol_body"
        );
        assert_eq!(
            resolve("find_symbol", &json!({"name": "add", "want": "references"})),
            Some(("find_references".to_owned(), json!({"name": "add"})))
        );
        // An unknown choice reaches the first tool with the argument kept: its check names it.
        let odd = json!({"name": "add", "want": "callers"});
        assert_eq!(
            resolve("find_symbol", &odd),
            Some(("find_symbol".to_owned(), odd.clone()))
        );
        assert_eq!(resolve("read_file", &json!({"path": "a"})), None);
    }

    #[test]
    fn read_only_modes_get_no_edits() {
        let tools = super::super::default_tools();
        let names = |mode| {
            lean_specs(&tools, mode)
                .into_iter()
                .map(|spec| spec.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Mode::Code),
            [
                "read_file",
                "list_files",
                "grep",
                "search_code",
                "find_symbol",
                "edit_file",
                "write_file",
                "edit_symbol",
                "run_command",
                "diagnostics",
                "update_plan"
            ]
        );
        let ask = names(Mode::Ask);
        assert!(
            !ask.iter()
                .any(|name| name.contains("edit") || name == "run_command")
        );
        assert!(ask.contains(&"find_symbol".to_owned()));
    }
}
