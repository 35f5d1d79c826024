//! Reading the config files of [`ConfigSources`] into layers, first (highest) first.

use std::path::{Path, PathBuf};

use super::{ConfigCandidate, ConfigError, ConfigOrigin, ConfigSources, parse_layer};

/// What reading the sources found.
pub(super) struct ReadLayers {
    /// Every place looked at, found or not.
    pub searched: Vec<ConfigCandidate>,
    /// The files read, each with its table, first (highest) first.
    pub layers: Vec<(PathBuf, toml::Table)>,
    /// The workspace file's `[sandbox]`, taken out of its layer: the workspace is untrusted, so
    /// it is applied apart, and only to tighten.
    pub workspace_sandbox: Option<(PathBuf, toml::Value)>,
    /// The settings of an untrusted workspace file that were not applied.
    pub untrusted_ignored: Vec<String>,
    /// That untrusted workspace file.
    pub untrusted_file: Option<PathBuf>,
    /// The workspace's file, when it was read as the workspace's (trusted or not).
    pub workspace_file: Option<PathBuf>,
}

/// Reads each source in order; a missing optional file is noted, a missing required one or an
/// unreadable or invalid one is an error.
pub(super) fn read_layers(sources: &ConfigSources) -> Result<ReadLayers, ConfigError> {
    let mut read = ReadLayers {
        searched: Vec::new(),
        layers: Vec::new(),
        workspace_sandbox: None,
        untrusted_ignored: Vec::new(),
        untrusted_file: None,
        workspace_file: None,
    };
    for (origin, path) in sources.in_order() {
        let Some(path) = path else {
            read.searched.push(ConfigCandidate {
                origin,
                path: None,
                found: false,
            });
            continue;
        };
        let text = read_source(origin, path)?;
        read.searched.push(ConfigCandidate {
            origin,
            path: Some(path.clone()),
            found: text.is_some(),
        });
        if let Some(text) = text.filter(|_| !already_read(&read.layers, path)) {
            let untrusted = origin == ConfigOrigin::Workspace && !sources.workspace_trusted;
            read.add_layer(origin, path, &text, untrusted)?;
        }
    }
    Ok(read)
}

impl ReadLayers {
    fn add_layer(
        &mut self,
        origin: ConfigOrigin,
        path: &Path,
        text: &str,
        untrusted: bool,
    ) -> Result<(), ConfigError> {
        let (mut layer, ignored) = parse_layer(path, text, untrusted)?;
        if untrusted {
            self.untrusted_ignored = ignored;
            self.untrusted_file = Some(path.to_path_buf());
        }
        if origin == ConfigOrigin::Workspace {
            self.workspace_file = Some(path.to_path_buf());
        }
        if origin == ConfigOrigin::Workspace
            && let Some(sandbox) = layer.remove("sandbox")
        {
            self.workspace_sandbox = Some((path.to_path_buf(), sandbox));
        }
        self.layers.push((path.to_path_buf(), layer));
        Ok(())
    }
}

/// The file's text; `None` when it does not exist and `origin` does not require it.
fn read_source(origin: ConfigOrigin, path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !origin.required() => {
            Ok(None)
        }
        Err(error) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            origin,
            message: if error.kind() == std::io::ErrorKind::NotFound {
                "no such file".to_owned()
            } else {
                error.to_string()
            },
        }),
    }
}

/// Whether `path` is a file already read as a layer. A file named by `--config` or
/// `$LODE_CONFIG` is vouched for by the user: when it is also the workspace's file, that file is
/// read once, as the user's.
fn already_read(layers: &[(PathBuf, toml::Table)], path: &Path) -> bool {
    let canonical = std::fs::canonicalize(path).ok();
    canonical.as_ref().is_some_and(|canonical| {
        layers
            .iter()
            .any(|(read, _)| std::fs::canonicalize(read).ok().as_ref() == Some(canonical))
    })
}
