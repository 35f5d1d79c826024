//! A language's rules, from `grammars/<dir>/language.toml`: how its files are chunked, which
//! lines lead a definition (doc comments, attributes, decorators), whether indentation scopes
//! its blocks, and whether its top-level items can be re-read on their own.

use std::collections::HashMap;

use serde::Deserialize;

/// The rules of one language. Every field has a default, so a file may name only what its
/// language needs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageRules {
    /// Node kinds that hold members (a class, an impl block, a module, a namespace): they open
    /// at their children once larger than the chunk target, not the maximum, so a class of
    /// small methods is not one chunk.
    pub containers: Vec<String>,
    /// Node kinds whose named field holds the declaration they wrap (`export_statement` →
    /// `declaration`): a wrapped container opens like the bare one. [`LAST_NAMED_CHILD`] as
    /// the field stands for the wrapper's last named child, for wrappers whose declaration has
    /// no field (C++'s `template_declaration`).
    pub wrappers: HashMap<String, String>,
    /// Names called by `call` nodes that are containers (Elixir's `defmodule X do ... end`:
    /// every definition is a call, so containers are told apart by the name they call).
    pub container_calls: Vec<String>,
    /// Node kinds of a container's body besides its `body` field (Kotlin's `class_body`,
    /// Ruby's `body_statement`): the body opens at the target too.
    pub bodies: Vec<String>,
    /// Node kinds, besides comments, that stick to the unit after them (attributes,
    /// decorators, annotations written as siblings of what they annotate).
    pub sticky: Vec<String>,
    /// How lines start that lead a definition: comments, attributes, decorators
    /// (`["//", "/*", "*", "#["]`). Edits by symbol keep them with the definition below.
    pub leading_lines: Vec<String>,
    /// Blocks are scoped by indentation (Python): inserted text is re-indented to the level.
    pub indentation_scoped: bool,
    /// Every top-level item is delimited by braces (or keywords), so one parses the same on
    /// its own as in its file: a keystroke re-reads only the items it touched.
    pub standalone_items: bool,
    /// The documentation of a definition is the first statement of its body (Python's
    /// docstrings, Elixir's `@doc` sits above and is a leading line instead).
    pub docstring_in_body: bool,
}

/// The wrapper "field" that stands for the wrapper's last named child.
pub const LAST_NAMED_CHILD: &str = "*";

impl LanguageRules {
    /// Reads `language.toml` text.
    pub fn parse(text: &str) -> Result<LanguageRules, toml::de::Error> {
        toml::from_str(text)
    }

    /// Whether `kind` is a container node kind.
    pub fn is_container(&self, kind: &str) -> bool {
        self.containers.iter().any(|container| container == kind)
    }

    /// Whether `kind` is one of the language's body kinds besides the `body` field.
    pub fn is_body_kind(&self, kind: &str) -> bool {
        self.bodies.iter().any(|body| body == kind)
    }

    /// The declaration a wrapper node wraps, when `node` is a wrapper.
    pub fn wrapped<'t>(&self, node: tree_sitter::Node<'t>) -> Option<tree_sitter::Node<'t>> {
        let field = self.wrappers.get(node.kind())?;
        if field == LAST_NAMED_CHILD {
            node.named_child(node.named_child_count().checked_sub(1)? as u32)
        } else {
            node.child_by_field_name(field)
        }
    }

    /// Whether `node` is a call of one of the [`container_calls`](Self::container_calls).
    pub fn is_container_call(&self, node: tree_sitter::Node, source: &str) -> bool {
        !self.container_calls.is_empty()
            && node.kind() == "call"
            && node
                .child_by_field_name("target")
                .and_then(|target| source.get(target.byte_range()))
                .is_some_and(|name| self.container_calls.iter().any(|call| call == name))
    }

    /// Whether `kind` is sticky: a comment of any sort, or a listed kind.
    pub fn is_sticky(&self, kind: &str) -> bool {
        kind.contains("comment")
            || kind == "haddock"
            || self.sticky.iter().any(|sticky| sticky == kind)
    }

    /// Whether a source line (indentation trimmed) leads a definition.
    pub fn is_leading_line(&self, line: &str) -> bool {
        let line = line.trim_start();
        self.leading_lines
            .iter()
            .any(|prefix| line.starts_with(prefix.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_refused_and_defaults_fill_the_rest() {
        let rules = LanguageRules::parse("containers = [\"class_body\"]\n").unwrap();
        assert!(rules.is_container("class_body"));
        assert!(!rules.indentation_scoped);
        assert!(rules.is_sticky("line_comment"));
        assert!(LanguageRules::parse("container = []\n").is_err());
    }
}
