//! Skills (the Agent Skills format): folders with a `SKILL.md` that teach the agent how to do one
//! kind of task. This module owns parsing and validation (`parse`), discovery with precedence and
//! change stamps (`catalog`), the bundled skills (`bundled`), trust records (`trust`), ranking
//! (`rank`, shared with memory), what enters the prompt each turn ([`SkillSet::prepare_turn`]),
//! and the `load_skill` tool (`tool`).
//!
//! Trust: bundled and user skills are trusted. Workspace skills (`<root>/.lode/skills/`) arrive
//! with the code, so they are untrusted until the user runs `lode skill trust NAME`, which
//! records the skill's content hash in the user's state folder (`crate::trust`; never in the
//! workspace, where a repository could pre-seed it); a later change makes it untrusted again.
//! An untrusted skill is only ever shown to the model as quoted reference text, and its
//! `allowed-tools` grant nothing.

pub mod bundled;
pub mod catalog;
pub mod parse;
pub mod rank;
mod render;
pub mod tool;
pub mod trust;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_index::Embedder;
use parking_lot::Mutex;

pub use catalog::{RESOURCE_DIRS, SkillProblem, SkillSource};
pub use parse::{SkillDocument, SkillParseError};
pub use render::{render_skill, render_skill_file};
pub use tool::LoadSkillTool;
pub use trust::{TrustRecord, TrustStore, TrustStoreError};

use catalog::{Discovery, Stamps, collect_stamps, discover};
use rank::{Bm25Index, HybridWeights, cosine, hybrid_scores};

/// How many skill bodies enter the prompt per turn by default.
pub const DEFAULT_TOP_K: usize = 5;
/// A skill needs at least this hybrid score (0..1) to be selected.
const MIN_SELECTION_SCORE: f64 = 0.1;

/// Where skills are looked for and where trust is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsConfig {
    /// The workspace root; its `.lode/skills/` holds workspace skills.
    pub workspace_root: Option<PathBuf>,
    /// The user's skills folder (default `<config dir>/lode/skills`).
    pub user_dir: Option<PathBuf>,
    /// Whether the skills compiled into lode are offered.
    pub include_bundled: bool,
    /// SQLite file holding the `skill_trust` table: per user, outside the workspace, so a
    /// repository cannot pre-seed it (default `crate::trust::grants_database`).
    pub trust_db: Option<PathBuf>,
    /// Skill bodies put in the prompt per turn.
    pub top_k: usize,
}

impl SkillsConfig {
    /// The standard locations for a workspace, with trust kept in the user's state folder.
    pub fn for_workspace(root: &Path) -> Self {
        Self::for_workspace_with_state(root, crate::trust::user_state_dir().as_deref())
    }

    /// The standard locations for a workspace, with trust kept under `state_dir` (`None`: no
    /// trust store, so workspace skills stay untrusted).
    pub fn for_workspace_with_state(root: &Path, state_dir: Option<&Path>) -> Self {
        Self {
            workspace_root: Some(root.to_owned()),
            user_dir: default_user_skills_dir(),
            include_bundled: true,
            trust_db: state_dir.map(|state| crate::trust::grants_database(state, root)),
            top_k: DEFAULT_TOP_K,
        }
    }

    fn roots(&self) -> Vec<(SkillSource, PathBuf)> {
        let mut roots = Vec::new();
        if let Some(root) = &self.workspace_root {
            roots.push((SkillSource::Workspace, workspace_skills_dir(root)));
        }
        if let Some(user) = &self.user_dir {
            roots.push((SkillSource::User, user.clone()));
        }
        roots
    }
}

/// The `[skills]` config section.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsSettings {
    /// `false` turns skills off entirely (no selection, no catalogue, no `load_skill`).
    pub enabled: bool,
    /// Skill bodies put in the prompt per turn (default 5).
    pub top_k: usize,
    /// Whether the skills bundled with lode are offered (default true).
    pub bundled: bool,
    /// The user's skills folder (default `<config dir>/lode/skills`).
    pub user_dir: Option<PathBuf>,
}

