//! Discovery: which skills exist, where they came from, and whether their content changed.
//!
//! Skills come from three places, in precedence order on a name clash: the workspace's
//! `.lode/skills/`, the user's `<config dir>/lode/skills/`, and the skills bundled into the
//! binary. Each skill is a folder holding `SKILL.md` and optionally `scripts/`, `references/`
//! and `assets/`. A rescan first compares cheap stamps (path, size, mtime of every file in every
//! skill folder) and re-reads nothing when they are unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::bundled::BUNDLED_SKILLS;
use super::parse::{SkillDocument, parse_skill_md};

/// Files per skill folder considered for stamps, hashing and resource listings.
const MAX_FILES_PER_SKILL: usize = 500;
/// How deep resource folders are walked.
const MAX_RESOURCE_DEPTH: usize = 4;
/// The resource folders a skill may carry.
pub const RESOURCE_DIRS: [&str; 3] = ["scripts", "references", "assets"];

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkillSource {
    /// `<workspace>/.lode/skills/` — arrives with the code, untrusted until the user trusts it.
    Workspace,
    /// `<config dir>/lode/skills/` — installed by the user, trusted.
    User,
    /// Compiled into lode, trusted.
    Bundled,
}

impl SkillSource {
    pub fn label(self) -> &'static str {
        match self {
            SkillSource::Workspace => "workspace",
            SkillSource::User => "user",
            SkillSource::Bundled => "bundled",
        }
    }
}

/// One discovered, valid skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredSkill {
    pub document: SkillDocument,
    pub source: SkillSource,
    /// The skill's folder; `None` for bundled skills.
    pub dir: Option<PathBuf>,
    /// `sha256:<hex>` over every file of the folder (relative path and bytes).
    pub content_hash: String,
    /// Resource files relative to the skill folder (`scripts/check.sh`, …), sorted.
    pub resources: Vec<String>,
}

/// A skill folder that could not be used, with the reason. Reported, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    pub path: PathBuf,
    pub source: SkillSource,
    pub message: String,
}

impl std::fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "skipped {} skill {}: {}",
            self.source.label(),
            self.path.display(),
            self.message
        )
    }
}

/// The result of one scan: skills by name (precedence applied) and problems.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub skills: BTreeMap<String, DiscoveredSkill>,
    /// Skills hidden by a same-named skill of higher precedence: (hidden, winner source).
    pub shadowed: Vec<(DiscoveredSkill, SkillSource)>,
    pub problems: Vec<SkillProblem>,
}

/// File stamps of every skill folder under the scanned roots; equal stamps mean nothing changed.
pub type Stamps = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// Collects the stamps of the given roots (missing roots contribute nothing).
pub fn collect_stamps(roots: &[(SkillSource, PathBuf)]) -> Stamps {
    let mut stamps = Vec::new();
    for (_, root) in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            // The folder itself: a new or removed file changes its mtime.
            stamp(&dir, &mut stamps);
            for file in skill_files(&dir) {
                stamp(&dir.join(&file), &mut stamps);
            }
        }
    }
    stamps
}

fn stamp(path: &Path, stamps: &mut Stamps) {
    if let Ok(metadata) = std::fs::metadata(path) {
        stamps.push((path.to_owned(), metadata.len(), metadata.modified().ok()));
    }
}

/// Scans the roots (in precedence order) and the bundled skills.
pub fn discover(roots: &[(SkillSource, PathBuf)], include_bundled: bool) -> Discovery {
    let mut discovery = Discovery::default();
    let mut found: Vec<DiscoveredSkill> = Vec::new();
    for (source, root) in roots {
        let entries = match std::fs::read_dir(root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                discovery.problems.push(SkillProblem {
                    path: root.clone(),
                    source: *source,
                    message: format!("cannot read the skills folder: {error}"),
                });
                continue;
            }
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            match load_skill_dir(&dir, *source) {
                Ok(Some(skill)) => found.push(skill),
                Ok(None) => {}
                Err(message) => discovery.problems.push(SkillProblem {
                    path: dir.join("SKILL.md"),
                    source: *source,
                    message,
                }),
            }
        }
    }
    if include_bundled {
        for (folder, text) in BUNDLED_SKILLS {
            match parse_skill_md(text, folder) {
                Ok(document) => found.push(DiscoveredSkill {
                    content_hash: hash_bytes([("SKILL.md", text.as_bytes())]),
                    document,
                    source: SkillSource::Bundled,
                    dir: None,
                    resources: Vec::new(),
                }),
                Err(error) => discovery.problems.push(SkillProblem {
                    path: PathBuf::from(format!("skills/{folder}/SKILL.md")),
                    source: SkillSource::Bundled,
                    message: error.to_string(),
                }),
            }
        }
    }
    // `found` is in precedence order: the first of a name wins.
    for skill in found {
        let name = skill.document.name.clone();
        match discovery.skills.get(&name) {
            Some(winner) => {
                let winner_source = winner.source;
                discovery.shadowed.push((skill, winner_source));
            }
            None => {
                discovery.skills.insert(name, skill);
            }
        }
    }
    discovery
}

/// Reads one skill folder. `Ok(None)` for a folder without SKILL.md (not a skill).
fn load_skill_dir(dir: &Path, source: SkillSource) -> Result<Option<DiscoveredSkill>, String> {
    let skill_md = dir.join("SKILL.md");
    let bytes = match std::fs::read(&skill_md) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot read: {error}")),
    };
    let text = String::from_utf8(bytes).map_err(|_| "SKILL.md is not valid UTF-8".to_owned())?;
    let folder = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let document = parse_skill_md(&text, &folder).map_err(|error| error.to_string())?;
    let files = skill_files(dir);
    let content_hash = hash_folder(dir, &files).map_err(|error| format!("cannot hash: {error}"))?;
    let resources = files
        .into_iter()
        .filter(|file| file != "SKILL.md")
        .filter(|file| {
            RESOURCE_DIRS
                .iter()
                .any(|d| file.starts_with(&format!("{d}/")))
        })
        .collect();
    Ok(Some(DiscoveredSkill {
        document,
        source,
        dir: Some(dir.to_owned()),
        content_hash,
        resources,
    }))
}

/// Every regular file of a skill folder, relative (`/`-separated), sorted; symlinks are skipped
/// so a skill cannot point its resources outside its folder.
pub fn skill_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    collect_files(dir, dir, 0, &mut files);
    files.sort();
    files
}

fn collect_files(base: &Path, dir: &Path, depth: usize, files: &mut Vec<String>) {
    if depth > MAX_RESOURCE_DEPTH || files.len() >= MAX_FILES_PER_SKILL {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if file_type.is_dir() {
            collect_files(base, &path, depth + 1, files);
        } else if file_type.is_file() {
            if files.len() >= MAX_FILES_PER_SKILL {
                return;
            }
            if let Ok(relative) = path.strip_prefix(base) {
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                files.push(parts.join("/"));
            }
        }
    }
}

fn hash_folder(dir: &Path, files: &[String]) -> std::io::Result<String> {
    let mut contents = Vec::with_capacity(files.len());
    for file in files {
        contents.push((file.as_str(), std::fs::read(dir.join(file))?));
    }
    Ok(hash_bytes(
        contents
            .iter()
            .map(|(name, bytes)| (*name, bytes.as_slice())),
    ))
}

fn hash_bytes<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut hasher = Sha256::new();
    for (name, bytes) in files {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}
