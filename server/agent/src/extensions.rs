//! The agent's extensions wired into each session: skills (selected per turn, `load_skill`),
//! long-term memory (recalled per turn, `memory_save` / `memory_search`, session summaries) and
//! MCP servers (from `[[mcp.servers]]` and from the client's `session/new`), whose tools join the
//! session's tool list.
//!
//! Each part is optional: a disabled part is left out, and one that fails to open (a store that
//! cannot be created, a variable an MCP entry names unset) is reported once and the agent goes
//! on without it. Their settings were checked by the config loader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::config::Config;
use crate::mcp::{McpManager, McpServerConfig};
use crate::memory::{
    Memory, MemoryError, MemorySaveTool, MemorySearchTool, MemorySettings, MemorySource,
    MemoryStore, NewMemory, memory_texts,
};
use crate::skills::{LoadSkillTool, SkillSet};
use lode_tools::ToolRegistry;

/// What a turn adds to the context from skills and memory.
#[derive(Debug, Default, Clone)]
pub struct TurnExtras {
    /// The selected skills, one line each pointing at `load_skill` (none in the lean profile).
    pub skills: Vec<String>,
    /// Every skill by name and one line, for the system prompt.
    pub skill_catalogue: Option<String>,
    pub memory: Vec<String>,
    /// Tools pre-approved by the selected trusted skills' `allowed-tools`.
    pub granted_tools: Vec<String>,
    /// Things to tell the user once (invalid skills, failed MCP servers).
    pub notices: Vec<String>,
}

/// Skills, memory and MCP for one workspace.
pub struct Extensions {
    root: PathBuf,
    skills: Option<Arc<SkillSet>>,
    memory: Option<Arc<MemoryStore>>,
    memory_settings: MemorySettings,
    configured_mcp: Vec<McpServerConfig>,
    /// What stdio MCP servers are started through (`crate::mcp::launch`).
    sandbox: Arc<lode_sandbox::Sandbox>,
    /// Per session: the connected MCP servers (connected on the session's first turn).
    mcp: Mutex<HashMap<String, Arc<McpManager>>>,
    /// Problems found while opening, reported on the first turn.
    startup_notices: parking_lot::Mutex<Vec<String>>,
}

impl Extensions {
    /// Reads `[skills]`, `[memory]` and `[mcp]` from the config and opens what is enabled.
    /// Skill trust is read from the user's state under `state_dir` (see `crate::trust`); MCP
    /// servers start through `sandbox`.
    pub fn open(
        root: &Path,
        config: &Config,
        state_dir: Option<&Path>,
        sandbox: Arc<lode_sandbox::Sandbox>,
    ) -> Extensions {
        let mut notices = Vec::new();
        let embedder = match lode_index::default_embedder() {
            Ok(embedder) => Some(embedder),
            Err(error) => {
                notices.push(format!("the built-in embedder is unavailable ({error}); skills and memory use words only"));
                None
            }
        };
        // The loader has checked the sections: a bad value stopped it with the file and line.
        let skills_settings = &config.skills;
        let skills = skills_settings.enabled.then(|| {
            Arc::new(SkillSet::new(
                skills_settings.config_with_state(root, state_dir),
                embedder.clone(),
            ))
        });
        let memory_settings = config.memory.clone();
        let memory = match memory_settings.open(embedder) {
            Ok(store) => store.map(Arc::new),
            Err(error) => {
                notices.push(format!("long-term memory is off: {error}"));
                None
            }
        };
        // What the loader cannot check: the variables the entries name.
        let (configured_mcp, errors) = config.mcp.resolve();
        notices.extend(errors.iter().map(|error| format!("[mcp]: {error}")));
        Extensions {
            root: root.to_owned(),
            skills,
            memory,
            memory_settings,
            configured_mcp,
            sandbox,
            mcp: Mutex::new(HashMap::new()),
            startup_notices: parking_lot::Mutex::new(notices),
        }
    }

