//! Parsing and validating one `SKILL.md` (the Agent Skills format): YAML front matter between
//! `---` lines, then a Markdown body.
//!
//! Required keys: `name` (lowercase letters, digits and single hyphens, at most
//! [`MAX_NAME_CHARS`] characters, equal to the skill's folder name) and `description` (what the
//! skill is for and when to use it, at most [`MAX_DESCRIPTION_CHARS`] characters). Optional:
//! `allowed-tools` (a list, or a space/comma-separated string), `compatibility`, `license`,
//! `metadata`. Unknown keys are ignored so newer skills still load.

use serde::Deserialize;

/// Longest skill name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility` note, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Largest SKILL.md read, in bytes; bigger files are rejected, not truncated.
pub const MAX_SKILL_FILE_BYTES: usize = 256 * 1024;

/// Why a SKILL.md was rejected. Each is reported and the skill skipped; none stops discovery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillParseError {
    #[error("SKILL.md must start with a `---` line opening the YAML front matter")]
    MissingFrontMatter,
    #[error("the YAML front matter is not closed by a `---` line")]
    UnclosedFrontMatter,
    #[error("invalid YAML front matter: {0}")]
    InvalidYaml(String),
    #[error("the front matter has no `{0}`")]
    MissingField(&'static str),
    #[error(
        "invalid name {name:?}: use lowercase letters, digits and single hyphens (not at the start or end), at most {MAX_NAME_CHARS} characters"
    )]
    InvalidName { name: String },
    #[error("name {name:?} differs from its folder name {folder:?}")]
    NameMismatch { name: String, folder: String },
    #[error("the description is empty")]
    EmptyDescription,
    #[error("the description has {chars} characters; at most {MAX_DESCRIPTION_CHARS} are allowed")]
    DescriptionTooLong { chars: usize },
    #[error(
        "`compatibility` has {chars} characters; at most {MAX_COMPATIBILITY_CHARS} are allowed"
    )]
    CompatibilityTooLong { chars: usize },
    #[error("`allowed-tools` must be a list of tool names or a space-separated string")]
    InvalidAllowedTools,
    #[error("SKILL.md is {bytes} bytes; at most {MAX_SKILL_FILE_BYTES} are allowed")]
    TooLarge { bytes: usize },
}

/// The validated content of a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDocument {
    pub name: String,
    pub description: String,
    /// Tools the skill asks to be pre-approved while it is active (granted only when trusted).
    pub allowed_tools: Vec<String>,
    pub compatibility: Option<String>,
    /// The Markdown after the front matter, trimmed.
    pub body: String,
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools", alias = "allowed_tools")]
    allowed_tools: Option<serde_yaml_ng::Value>,
    compatibility: Option<String>,
}

/// Whether `name` is a valid skill name.
pub fn is_valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Parses and validates a SKILL.md found in the folder `folder_name`.
pub fn parse_skill_md(text: &str, folder_name: &str) -> Result<SkillDocument, SkillParseError> {
    if text.len() > MAX_SKILL_FILE_BYTES {
        return Err(SkillParseError::TooLarge { bytes: text.len() });
    }
    let (yaml, body) = split_front_matter(text)?;
    let front: FrontMatter = if yaml.trim().is_empty() {
        return Err(SkillParseError::MissingField("name"));
    } else {
        serde_yaml_ng::from_str(yaml).map_err(|e| SkillParseError::InvalidYaml(e.to_string()))?
    };
    let name = front
        .name
        .map(|name| name.trim().to_owned())
        .ok_or(SkillParseError::MissingField("name"))?;
    if !is_valid_skill_name(&name) {
        return Err(SkillParseError::InvalidName { name });
    }
    if name != folder_name {
        return Err(SkillParseError::NameMismatch {
            name,
            folder: folder_name.to_owned(),
        });
    }
    let description = front
        .description
        .ok_or(SkillParseError::MissingField("description"))?;
    let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if description.is_empty() {
        return Err(SkillParseError::EmptyDescription);
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillParseError::DescriptionTooLong { chars });
    }
    let compatibility = front
        .compatibility
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    if let Some(compatibility) = &compatibility {
        let chars = compatibility.chars().count();
        if chars > MAX_COMPATIBILITY_CHARS {
            return Err(SkillParseError::CompatibilityTooLong { chars });
        }
    }
    let allowed_tools = parse_allowed_tools(front.allowed_tools)?;
    Ok(SkillDocument {
        name,
        description,
        allowed_tools,
        compatibility,
        body: body.trim().to_owned(),
    })
}

fn split_front_matter(text: &str) -> Result<(&str, &str), SkillParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(SkillParseError::MissingFrontMatter)?;
    if first.trim_end() != "---" {
        return Err(SkillParseError::MissingFrontMatter);
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[yaml_start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(SkillParseError::UnclosedFrontMatter)
}

fn parse_allowed_tools(
    value: Option<serde_yaml_ng::Value>,
) -> Result<Vec<String>, SkillParseError> {
    use serde_yaml_ng::Value;
    let names: Vec<String> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => text
            .split(|ch: char| ch.is_whitespace() || ch == ',')
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Sequence(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(name) => Ok(name.trim().to_owned()),
                _ => Err(SkillParseError::InvalidAllowedTools),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(SkillParseError::InvalidAllowedTools),
    };
    Ok(names.into_iter().filter(|name| !name.is_empty()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_split_keeps_body() {
        let doc = parse_skill_md(
            "---\nname: a-b\ndescription: Does  things.\nallowed-tools: read_file, grep\n---\n# Body\ntext\n",
            "a-b",
        )
        .unwrap();
        assert_eq!(doc.description, "Does things.");
        assert_eq!(doc.allowed_tools, vec!["read_file", "grep"]);
        assert_eq!(doc.body, "# Body\ntext");
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "A", "a_b", "-a", "a-", "a--b", &"a".repeat(65)] {
            assert!(!is_valid_skill_name(bad), "{bad:?}");
        }
        for good in ["a", "rust-fix-2", &"a".repeat(64)] {
            assert!(is_valid_skill_name(good), "{good:?}");
        }
    }
}