impl Default for SkillsSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            top_k: DEFAULT_TOP_K,
            bundled: true,
            user_dir: None,
        }
    }
}

impl SkillsSettings {
    /// Reads a `[skills]` table on its own (the config loader reads the section as part of
    /// `crate::config::Config`, with the file and line of any error).
    pub fn from_toml(value: &toml::Value) -> Result<Self, String> {
        value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| format!("invalid [skills] section: {}", e.message()))
    }

    /// The skill locations of `root` under these settings.
    pub fn config_for(&self, root: &Path) -> SkillsConfig {
        self.config_with_state(root, crate::trust::user_state_dir().as_deref())
    }

    /// [`SkillsSettings::config_for`] with trust kept under `state_dir`.
    pub fn config_with_state(&self, root: &Path, state_dir: Option<&Path>) -> SkillsConfig {
        let mut config = SkillsConfig::for_workspace_with_state(root, state_dir);
        config.top_k = self.top_k;
        config.include_bundled = self.bundled;
        if let Some(dir) = &self.user_dir {
            config.user_dir = Some(dir.clone());
        }
        config
    }
}

/// `<config dir>/lode/skills`, when the platform has a config dir.
pub fn default_user_skills_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join("lode").join("skills"))
}

/// `<root>/.lode/skills`.
pub fn workspace_skills_dir(root: &Path) -> PathBuf {
    root.join(".lode").join("skills")
}

/// Whether a skill's instructions may be followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    Trusted,
    /// A workspace skill the user never trusted.
    Untrusted,
    /// A workspace skill trusted with other content than it has now.
    Changed,
}

impl TrustState {
    pub fn is_trusted(self) -> bool {
        self == TrustState::Trusted
    }

    pub fn label(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::Untrusted => "untrusted",
            TrustState::Changed => "changed since trusted",
        }
    }
}

/// One usable skill with its trust state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub allowed_tools: Vec<String>,
    pub compatibility: Option<String>,
    pub body: String,
    pub source: SkillSource,
    /// The folder (`None` for bundled skills).
    pub dir: Option<PathBuf>,
    pub content_hash: String,
    /// Files under `scripts/`, `references/`, `assets/`, relative to the folder.
    pub resources: Vec<String>,
    pub trust: TrustState,
}

impl Skill {
    /// The tools this skill pre-approves: its `allowed-tools` when trusted, nothing otherwise.
    pub fn granted_tools(&self) -> &[String] {
        if self.trust.is_trusted() {
            &self.allowed_tools
        } else {
            &[]
        }
    }
}

/// Failures of skill operations the user asked for (trusting, showing).
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("no skill named {0:?}")]
    NotFound(String),
    #[error("skill {0:?} is a {1} skill and is always trusted; only workspace skills need trust")]
    AlreadyTrusted(String, &'static str),
    #[error("no trust database is configured")]
    NoTrustDatabase,
    #[error(transparent)]
    Trust(#[from] TrustStoreError),
}

/// A skill chosen for a turn, with its score.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedSkill {
    pub skill: Arc<Skill>,
    /// Hybrid score in 0..1.
    pub score: f64,
}

/// How much of the skills a turn's prompt holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillDetail {
    /// The selected skills' bodies and the list of all.
    Bodies,
    /// The list of all, and for the selected skills one line each pointing at `load_skill`
    /// (the full profile): the model reads a body when it wants it, instead of every turn's
    /// request carrying bodies a keyword happened to select.
    Pointers,
    /// Only the list, each skill by name and a short line (the lean profile).
    NamesOnly,
}

