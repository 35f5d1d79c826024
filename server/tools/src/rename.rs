//! `rename`: the language server's rename ([`crate::navigation::NavigationSource::rename`], after
//! its `prepareRename`), applied to every file it names at once, shown as one change.
//!
//! The edits come from another process, so nothing in them is trusted: every file must resolve
//! inside the workspace roots (symlinks resolved), must not lie under `.git/` or `.lode/`, must
//! exist, and every replaced range must hold the old name (or be an insertion) in the file's
//! current text — otherwise the file changed since the server read it, and the whole rename is
//! refused. Files are read and written like every edit (through the editor when it offers a file
//! system); on disk all new texts are staged as temporary files next to their originals first,
//! then renamed over them, and a failure part-way puts back the files already replaced: all or
//! nothing. There is no fallback: without a language server, `rename` says it needs one (lode
//! does not guess a rename from text).
//!
//! The policy judges the call as an edit whose files it cannot know in advance (they come
//! from the server's answer), so no path rule allows it: it asks, unless the user granted the
//! tool itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::args::{failed, invalid, parse_args, peek_str};
use super::edit::unified_diff;
use super::files::{read_text, update_index, write_text};
use super::navigate::{NAMING, resolve_target};
use super::output::{DEFAULT_OUTPUT_CAP, cap_output};
use super::paths::resolve_path;
use super::symbol_edit::symbol_file;
use super::{
    PermissionTarget, Tool, ToolContext, ToolError, ToolErrorCategory, ToolOutput, ToolPresentation,
};
use crate::event::{Location, ToolContent, ToolKind};
use crate::navigation::{FileEdit, NavPosition, NavigationError, NavigationSource};
use lode_llm::ToolSpec;

/// The tool's name.
pub const RENAME_TOOL: &str = "rename";

/// Longest new name accepted.
const MAX_NAME_CHARS: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameArgs {
    symbol: String,
    new_name: String,
}

/// `rename`.
pub struct RenameTool {
    source: Option<Arc<dyn NavigationSource>>,
}

impl RenameTool {
    /// The tool renaming through `source` (`None`: it can only say it needs a server).
    pub fn new(source: Option<Arc<dyn NavigationSource>>) -> Self {
        RenameTool { source }
    }
}

