//! The type-resolved navigation of `lode mcp`: the agent's own `hover`, `definition`,
//! `references`, `call_hierarchy` and `rename` tools, run outside any agent turn over the
//! workspace's language servers (the `[lsp.diagnostics]` servers, one per language, started on
//! the first question about a file of that language and shared by every later call), with the
//! index as the fallback. `lode mcp` has no one to ask for permission: `rename` is offered only
//! with `--allow-edits`, which is the user's grant, and the tool itself refuses every file
//! outside the workspace or under .git/ or .lode/.

use std::path::PathBuf;
use std::sync::Arc;

use lode_mcp::navigation::{Navigator, NavigatorAnswer, NavigatorError, NavigatorFuture};
use lode_tools::call_hierarchy::CallHierarchyTool;
use lode_tools::host::{ToolEvent, ToolHost};
use lode_tools::navigate::{NavigateTool, Question};
use lode_tools::navigation::NavigationSource;
use lode_tools::rename::RenameTool;
use lode_tools::{Tool, ToolContext, ToolErrorCategory};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A host for tool runs outside a turn: nothing to show, no editor, no questions.
struct NoHost;

impl ToolHost for NoHost {
    fn emit(&self, _event: ToolEvent) {}
}

/// The agent's navigation tools over one workspace's language servers.
pub struct McpNavigator {
    root: PathBuf,
    index: Arc<lode_index::Workspace>,
    tools: Vec<Arc<dyn Tool>>,
}

impl McpNavigator {
    /// The navigator for `index`'s workspace; `source` is `None` when `[lsp.diagnostics]` turns
    /// the servers off (then every answer comes from the index, and `rename` says it needs a
    /// server).
    pub fn new(
        index: Arc<lode_index::Workspace>,
        source: Option<Arc<dyn NavigationSource>>,
    ) -> McpNavigator {
        let root = std::fs::canonicalize(index.root()).unwrap_or_else(|_| index.root().into());
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(NavigateTool::new(Question::Hover, source.clone())),
            Arc::new(NavigateTool::new(Question::Definition, source.clone())),
            Arc::new(NavigateTool::new(Question::References, source.clone())),
            Arc::new(CallHierarchyTool::new(source.clone())),
            Arc::new(RenameTool::new(source)),
        ];
        McpNavigator { root, index, tools }
    }

    fn context(&self) -> ToolContext {
        ToolContext {
            roots: vec![self.root.clone()],
            index: Arc::clone(&self.index),
            host: Arc::new(NoHost),
            call_id: "mcp".into(),
            cancel: CancellationToken::new(),
            // The navigation tools run no commands; the language servers are confined by the
            // provider's own sandbox.
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable(
                "lode mcp's navigation runs no commands",
            )),
            network: false,
            sources: Default::default(),
        }
    }
}

impl Navigator for McpNavigator {
    fn call<'a>(&'a self, tool: &'a str, arguments: Value) -> NavigatorFuture<'a> {
        Box::pin(async move {
            let Some(found) = self.tools.iter().find(|known| known.spec().name == tool) else {
                return Err(NavigatorError::Arguments(format!("unknown tool {tool:?}")));
            };
            match found.run(arguments, &self.context()).await {
                Ok(output) => Ok(NavigatorAnswer {
                    text: output.model_text,
                    structured: output.raw_output.unwrap_or(Value::Null),
                }),
                Err(error) => Err(match error.category {
                    ToolErrorCategory::InvalidArguments | ToolErrorCategory::OutsideWorkspace => {
                        NavigatorError::Arguments(error.message)
                    }
                    _ => NavigatorError::Failed(error.message),
                }),
            }
        })
    }
}
