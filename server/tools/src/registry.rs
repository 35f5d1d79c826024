//! The set of tools a session offers: held by name, listed per mode.

use std::sync::Arc;

use super::Tool;
use super::call_hierarchy::CallHierarchyTool;
use super::code::{FindReferencesTool, FindSymbolTool, RepoMapTool, SearchCodeTool};
use super::command::{CommandLimits, RunCommandTool};
use super::edit::{EditFileTool, WriteFileTool};
use super::grep::GrepTool;
use super::navigate::{NavigateTool, Question};
use super::plan::UpdatePlanTool;
use super::read::{ListFilesTool, ReadFileTool};
use super::rename::RenameTool;
use super::symbol_edit::SymbolEditTool;
use crate::cargo_check::DiagnosticsTool;
use lode_llm::ToolSpec;
use lode_policy::Mode;

/// Tools by name, in registration order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<(String, Arc<dyn Tool>)>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// Adds a tool, replacing one of the same name (an MCP tool may not shadow a built-in by
    /// accident: callers choose names).
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name;
        match self
            .tools
            .iter_mut()
            .find(|(existing, _)| *existing == name)
        {
            Some(slot) => slot.1 = tool,
            None => self.tools.push((name, tool)),
        }
    }

    /// The built-in tools with default limits (same as [`default_tools`]).
    pub fn default_tools() -> ToolRegistry {
        default_tools()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, tool)| Arc::clone(tool))
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(name, _)| name.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether `mode` offers this tool (read-only tools in every mode, the rest only in `code`).
    pub fn offered_in(tool: &dyn Tool, mode: Mode) -> bool {
        mode.allows_side_effects() || tool.read_only()
    }

    /// The tool, when it exists and `mode` offers it.
    pub fn get_for_mode(&self, name: &str, mode: Mode) -> Option<Arc<dyn Tool>> {
        self.get(name)
            .filter(|tool| Self::offered_in(tool.as_ref(), mode))
    }

    /// The specs the model sees in `mode`.
    pub fn specs(&self, mode: Mode) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(_, tool)| Self::offered_in(tool.as_ref(), mode))
            .map(|(_, tool)| tool.spec())
            .collect()
    }
}

/// The built-in tools with default limits.
pub fn default_tools() -> ToolRegistry {
    default_tools_with(CommandLimits::default())
}

/// The built-in tools with the given `run_command` limits.
pub fn default_tools_with(limits: CommandLimits) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReadFileTool),
        Arc::new(ListFilesTool),
        Arc::new(GrepTool),
        Arc::new(SearchCodeTool),
        Arc::new(RepoMapTool),
        Arc::new(FindSymbolTool),
        Arc::new(FindReferencesTool),
        Arc::new(NavigateTool::new(Question::Hover, None)),
        Arc::new(NavigateTool::new(Question::Definition, None)),
        Arc::new(NavigateTool::new(Question::References, None)),
        Arc::new(CallHierarchyTool::new(None)),
        Arc::new(EditFileTool),
        Arc::new(WriteFileTool),
        Arc::new(SymbolEditTool::replace_body()),
        Arc::new(SymbolEditTool::insert_before()),
        Arc::new(SymbolEditTool::insert_after()),
        Arc::new(RenameTool::new(None)),
        Arc::new(RunCommandTool::new(limits)),
        Arc::new(DiagnosticsTool),
        Arc::new(UpdatePlanTool),
    ];
    for tool in tools {
        registry.register(tool);
    }
    registry
}
