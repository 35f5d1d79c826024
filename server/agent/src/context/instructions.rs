//! Instruction files: what the project tells agents (`AGENTS.md`, `CLAUDE.md`,
//! `.lode/instructions.md`). They are looked for at the workspace root and in the directories
//! between the root and each focus file, never outside the root: every candidate is
//! canonicalised (symlinks resolved) and refused unless it is still inside the canonical root.
//! Each file is capped at a byte size; a cut file says so.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use super::tokens::floor_char_boundary;

/// File names looked for at the root, in order.
pub const ROOT_INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".lode/instructions.md"];
/// File names looked for in the directories between the root and a focus file.
pub const NESTED_INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// The default per-file cap in bytes (`[agent] instruction_file_max_bytes`).
pub const DEFAULT_INSTRUCTION_FILE_MAX_BYTES: usize = 16 * 1024;

/// One instruction file found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// The text, cut to the cap (with a closing note when cut).
    pub content: String,
    /// Whether the file was longer than the cap.
    pub truncated: bool,
}

impl InstructionFile {
    /// Whether it is one of the root's files ([`ROOT_INSTRUCTION_FILES`]), which apply to every
    /// turn; the others apply to the files near them.
    pub fn is_root(&self) -> bool {
        ROOT_INSTRUCTION_FILES.contains(&self.path.as_str())
    }
}

/// Finds the instruction files for a conversation about `focus_files` (workspace-relative or
/// absolute paths; ones outside the root are ignored): the root's files first, then those of
/// each directory from the root down toward the focus files, each at most `max_bytes`.
pub fn find_instruction_files(
    root: &Path,
    focus_files: &[String],
    max_bytes: usize,
) -> Vec<InstructionFile> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut candidates: Vec<PathBuf> = ROOT_INSTRUCTION_FILES
        .iter()
        .map(|name| root.join(name))
        .collect();
    let mut directories: Vec<PathBuf> = Vec::new();
    for focus in focus_files {
        let Some(relative) = relative_inside(&root, Path::new(focus)) else {
            continue;
        };
        let mut directory = PathBuf::new();
        let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
        for component in parent.components() {
            directory.push(component);
            if !directories.contains(&directory) {
                directories.push(directory.clone());
            }
        }
    }
    // Shallow directories first, so more specific instructions come later and read as refinements.
    directories.sort_by_key(|directory| directory.components().count());
    for directory in &directories {
        for name in NESTED_INSTRUCTION_FILES {
            candidates.push(root.join(directory).join(name));
        }
    }

    let mut seen = HashSet::new();
    let mut found = Vec::new();
    for candidate in candidates {
        let Ok(real) = candidate.canonicalize() else {
            continue;
        };
        if !real.starts_with(&root) || !real.is_file() || !seen.insert(real.clone()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&real) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let truncated = text.len() > max_bytes;
        let content = if truncated {
            let end = floor_char_boundary(&text, max_bytes);
            format!(
                "{}\n[truncated: {end} of {} bytes shown]",
                &text[..end],
                text.len()
            )
        } else {
            text.into_owned()
        };
        let path = candidate
            .strip_prefix(&root)
            .unwrap_or(&candidate)
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        found.push(InstructionFile {
            path,
            content,
            truncated,
        });
    }
    found
}

/// `path` relative to the canonical `root` when it lies inside it (lexically: `..` is resolved
/// against the path itself, and a path that climbs out is refused).
fn relative_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let relative = if path.is_absolute() {
        let real = path.canonicalize().ok()?;
        real.strip_prefix(root).ok()?.to_path_buf()
    } else {
        path.to_path_buf()
    };
    let mut clean = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(clean)
}

/// The files rendered for the system prompt, each inside an
/// `<untrusted_content source="instructions" path="…">` block: they come from the repository,
/// not from the user.
pub fn render_instruction_files(files: &[InstructionFile]) -> String {
    files
        .iter()
        .map(|file| {
            let mut block = render_file(file);
            block.push('\n');
            block
        })
        .collect()
}

/// [`render_instruction_files`] within `max_tokens`: files in order while they fit; the first
/// that does not is cut to the room left (inside its block), and the rest are left out.
pub fn render_instruction_files_within(files: &[InstructionFile], max_tokens: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for file in files {
        let block = format!("{}\n", render_file(file));
        let tokens = super::tokens::count_tokens(&block);
        if used + tokens <= max_tokens {
            used += tokens;
            out.push_str(&block);
            continue;
        }
        if let Some(cut) = super::wrap_within(
            "instructions",
            &[("path", file.path.as_str())],
            file.content.trim_end(),
            max_tokens.saturating_sub(used + 1),
        ) {
            out.push_str(&cut);
            out.push('\n');
        }
        break;
    }
    out
}

fn render_file(file: &InstructionFile) -> String {
    lode_tools::untrusted::wrap(
        "instructions",
        &[("path", file.path.as_str())],
        file.content.trim_end(),
    )
}
