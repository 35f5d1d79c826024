//! The `[permissions]` section of the configuration: default actions per kind of tool call and
//! per-tool rules with glob patterns. See `docs/permissions.md` for the format.

use serde::{Deserialize, Serialize};

/// What to do with a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// One rule: for `tool` (a tool name, or `*` for every tool), calls whose subject matches
/// `pattern` get `action`. The subject is each edited path (workspace-relative) for edit tools
/// and each simple command of the line for command tools. A rule without a pattern matches every
/// call of the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    #[serde(default = "any_tool")]
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    pub action: Action,
}

fn any_tool() -> String {
    "*".to_owned()
}

/// The `[permissions]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionConfig {
    /// Read-only tools (read_file, search_code, …). Default `allow`.
    pub read: Action,
    /// File edits (edit_file, write_file). Default `ask`.
    pub edit: Action,
    /// Shell commands (run_command, diagnostics). Default `ask`.
    pub command: Action,
    /// Other tools with side effects (MCP tools). Default `ask`.
    pub other: Action,
    /// Whether the built-in allowlist of harmless commands (`cargo check`, `git status`, …) is
    /// allowed without asking. Default `true`.
    pub builtin_allowlist: bool,
    /// Per-tool rules. Among the rules (and remembered answers) matching a call, `deny` beats
    /// `ask` beats `allow`; order does not matter.
    pub rules: Vec<PermissionRule>,
}

impl Default for PermissionConfig {
    fn default() -> Self {
        PermissionConfig {
            read: Action::Allow,
            edit: Action::Ask,
            command: Action::Ask,
            other: Action::Ask,
            builtin_allowlist: true,
            rules: Vec::new(),
        }
    }
}

impl PermissionConfig {
    /// Parses the body of a `[permissions]` table (or a whole file holding one).
    pub fn from_toml(text: &str) -> Result<PermissionConfig, toml::de::Error> {
        #[derive(Deserialize)]
        struct File {
            #[serde(default)]
            permissions: Option<PermissionConfig>,
        }
        if let Ok(file) = toml::from_str::<File>(text)
            && let Some(permissions) = file.permissions
        {
            return Ok(permissions);
        }
        toml::from_str(text)
    }
}