/// What the loop puts into one turn's prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SkillsForTurn {
    /// The selected skills, best first.
    pub selected: Vec<SelectedSkill>,
    /// The selected skills' bodies for the turn's context, most relevant first (trusted ones
    /// verbatim, untrusted ones quoted). Empty when none was selected (or bodies were not
    /// wanted, see [`SkillSet::prepare_turn_for`]).
    pub texts: Vec<String>,
    /// Every skill by name and one line, for the system prompt: the same text every turn while
    /// the skills do not change. `None` when there are no skills.
    pub catalogue: Option<String>,
    /// Tools pre-approved by the selected trusted skills' `allowed-tools`.
    pub granted_tools: Vec<String>,
    /// Problems found since the last report (invalid SKILL.md files): show each once.
    pub new_problems: Vec<SkillProblem>,
}

/// What changed in a rescan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefreshReport {
    /// Whether any skill file changed since the previous scan.
    pub rescanned: bool,
    /// Problems not reported before.
    pub new_problems: Vec<SkillProblem>,
}

/// All skills of one workspace, kept fresh. Cheap to share (`Arc`); every method is synchronous
/// and fast (file stats, one SQLite query, the embedder for new descriptions and the query).
pub struct SkillSet {
    config: SkillsConfig,
    embedder: Option<Arc<dyn Embedder>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    stamps: Option<Stamps>,
    discovery: Discovery,
    skills: Vec<Arc<Skill>>,
    bm25: Bm25Index,
    /// Embeddings of "name: description" texts, keyed by that text.
    vectors: HashMap<String, Vec<f32>>,
    trust_store: Option<TrustStore>,
    trust_problem: Option<SkillProblem>,
    reported: HashSet<String>,
}

impl SkillSet {
    /// A skill set over `config`'s folders. `embedder` adds semantic similarity to selection;
    /// without one, selection is BM25 only. Nothing is read until the first call.
    pub fn new(config: SkillsConfig, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self {
            config,
            embedder,
            state: Mutex::new(State::default()),
        }
    }

    pub fn config(&self) -> &SkillsConfig {
        &self.config
    }