#[async_trait::async_trait]
impl Tool for RenameTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: RENAME_TOOL.into(),
            description: format!(
                "Rename a symbol (function, method, class, variable, field) and every use of \
                 it across the workspace, as the language server (pyright, rust-analyzer, …) \
                 resolves them by type: `Circle/area` renames the calls of Circle's `area` and \
                 leaves another class's `area` alone. All files change together or none does; \
                 returns one diff. Needs a language server for the file's language (there is \
                 no text-based fallback). {NAMING}"
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "symbol": {"type": "string", "description": "FILE:NAME/PATH (src/shapes.py:Circle/area) or FILE:LINE:COLUMN of the name or a use of it; FILE is relative to the workspace root."},
                    "new_name": {"type": "string", "description": "The new identifier (the bare name, e.g. `surface`)."}
                },
                "required": ["symbol", "new_name"],
                "additionalProperties": false
            }),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn read_only(&self) -> bool {
        false
    }

    fn present(&self, arguments: &serde_json::Value, context: &ToolContext) -> ToolPresentation {
        let symbol: String = peek_str(arguments, "symbol")
            .unwrap_or("a symbol")
            .chars()
            .take(200)
            .collect();
        let new_name: String = peek_str(arguments, "new_name")
            .unwrap_or("?")
            .chars()
            .take(100)
            .collect();
        ToolPresentation {
            title: format!("Rename {symbol} to {new_name}"),
            locations: symbol_file(arguments)
                .and_then(|file| resolve_path(&context.roots, file).ok())
                .map(|resolved| {
                    vec![Location {
                        path: resolved.absolute,
                        line: None,
                    }]
                })
                .unwrap_or_default(),
        }
    }

    fn permission_target(&self, _arguments: &serde_json::Value) -> PermissionTarget {
        // The files a rename changes are known only from the server's answer: no path rule
        // can judge them in advance, so the policy asks.
        PermissionTarget::Edit { paths: Vec::new() }
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: RenameArgs = parse_args(RENAME_TOOL, &arguments)?;
        check_new_name(&args.new_name)?;
        let target = resolve_target(&args.symbol, context).await?;
        if context
            .roots
            .iter()
            .any(|root| protected(&target.point.path, root))
        {
            return Err(ToolError::new(
                ToolErrorCategory::PermissionDenied,
                format!(
                    "rename refused: {} is under .git/ or .lode/, where renaming is not allowed",
                    target.shown
                ),
                false,
            ));
        }
        if target.identifier == args.new_name {
            return Err(invalid(format!(
                "rename: {} is already named `{}`",
                args.symbol, args.new_name
            )));
        }
        let Some(source) = &self.source else {
            return Err(needs_server(
                &target.shown,
                "no language server is configured",
            ));
        };
        let answer = tokio::select! {
            answer = source.rename(&target.point, &args.new_name) => answer,
            _ = context.cancel.cancelled() => {
                return Err(ToolError::new(ToolErrorCategory::Cancelled, "cancelled", false));
            }
        };
        let resolved = answer.map_err(|error| match error {
            NavigationError::Unavailable(reason) => needs_server(&target.shown, &reason),
            NavigationError::Failed(reason) => ToolError::new(
                ToolErrorCategory::Failed,
                format!("rename failed, nothing was changed: {reason}"),
                true,
            ),
        })?;
        let resolved_by = resolved.resolved_by;
        if resolved.value.iter().all(|file| file.edits.is_empty()) {
            return Err(ToolError::new(
                ToolErrorCategory::NotFound,
                format!("{resolved_by} has nothing to rename at {}", args.symbol),
                true,
            ));
        }
        let mut changes = Vec::with_capacity(resolved.value.len());
        for file in &resolved.value {
            changes.push(prepare(file, &target.identifier, &resolved_by, context).await?);
        }
        changes.retain(|change| change.new != change.old);
        if changes.is_empty() {
            return Ok(ToolOutput {
                model_text: format!(
                    "{} already reads `{}`; nothing changed.",
                    args.symbol, args.new_name
                ),
                raw_output: Some(json!({"resolved_by": resolved_by, "changed": false})),
                ..ToolOutput::default()
            });
        }
        if context.cancel.is_cancelled() {
            return Err(ToolError::new(
                ToolErrorCategory::Cancelled,
                "cancelled",
                false,
            ));
        }
        write_all(context, &changes).await?;
        let mut notes = Vec::new();
        for change in &changes {
            if change.in_primary_root
                && let Some(note) = update_index(context, &change.path, &change.new).await
            {
                notes.push(note);
            }
        }
        Ok(output(
            &args,
            &target.identifier,
            &resolved_by,
            &changes,
            notes,
        ))
    }
}

/// The error when no language server can rename.
fn needs_server(file: &str, reason: &str) -> ToolError {
    ToolError::new(
        ToolErrorCategory::Failed,
        format!(
            "rename needs a language server for {file}, and none could rename it ({reason}). \
             lode does not guess a rename from text: use `references` and edit the uses, or \
             configure a server ([lsp.diagnostics] servers)."
        ),
        false,
    )
}