    /// The session's tools: `base`, plus `load_skill`, the memory tools and the tools of the
    /// session's MCP servers (connecting them on first use; failures become notices).
    pub async fn session_tools(
        &self,
        base: &ToolRegistry,
        session_id: &str,
        client_servers: Vec<McpServerConfig>,
        notices: &mut Vec<String>,
    ) -> ToolRegistry {
        let mut tools = base.clone();
        if let Some(skills) = &self.skills {
            tools.register(Arc::new(LoadSkillTool::new(skills.clone())));
        }
        if let Some(memory) = &self.memory {
            tools.register(Arc::new(MemorySaveTool::new(
                memory.clone(),
                self.root.clone(),
                Some(session_id.to_owned()),
            )));
            tools.register(Arc::new(MemorySearchTool::new(
                memory.clone(),
                self.root.clone(),
            )));
        }
        let manager = {
            let mut sessions = self.mcp.lock().await;
            match sessions.get(session_id) {
                Some(manager) => manager.clone(),
                None => {
                    let mut servers = self.configured_mcp.clone();
                    servers.extend(client_servers);
                    let (manager, failures) =
                        McpManager::connect_all(&servers, Some(&self.root), &self.sandbox).await;
                    notices.extend(failures.iter().map(|failure| format!("MCP: {failure}")));
                    notices.extend(manager.notices().into_iter().map(|n| format!("MCP: {n}")));
                    let manager = Arc::new(manager);
                    sessions.insert(session_id.to_owned(), manager.clone());
                    manager
                }
            }
        };
        for tool in manager.tools() {
            tools.register(tool);
        }
        tools
    }

    /// Skills and memories for a turn whose user message is `user_text`: the selected skills
    /// named with a pointer to `load_skill` (full profile), or by name only in the list (lean).
    pub async fn turn_extras(
        &self,
        user_text: &str,
        memory_tokens: usize,
        profile: crate::context::Profile,
    ) -> TurnExtras {
        let mut extras = TurnExtras {
            notices: std::mem::take(&mut *self.startup_notices.lock()),
            ..TurnExtras::default()
        };
        if let Some(skills) = self.skills.clone() {
            let text = user_text.to_owned();
            let detail = match profile {
                crate::context::Profile::Full => crate::skills::SkillDetail::Pointers,
                crate::context::Profile::Lean => crate::skills::SkillDetail::NamesOnly,
            };
            if let Ok(turn) =
                tokio::task::spawn_blocking(move || skills.prepare_turn_for(&text, detail)).await
            {
                extras.skills = turn.texts;
                extras.skill_catalogue = turn.catalogue;
                extras.granted_tools = turn.granted_tools;
                extras.notices.extend(
                    turn.new_problems
                        .iter()
                        .map(|problem| format!("skill: {problem}")),
                );
            }
        }
        if let Some(memory) = self.memory.clone()
            && self.memory_settings.auto_recall
        {
            let text = user_text.to_owned();
            let root = self.root.clone();
            match tokio::task::spawn_blocking(move || memory.recall(&text, &root, memory_tokens))
                .await
            {
                Ok(Ok(recalled)) => extras.memory = memory_texts(&recalled),
                Ok(Err(error)) => extras
                    .notices
                    .push(format!("memory recall failed: {error}")),
                Err(_) => {}
            }
        }
        extras
    }

    /// Saves `text`, typed by the user themselves (`/remember`), as a trusted memory of this
    /// workspace. `None` when memory is off.
    pub fn remember_from_user(
        &self,
        session_id: &str,
        text: &str,
    ) -> Result<Option<Memory>, MemoryError> {
        let Some(memory) = &self.memory else {
            return Ok(None);
        };
        memory
            .save(NewMemory {
                text: text.to_owned(),
                source: MemorySource::User,
                workspace: Some(self.root.clone()),
                session_id: Some(session_id.to_owned()),
            })
            .map(Some)
    }

    /// Stores a finished session's summary so later sessions in this workspace can recall it.
    pub fn save_session_summary(&self, session_id: &str, summary: &str) {
        if let Some(memory) = &self.memory
            && self.memory_settings.session_summaries
            && let Err(error) = memory.save_session_summary(&self.root, session_id, summary)
        {
            tracing::warn!(%error, "could not store the session summary");
        }
    }

    /// Disconnects a session's MCP servers.
    pub async fn end_session(&self, session_id: &str) {
        let manager = self.mcp.lock().await.remove(session_id);
        if let Some(manager) = manager {
            manager.shutdown().await;
        }
    }
}
