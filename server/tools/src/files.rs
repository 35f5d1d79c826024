//! Reading and writing file text for the tools: through the editor (`host.client_fs()`) when the
//! client offers it, so unsaved buffers are seen and edits land in the editor; otherwise on disk,
//! where writes are atomic (temp file in the same directory, then rename, keeping permissions).

use std::fs;
use std::io;
use std::path::Path;

use super::args::failed;
use super::{ToolContext, ToolError, ToolErrorCategory};

/// Largest file the tools read whole.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a file's text: `Ok(None)` when it does not exist.
pub async fn read_text(context: &ToolContext, path: &Path) -> Result<Option<String>, ToolError> {
    if let Some(client_fs) = context.host.client_fs() {
        match client_fs.read_text_file(path, None, None).await {
            Ok(text) => return Ok(Some(text)),
            // The client may not know files it has never opened; the disk decides.
            Err(client_error) => {
                return match read_disk(path) {
                    Ok(found) => Ok(found),
                    Err(disk_error) => Err(failed(format!(
                        "cannot read {}: the editor said {client_error}; the disk said {}",
                        path.display(),
                        disk_error.message
                    ))),
                };
            }
        }
    }
    read_disk(path)
}

/// Reads a file from disk, refusing directories, huge files and binary content.
pub fn read_disk(path: &Path) -> Result<Option<String>, ToolError> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(failed(format!("cannot read {}: {error}", path.display()))),
    };
    if metadata.is_dir() {
        return Err(ToolError::new(
            ToolErrorCategory::InvalidArguments,
            format!(
                "{} is a directory; use list_files to see what it holds",
                path.display()
            ),
            true,
        ));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(failed(format!(
            "{} is {} bytes, more than the {MAX_FILE_BYTES} bytes the tools read",
            path.display(),
            metadata.len()
        )));
    }
    let bytes = fs::read(path)
        .map_err(|error| failed(format!("cannot read {}: {error}", path.display())))?;
    if bytes.iter().take(8192).any(|&byte| byte == 0) {
        return Err(failed(format!(
            "{} is a binary file; the tools only read text",
            path.display()
        )));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Writes a file's text, creating missing parent directories (the caller has confined the path).
pub async fn write_text(
    context: &ToolContext,
    path: &Path,
    content: &str,
) -> Result<(), ToolError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|error| {
            failed(format!(
                "cannot create directory {}: {error}",
                parent.display()
            ))
        })?;
    }
    if let Some(client_fs) = context.host.client_fs() {
        return client_fs
            .write_text_file(path, content)
            .await
            .map_err(|error| {
                failed(format!(
                    "the editor could not write {}: {error}",
                    path.display()
                ))
            });
    }
    write_atomic(path, content.as_bytes())
        .map_err(|error| failed(format!("cannot write {}: {error}", path.display())))
}

/// Writes `bytes` to a temporary file next to `path`, syncs it, gives it the old file's
/// permissions and renames it over `path`: a crash leaves either the old or the new file whole.
/// (`lode_index::write_atomic`, which `lode mcp` writes with too.)
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    lode_index::write_atomic(path, bytes)
}

/// Tells the index about a changed file of the primary root. Returns a note for the model when
/// the index could not take the change (the file itself is written either way).
pub async fn update_index(context: &ToolContext, path: &Path, content: &str) -> Option<String> {
    let index = context.index.clone();
    let path = path.to_path_buf();
    let content = content.to_owned();
    let outcome = tokio::task::spawn_blocking(move || index.update_file(&path, &content)).await;
    match outcome {
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(format!("(the code index was not updated: {error})")),
        Err(error) => Some(format!("(the code index was not updated: {error})")),
    }
}