/// A new name is one identifier-like word.
fn check_new_name(name: &str) -> Result<(), ToolError> {
    if name.is_empty() {
        return Err(invalid("rename: `new_name` is empty"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(format!(
            "rename: `new_name` is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || *c == '_' || *c == '$'))
    {
        return Err(invalid(format!(
            "rename: `new_name` must be a bare identifier; {bad:?} is not allowed (give the \
             name only, not a path or a qualified name)"
        )));
    }
    Ok(())
}

/// One file's change, checked and ready to write.
struct Change {
    path: PathBuf,
    shown: String,
    in_primary_root: bool,
    old: String,
    new: String,
    edits: usize,
    first_line: u32,
}

/// Confines one file of the server's answer and applies its edits to the file's current text.
async fn prepare(
    file: &FileEdit,
    old_name: &str,
    resolved_by: &str,
    context: &ToolContext,
) -> Result<Change, ToolError> {
    let refused = |why: String| {
        ToolError::new(
            ToolErrorCategory::OutsideWorkspace,
            format!("rename refused, nothing was changed: {why}"),
            false,
        )
    };
    let raw = file
        .path
        .to_str()
        .ok_or_else(|| refused(format!("{} is not a UTF-8 path", file.path.display())))?;
    let resolved = resolve_path(&context.roots, raw).map_err(|error| {
        refused(format!(
            "{resolved_by} wants to edit {}, outside the workspace ({})",
            file.path.display(),
            error.message
        ))
    })?;
    let shown = resolved.display(&context.roots);
    if protected(&resolved.absolute, &resolved.root) {
        return Err(refused(format!(
            "{resolved_by} wants to edit {shown}, under .git/ or .lode/"
        )));
    }
    if !resolved.exists {
        return Err(refused(format!(
            "{resolved_by} wants to edit {shown}, which does not exist"
        )));
    }
    let old = read_text(context, &resolved.absolute)
        .await?
        .ok_or_else(|| refused(format!("{shown} does not exist")))?;
    let new = apply_edits(&old, file, old_name).map_err(|why| {
        ToolError::new(
            ToolErrorCategory::Failed,
            format!(
                "rename refused, nothing was changed: {shown}: {why}; the file changed since \
                 {resolved_by} read it, or the answer is wrong. Ask again."
            ),
            true,
        )
    })?;
    let first_line = file
        .edits
        .iter()
        .map(|edit| edit.start.line)
        .min()
        .unwrap_or(1);
    Ok(Change {
        path: resolved.absolute,
        shown,
        in_primary_root: resolved.in_primary_root,
        old,
        new,
        edits: file.edits.len(),
        first_line,
    })
}

/// Whether `path` lies under `.git/` or `.lode/` of its root.
fn protected(path: &Path, root: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|relative| {
        relative
            .components()
            .any(|part| part.as_os_str() == ".git" || part.as_os_str() == ".lode")
    })
}

/// The byte offset of a 1-based line and column (in characters), if it lies in `text` (the
/// column may point just past the line's last character).
fn offset(text: &str, at: NavPosition) -> Option<usize> {
    let mut line_start = 0;
    for _ in 1..at.line {
        line_start += text[line_start..].find('\n')? + 1;
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |end| line_start + end);
    let line = &text[line_start..line_end];
    let line = line.strip_suffix('\r').unwrap_or(line);
    let wanted = at.column.checked_sub(1)? as usize;
    let mut chars = line.char_indices().map(|(at, _)| at).chain([line.len()]);
    chars.nth(wanted).map(|at| line_start + at)
}

/// `text` with a file's edits applied, or why they do not fit it: a range outside the text,
/// overlapping ranges, or a replaced range that does not hold the old name.
fn apply_edits(text: &str, file: &FileEdit, old_name: &str) -> Result<String, String> {
    let mut ranges = Vec::with_capacity(file.edits.len());
    for edit in &file.edits {
        let start = offset(text, edit.start).ok_or_else(|| {
            format!(
                "{}:{} is past the end of the file",
                edit.start.line, edit.start.column
            )
        })?;
        let end = offset(text, edit.end).ok_or_else(|| {
            format!(
                "{}:{} is past the end of the file",
                edit.end.line, edit.end.column
            )
        })?;
        if end < start {
            return Err(format!(
                "an edit at {}:{} ends before it starts",
                edit.start.line, edit.start.column
            ));
        }
        let replaced = &text[start..end];
        if !replaced.is_empty() && replaced != old_name {
            return Err(format!(
                "the text at {}:{} is `{}`, not `{old_name}`",
                edit.start.line,
                edit.start.column,
                replaced.chars().take(60).collect::<String>()
            ));
        }
        ranges.push((start, end, edit.new_text.as_str()));
    }
    ranges.sort_by_key(|(start, end, _)| (*start, *end));
    ranges.dedup();
    for pair in ranges.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err("two edits overlap".into());
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new_text) in ranges {
        out.push_str(&text[at..start]);
        out.push_str(new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Writes every change or none: through the editor (putting back what it wrote when one write
/// fails), or on disk staged then renamed (see [`write_disk`]).
async fn write_all(context: &ToolContext, changes: &[Change]) -> Result<(), ToolError> {
    if context.host.client_fs().is_some() {
        for (done, change) in changes.iter().enumerate() {
            if let Err(error) = write_text(context, &change.path, &change.new).await {
                for written in &changes[..done] {
                    let _ = write_text(context, &written.path, &written.old).await;
                }
                return Err(failed(format!(
                    "rename failed and was undone, nothing was changed: {}",
                    error.message
                )));
            }
        }
        return Ok(());
    }
    let files: Vec<(PathBuf, String, String)> = changes
        .iter()
        .map(|change| (change.path.clone(), change.old.clone(), change.new.clone()))
        .collect();
    super::args::blocking(move || write_disk(&files)).await
}

/// A staged new text: the temporary file beside its original.
struct Staged {
    temp: PathBuf,
}

impl Drop for Staged {
    fn drop(&mut self) {
        // Renamed over the original: nothing left here. Otherwise it goes.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// Stages `new` beside `path` (synced, with the original's permissions).
fn stage(path: &Path, new: &str) -> std::io::Result<Staged> {
    use std::io::Write as _;
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the file has no directory"))?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut attempt = 0;
    let (temp, mut file) = loop {
        let temp = parent.join(format!(".{name}.lode-rename-{:08x}.tmp", fastrand::u32(..)));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    };
    let staged = Staged { temp };
    file.write_all(new.as_bytes())?;
    file.sync_all()?;
    if let Ok(metadata) = std::fs::metadata(path) {
        std::fs::set_permissions(&staged.temp, metadata.permissions())?;
    }
    Ok(staged)
}

/// All or nothing on disk: every new text staged; every original checked unchanged since it was
/// read; then each staged file renamed over its original, and on a failure the originals
/// already replaced are written back.
fn write_disk(files: &[(PathBuf, String, String)]) -> Result<(), ToolError> {
    let mut staged = Vec::with_capacity(files.len());
    for (path, _, new) in files {
        staged.push(stage(path, new).map_err(|error| {
            failed(format!(
                "rename failed, nothing was changed: cannot write beside {}: {error}",
                path.display()
            ))
        })?);
    }
    for (path, old, _) in files {
        let now = std::fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        if now.as_deref().ok() != Some(old.as_str()) {
            return Err(ToolError::new(
                ToolErrorCategory::Failed,
                format!(
                    "rename refused, nothing was changed: {} changed while the rename was \
                     prepared; ask again",
                    path.display()
                ),
                true,
            ));
        }
    }
    for (done, ((path, _, _), staged)) in files.iter().zip(&staged).enumerate() {
        if let Err(error) = std::fs::rename(&staged.temp, path) {
            let mut undone = true;
            for (path, old, _) in &files[..done] {
                undone &= super::files::write_atomic(path, old.as_bytes()).is_ok();
            }
            return Err(failed(if undone {
                format!(
                    "rename failed and was undone, nothing was changed: cannot replace {}: {error}",
                    path.display()
                )
            } else {
                format!(
                    "rename failed part-way and could not be fully undone: cannot replace {}: \
                     {error}; check the files it lists",
                    path.display()
                )
            }));
        }
    }
    Ok(())
}

/// One result for the whole rename: a summary, the combined diff, a diff per file for the
/// front end.
fn output(
    args: &RenameArgs,
    old_name: &str,
    resolved_by: &str,
    changes: &[Change],
    notes: Vec<String>,
) -> ToolOutput {
    let edits: usize = changes.iter().map(|change| change.edits).sum();
    let mut diff = String::new();
    let mut files: BTreeMap<&str, usize> = BTreeMap::new();
    for change in changes {
        diff.push_str(&unified_diff(&change.shown, &change.old, &change.new));
        files.insert(&change.shown, change.edits);
    }
    let mut model_text = format!(
        "Renamed `{old_name}` to `{}` (resolved_by: {resolved_by}): {edits} edit{} in {} file{}.\n{}",
        args.new_name,
        if edits == 1 { "" } else { "s" },
        changes.len(),
        if changes.len() == 1 { "" } else { "s" },
        cap_output(&diff, DEFAULT_OUTPUT_CAP).text
    );
    for note in notes {
        model_text.push('\n');
        model_text.push_str(&note);
    }
    ToolOutput {
        model_text,
        display: changes
            .iter()
            .map(|change| ToolContent::Diff {
                path: change.path.clone(),
                old_text: Some(change.old.clone()),
                new_text: change.new.clone(),
            })
            .collect(),
        locations: changes
            .iter()
            .map(|change| Location {
                path: change.path.clone(),
                line: Some(change.first_line),
            })
            .collect(),
        raw_output: Some(json!({
            "resolved_by": resolved_by,
            "symbol": args.symbol,
            "new_name": args.new_name,
            "edits": edits,
            "files": files,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::navigation::TextEdit;

    fn edit(line: u32, column: u32, end: u32, new_text: &str) -> TextEdit {
        TextEdit {
            start: NavPosition { line, column },
            end: NavPosition { line, column: end },
            new_text: new_text.into(),
        }
    }

    fn file(edits: Vec<TextEdit>) -> FileEdit {
        FileEdit {
            path: PathBuf::from("/w/a.py"),
            edits,
        }
    }

    #[test]
    fn edits_apply_by_character_columns() {
        let text = "s = \"é\"; c.area()\nx.area\n";
        let at = text.find("area").unwrap();
        let column = text[..at].chars().count() as u32 + 1;
        let renamed = apply_edits(
            text,
            &file(vec![
                edit(2, 3, 7, "surface"),
                edit(1, column, column + 4, "surface"),
            ]),
            "area",
        )
        .unwrap();
        assert_eq!(renamed, "s = \"é\"; c.surface()\nx.surface\n");
    }

    #[test]
    fn edits_that_do_not_fit_the_text_are_refused() {
        let text = "c.area()\n";
        let stale = apply_edits(text, &file(vec![edit(1, 1, 5, "surface")]), "area");
        assert!(stale.unwrap_err().contains("is `c.ar`, not `area`"));
        let past = apply_edits(text, &file(vec![edit(9, 1, 5, "surface")]), "area");
        assert!(past.unwrap_err().contains("past the end"));
        let overlap = apply_edits(
            "areaarea",
            &file(vec![edit(1, 1, 5, "x"), edit(1, 1, 1, "y")]),
            "area",
        );
        assert!(overlap.is_ok(), "an insertion at a start does not overlap");
        let overlap = apply_edits(
            "area",
            &file(vec![edit(1, 1, 5, "x"), edit(1, 3, 3, "y")]),
            "area",
        );
        assert_eq!(overlap.unwrap_err(), "two edits overlap");
    }

    #[test]
    fn new_names_are_bare_identifiers() {
        assert!(check_new_name("surface_2").is_ok());
        assert!(check_new_name("").is_err());
        assert!(check_new_name("a b").is_err());
        assert!(check_new_name("../x").is_err());
        assert!(check_new_name(&"x".repeat(300)).is_err());
    }

    #[test]
    fn git_and_lode_are_protected_at_any_depth() {
        let root = Path::new("/w");
        assert!(protected(Path::new("/w/.git/hooks/pre-commit"), root));
        assert!(protected(Path::new("/w/sub/.lode/config.toml"), root));
        assert!(!protected(Path::new("/w/src/gitx.py"), root));
    }

    #[test]
    fn disk_writes_are_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.py");
        let b = dir.path().join("b.py");
        std::fs::write(&a, "old a").unwrap();
        std::fs::write(&b, "old b").unwrap();
        // b changed after it was read: nothing is written, no temporary file is left.
        let files = vec![
            (a.clone(), "old a".to_owned(), "new a".to_owned()),
            (b.clone(), "older b".to_owned(), "new b".to_owned()),
        ];
        let error = write_disk(&files).unwrap_err();
        assert!(error.message.contains("changed while"), "{}", error.message);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let files = vec![
            (a.clone(), "old a".to_owned(), "new a".to_owned()),
            (b.clone(), "old b".to_owned(), "new b".to_owned()),
        ];
        write_disk(&files).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new b");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
