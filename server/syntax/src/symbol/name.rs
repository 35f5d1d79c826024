//! Parsing a symbol's name as a model or a user writes it: `FILE:NAME/PATH`
//! (`src/shapes.py:Circle/area`, `/Circle/area` for a path from the top of the file) or
//! `FILE:LINE:COLUMN` (1-based). Nothing here reads the file.

use std::fmt;

use super::SymbolError;

/// The longest symbol name accepted, in bytes. Real names are a path and a few identifiers;
/// anything longer is a mistake or an attack, refused before any work.
pub const MAX_SYMBOL_NAME_BYTES: usize = 4096;

/// A parsed symbol name: the file it is in and what names it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolName {
    /// The file as written (relative to the workspace, or absolute); the caller confines it.
    pub file: String,
    pub target: SymbolTarget,
}

/// What names the symbol inside its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymbolTarget {
    /// Names from the outermost definition inward (`["Circle", "area"]`). `absolute` (written
    /// with a leading `/`) requires the whole path from the top of the file; otherwise the
    /// path may also be the end of a longer one when only one definition has it.
    Path {
        segments: Vec<String>,
        absolute: bool,
    },
    /// A 1-based line and column (in characters) inside the definition.
    Position { line: u32, column: u32 },
}

impl fmt::Display for SymbolTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolTarget::Path { segments, absolute } => {
                if *absolute {
                    f.write_str("/")?;
                }
                f.write_str(&segments.join("/"))
            }
            SymbolTarget::Position { line, column } => write!(f, "{line}:{column}"),
        }
    }
}

impl fmt::Display for SymbolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.target)
    }
}

impl SymbolName {
    /// Parses `FILE:NAME/PATH` or `FILE:LINE:COLUMN`. The file is everything before the first
    /// `:` (file names with a colon cannot be named this way).
    pub fn parse(input: &str) -> Result<SymbolName, SymbolError> {
        if input.len() > MAX_SYMBOL_NAME_BYTES {
            return Err(SymbolError::TooLong {
                length: input.len(),
            });
        }
        let malformed = |reason: &str| SymbolError::Malformed {
            given: input.to_owned(),
            reason: reason.to_owned(),
        };
        if input.chars().any(char::is_control) {
            return Err(malformed("it contains a control character (a newline?)"));
        }
        let input_trimmed = input.trim();
        let Some((file, rest)) = input_trimmed.split_once(':') else {
            return Err(malformed("there is no `:` between the file and the symbol"));
        };
        let file = file.trim();
        let rest = rest.trim();
        if file.is_empty() {
            return Err(malformed("it names no file before the `:`"));
        }
        if rest.is_empty() {
            return Err(malformed("it names no symbol after the file"));
        }
        if let Some((line, column)) = rest.split_once(':') {
            let number = |text: &str| -> Option<u32> {
                let text = text.trim();
                (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| text.parse::<u32>().ok())
                    .flatten()
            };
            return match (number(line), number(column)) {
                (Some(0), _) | (_, Some(0)) => {
                    Err(malformed("lines and columns are 1-based; 0 is not one"))
                }
                (Some(line), Some(column)) => Ok(SymbolName {
                    file: file.to_owned(),
                    target: SymbolTarget::Position { line, column },
                }),
                _ if rest.contains("::") => Err(malformed(
                    "names in a path are separated by `/`, not `::` (src/lib.rs:Registry/greet_all)",
                )),
                _ => Err(malformed(
                    "after the file comes either NAME/PATH or LINE:COLUMN (two numbers), \
                     and only one more `:`",
                )),
            };
        }
        if rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed(
                "a position needs a line and a column: FILE:LINE:COLUMN",
            ));
        }
        let absolute = rest.starts_with('/');
        let path = rest.strip_prefix('/').unwrap_or(rest);
        let segments: Vec<String> = path.split('/').map(|part| part.trim().to_owned()).collect();
        if segments.iter().any(String::is_empty) {
            return Err(malformed(
                "a name in the path is empty (a doubled or trailing `/`)",
            ));
        }
        if segments.len() == 1 && segments[0].contains('.') && !segments[0].contains(' ') {
            return Err(malformed(
                "names in a path are separated by `/`, not `.` (src/shapes.py:Circle/area)",
            ));
        }
        Ok(SymbolName {
            file: file.to_owned(),
            target: SymbolTarget::Path { segments, absolute },
        })
    }

    /// The file part of a possibly malformed name (what a permission check judges before the
    /// name is parsed): everything before the first `:`, or the whole input without one.
    pub fn file_part(input: &str) -> &str {
        let input = input.trim();
        input.split_once(':').map_or(input, |(file, _)| file.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segments: &[&str], absolute: bool) -> SymbolTarget {
        SymbolTarget::Path {
            segments: segments.iter().map(|s| (*s).to_owned()).collect(),
            absolute,
        }
    }

    #[test]
    fn names_and_positions_parse() {
        let name = SymbolName::parse("src/shapes.py:Circle/area").unwrap();
        assert_eq!(name.file, "src/shapes.py");
        assert_eq!(name.target, path(&["Circle", "area"], false));
        assert_eq!(name.to_string(), "src/shapes.py:Circle/area");
        let name = SymbolName::parse("src/lib.rs:/add").unwrap();
        assert_eq!(name.target, path(&["add"], true));
        let name = SymbolName::parse("src/lib.rs:12:5").unwrap();
        assert_eq!(
            name.target,
            SymbolTarget::Position {
                line: 12,
                column: 5
            }
        );
        let name = SymbolName::parse("src/lib.rs:impl Greeter for Registry/greet").unwrap();
        assert_eq!(
            name.target,
            path(&["impl Greeter for Registry", "greet"], false)
        );
    }

    #[test]
    fn malformed_names_say_why() {
        for (input, needle) in [
            ("src/lib.rs:", "names no symbol"),
            (":foo", "names no file"),
            ("a:b:c:d", "only one more"),
            ("src/lib.rs", "no `:`"),
            ("src/lib.rs:Registry::greet", "not `::`"),
            ("src/shapes.py:Circle.area", "not `.`"),
            ("src/lib.rs:a//b", "empty"),
            ("src/lib.rs:a/", "empty"),
            ("src/lib.rs:0:1", "1-based"),
            ("src/lib.rs:12", "line and a column"),
            ("src/lib.rs:a\nb", "control"),
            ("src/lib.rs:1:99999999999", "two numbers"),
        ] {
            let error = SymbolName::parse(input).unwrap_err().to_string();
            assert!(error.contains(needle), "{input:?}: {error}");
            assert!(error.contains("FILE:NAME/PATH"), "{input:?}: {error}");
        }
        let huge = format!("src/lib.rs:{}", "a".repeat(70 * 1024));
        let error = SymbolName::parse(&huge).unwrap_err().to_string();
        assert!(error.contains("at most 4096"), "{error}");
        assert!(error.len() < 300, "the error does not echo the input");
    }

    #[test]
    fn the_file_part_of_anything() {
        assert_eq!(SymbolName::file_part("src/a.rs:x/y"), "src/a.rs");
        assert_eq!(SymbolName::file_part(" ../o.rs:1:2"), "../o.rs");
        assert_eq!(SymbolName::file_part("nothing"), "nothing");
    }
}