    /// Re-reads skills whose files changed (by size and mtime) and re-reads trust decisions.
    pub fn refresh(&self) -> RefreshReport {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state)
    }

    fn refresh_locked(&self, state: &mut State) -> RefreshReport {
        let roots = self.config.roots();
        let stamps = collect_stamps(&roots);
        let rescanned = state.stamps.as_ref() != Some(&stamps);
        if rescanned {
            state.discovery = discover(&roots, self.config.include_bundled);
            state.stamps = Some(stamps);
        }
        let trust_records = self.trust_records(state);
        state.skills = state
            .discovery
            .skills
            .values()
            .map(|found| {
                let trust = match found.source {
                    SkillSource::Bundled | SkillSource::User => TrustState::Trusted,
                    SkillSource::Workspace => match trust_records.get(&found.document.name) {
                        Some(hash) if *hash == found.content_hash => TrustState::Trusted,
                        Some(_) => TrustState::Changed,
                        None => TrustState::Untrusted,
                    },
                };
                Arc::new(Skill {
                    name: found.document.name.clone(),
                    description: found.document.description.clone(),
                    allowed_tools: found.document.allowed_tools.clone(),
                    compatibility: found.document.compatibility.clone(),
                    body: found.document.body.clone(),
                    source: found.source,
                    dir: found.dir.clone(),
                    content_hash: found.content_hash.clone(),
                    resources: found.resources.clone(),
                    trust,
                })
            })
            .collect();
        if rescanned {
            let texts: Vec<String> = state.skills.iter().map(|s| selection_text(s)).collect();
            state.bm25 = Bm25Index::new(texts.iter().map(String::as_str));
            self.embed_missing(state, &texts);
        }
        let mut problems = state.discovery.problems.clone();
        problems.extend(state.trust_problem.clone());
        let mut new_problems = Vec::new();
        for problem in problems {
            if state.reported.insert(problem.to_string()) {
                new_problems.push(problem);
            }
        }
        RefreshReport {
            rescanned,
            new_problems,
        }
    }

    /// name → trusted content hash; an unusable database trusts nothing and is reported.
    fn trust_records(&self, state: &mut State) -> HashMap<String, String> {
        let Some(path) = &self.config.trust_db else {
            return HashMap::new();
        };
        let has_workspace_skills = state
            .discovery
            .skills
            .values()
            .any(|skill| skill.source == SkillSource::Workspace);
        if !has_workspace_skills {
            return HashMap::new();
        }
        if state.trust_store.is_none() {
            match TrustStore::open(path) {
                Ok(store) => state.trust_store = Some(store),
                Err(error) => {
                    state.trust_problem = Some(SkillProblem {
                        path: path.clone(),
                        source: SkillSource::Workspace,
                        message: format!("workspace skills stay untrusted: {error}"),
                    });
                    return HashMap::new();
                }
            }
        }
        let Some(store) = &state.trust_store else {
            return HashMap::new();
        };
        match store.all() {
            Ok(records) => {
                state.trust_problem = None;
                records
                    .into_iter()
                    .map(|(name, record)| (name, record.content_hash))
                    .collect()
            }
            Err(error) => {
                state.trust_problem = Some(SkillProblem {
                    path: path.clone(),
                    source: SkillSource::Workspace,
                    message: format!("workspace skills stay untrusted: {error}"),
                });
                HashMap::new()
            }
        }
    }

    fn embed_missing(&self, state: &mut State, texts: &[String]) {
        let Some(embedder) = &self.embedder else {
            return;
        };
        let missing: Vec<&str> = texts
            .iter()
            .filter(|text| !state.vectors.contains_key(*text))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return;
        }
        // A failing embedder leaves selection lexical; the vectors are retried on the next scan.
        if let Ok(vectors) = embedder.embed_batch(&missing) {
            for (text, vector) in missing.iter().zip(vectors) {
                state.vectors.insert((*text).to_owned(), vector);
            }
        }
    }

    /// Every usable skill, by name.
    pub fn skills(&self) -> Vec<Arc<Skill>> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        state.skills.clone()
    }

    /// Every invalid skill found by the last scan (reported or not).
    pub fn problems(&self) -> Vec<SkillProblem> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        let mut problems = state.discovery.problems.clone();
        problems.extend(state.trust_problem.clone());
        problems
    }

    /// Skills hidden by a same-named skill of higher precedence: (hidden skill's source and
    /// folder, the source that won).
    pub fn shadowed(&self) -> Vec<(String, SkillSource, Option<PathBuf>, SkillSource)> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        state
            .discovery
            .shadowed
            .iter()
            .map(|(hidden, winner)| {
                (
                    hidden.document.name.clone(),
                    hidden.source,
                    hidden.dir.clone(),
                    *winner,
                )
            })
            .collect()
    }

    /// The skill called `name`, fresh from disk.
    pub fn get(&self, name: &str) -> Option<Arc<Skill>> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        state
            .skills
            .iter()
            .find(|skill| skill.name == name)
            .cloned()
    }

    /// Records the user's trust in the workspace skill `name` with its current content.
    pub fn trust(&self, name: &str) -> Result<Arc<Skill>, SkillError> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        let skill = state
            .skills
            .iter()
            .find(|skill| skill.name == name)
            .cloned()
            .ok_or_else(|| SkillError::NotFound(name.to_owned()))?;
        if skill.source != SkillSource::Workspace {
            return Err(SkillError::AlreadyTrusted(
                name.to_owned(),
                skill.source.label(),
            ));
        }
        let path = self
            .config
            .trust_db
            .as_ref()
            .ok_or(SkillError::NoTrustDatabase)?;
        if state.trust_store.is_none() {
            state.trust_store = Some(TrustStore::open(path)?);
        }
        if let Some(store) = &state.trust_store {
            store.trust(name, &skill.content_hash)?;
        }
        self.refresh_locked(&mut state);
        state
            .skills
            .iter()
            .find(|skill| skill.name == name)
            .cloned()
            .ok_or_else(|| SkillError::NotFound(name.to_owned()))
    }

    /// Withdraws trust from a workspace skill; returns whether it was trusted.
    pub fn revoke(&self, name: &str) -> Result<bool, SkillError> {
        let mut state = self.state.lock();
        let path = self
            .config
            .trust_db
            .as_ref()
            .ok_or(SkillError::NoTrustDatabase)?;
        if state.trust_store.is_none() {
            state.trust_store = Some(TrustStore::open(path)?);
        }
        let revoked = match &state.trust_store {
            Some(store) => store.revoke(name)?,
            None => false,
        };
        self.refresh_locked(&mut state);
        Ok(revoked)
    }

    /// The `k` skills that best match `message` (hybrid of BM25 and embedding similarity over
    /// each skill's name and description), best first; skills with no evidence are left out.
    pub fn select(&self, message: &str, k: usize) -> Vec<SelectedSkill> {
        let mut state = self.state.lock();
        self.refresh_locked(&mut state);
        select_locked(&state, self.embedder.as_deref(), message, k)
    }

    /// Everything the loop needs for one turn: rescans (hot reload), selects the top
    /// `config.top_k` skills for the user's message and renders the prompt section.
    pub fn prepare_turn(&self, user_message: &str) -> SkillsForTurn {
        self.prepare_turn_for(user_message, SkillDetail::Bodies)
    }

    /// [`SkillSet::prepare_turn`] at a level of detail: the selected skills' bodies and the
    /// list, or (for a small context window) only the list, with shorter descriptions; the
    /// selection and its grants are the same.
    pub fn prepare_turn_for(&self, user_message: &str, detail: SkillDetail) -> SkillsForTurn {
        let mut state = self.state.lock();
        let report = self.refresh_locked(&mut state);
        let selected = select_locked(
            &state,
            self.embedder.as_deref(),
            user_message,
            self.config.top_k,
        );
        let (texts, description_chars) = match detail {
            SkillDetail::Bodies => (render::selected_bodies(&selected), 200),
            SkillDetail::Pointers => (render::selected_pointers(&selected), 200),
            SkillDetail::NamesOnly => (Vec::new(), 80),
        };
        let catalogue = render::catalogue(&state.skills, description_chars);
        let mut granted_tools: Vec<String> = Vec::new();
        for chosen in &selected {
            for tool in chosen.skill.granted_tools() {
                if !granted_tools.contains(tool) {
                    granted_tools.push(tool.clone());
                }
            }
        }
        SkillsForTurn {
            selected,
            texts,
            catalogue,
            granted_tools,
            new_problems: report.new_problems,
        }
    }
}

fn selection_text(skill: &Skill) -> String {
    format!("{}: {}", skill.name.replace('-', " "), skill.description)
}

fn select_locked(
    state: &State,
    embedder: Option<&dyn Embedder>,
    message: &str,
    k: usize,
) -> Vec<SelectedSkill> {
    if state.skills.is_empty() || k == 0 {
        return Vec::new();
    }
    let bm25 = state.bm25.scores(message);
    let cosines: Option<Vec<f32>> = embedder
        .and_then(|embedder| embedder.embed_query(message).ok())
        .map(|query| {
            state
                .skills
                .iter()
                .map(|skill| {
                    state
                        .vectors
                        .get(&selection_text(skill))
                        .map_or(0.0, |vector| cosine(&query, vector))
                })
                .collect()
        });
    let scores = hybrid_scores(&bm25, cosines.as_deref(), HybridWeights::default());
    let mut ranked: Vec<(usize, f64)> = scores
        .into_iter()
        .enumerate()
        .filter(|(_, score)| *score >= MIN_SELECTION_SCORE)
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
        .into_iter()
        .take(k)
        .map(|(index, score)| SelectedSkill {
            skill: state.skills[index].clone(),
            score,
        })
        .collect()
}
