//! The compact form in which the catalog stores a file's references.
//!
//! A file refers to the same few names from the same few scopes over and over, so each name and
//! each scope chain is written once, and each reference is a handful of varints:
//!
//! ```text
//! version (1)
//! strings:  count, then (length, UTF-8 bytes) each    -- names and scope labels
//! scopes:   count, then (label count, string index...) each; scope 0 is the empty chain
//! refs:     count, then (name index, kind, line delta, column, scope index) each, in source order
//! ```
//!
//! Unsigned LEB128 varints throughout. Decoding borrows the strings from the record.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use lode_syntax::{RefKind, Reference};

const VERSION: u8 = 1;

/// A file's references, encoded, with how often each name occurs.
pub struct EncodedRefs<'a> {
    pub data: Vec<u8>,
    names: Vec<(usize, u32)>,
    strings: Vec<&'a str>,
}

impl EncodedRefs<'_> {
    /// Each distinct referenced name with its number of references, in first-use order.
    pub fn name_counts(&self) -> impl Iterator<Item = (&str, u32)> {
        self.names
            .iter()
            .map(|&(index, count)| (self.strings[index], count))
    }
}

/// Encodes references in the order given (source order, as the tags extractor returns them).
pub fn encode(references: &[Reference]) -> EncodedRefs<'_> {
    let mut strings: Vec<&str> = Vec::new();
    let mut string_ids: HashMap<&str, usize, FxBuildHasher> = HashMap::default();
    let mut intern = |text, strings: &mut Vec<_>| -> usize {
        *string_ids.entry(text).or_insert_with(|| {
            strings.push(text);
            strings.len() - 1
        })
    };
    let mut scopes: Vec<Vec<usize>> = vec![Vec::new()];
    let mut scope_ids: HashMap<&[String], usize, FxBuildHasher> = HashMap::default();
    scope_ids.insert(&[], 0);
    let mut name_counts: HashMap<usize, usize, FxBuildHasher> = HashMap::default();
    let mut names: Vec<(usize, u32)> = Vec::new();
    let mut rows: Vec<(usize, RefKind, u32, u32, usize)> = Vec::with_capacity(references.len());
    for reference in references {
        let name = intern(reference.name.as_str(), &mut strings);
        match name_counts.get(&name) {
            Some(&at) => names[at].1 += 1,
            None => {
                name_counts.insert(name, names.len());
                names.push((name, 1));
            }
        }
        let scope = match scope_ids.get(reference.scope.as_slice()) {
            Some(&id) => id,
            None => {
                let labels = reference
                    .scope
                    .iter()
                    .map(|label| intern(label.as_str(), &mut strings))
                    .collect();
                scopes.push(labels);
                scope_ids.insert(&reference.scope, scopes.len() - 1);
                scopes.len() - 1
            }
        };
        rows.push((
            name,
            reference.kind,
            reference.line,
            reference.column,
            scope,
        ));
    }

    let mut data = Vec::with_capacity(16 + references.len() * 6);
    data.push(VERSION);
    put(&mut data, strings.len() as u64);
    for text in &strings {
        put(&mut data, text.len() as u64);
        data.extend_from_slice(text.as_bytes());
    }
    put(&mut data, scopes.len() as u64);
    for labels in &scopes {
        put(&mut data, labels.len() as u64);
        for &label in labels {
            put(&mut data, label as u64);
        }
    }
    put(&mut data, rows.len() as u64);
    let mut previous_line = 0u32;
    for (name, kind, line, column, scope) in rows {
        put(&mut data, name as u64);
        data.push(kind_code(kind));
        // Source order: lines never decrease.
        put(&mut data, u64::from(line.saturating_sub(previous_line)));
        previous_line = line;
        put(&mut data, u64::from(column));
        put(&mut data, scope as u64);
    }
    EncodedRefs {
        data,
        names,
        strings,
    }
}

/// One decoded reference; `name` and `scope` index into its [`DecodedRefs`].
#[derive(Clone, Copy, Debug)]
pub struct DecodedRef {
    pub name: usize,
    pub kind: RefKind,
    pub line: u32,
    pub column: u32,
    pub scope: usize,
}

/// A decoded record.
#[derive(Debug)]
pub struct DecodedRefs {
    strings: Vec<String>,
    scopes: Vec<Vec<String>>,
    pub refs: Vec<DecodedRef>,
}

impl DecodedRefs {
    /// The references to `name`, in source order.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a DecodedRef> + 'a {
        let wanted = self.strings.iter().position(|s| s == name);
        self.refs
            .iter()
            .filter(move |reference| Some(reference.name) == wanted)
    }

    /// The name at a string index.
    #[cfg(test)]
    fn name(&self, index: usize) -> &str {
        &self.strings[index]
    }

    /// The labels of a scope chain, outermost first.
    pub fn scope(&self, index: usize) -> &[String] {
        &self.scopes[index]
    }
}

/// Decodes a record written by [`encode`]; an error names what is malformed.
pub fn decode(data: &[u8]) -> Result<DecodedRefs, String> {
    let mut reader = Reader { data, at: 0 };
    let version = reader.byte()?;
    if version != VERSION {
        return Err(format!("unknown reference record version {version}"));
    }
    let string_count = reader.count()?;
    let mut strings = Vec::with_capacity(string_count);
    for _ in 0..string_count {
        let length = reader.count()?;
        let bytes = reader.take(length)?;
        let text = std::str::from_utf8(bytes).map_err(|_| "a name is not UTF-8".to_string())?;
        strings.push(text.to_string());
    }
    let scope_count = reader.count()?;
    let mut scopes = Vec::with_capacity(scope_count);
    for _ in 0..scope_count {
        let labels = reader.count()?;
        let mut scope = Vec::with_capacity(labels);
        for _ in 0..labels {
            scope.push(
                strings
                    .get(reader.count()?)
                    .ok_or("bad label index")?
                    .clone(),
            );
        }
        scopes.push(scope);
    }
    let ref_count = reader.count()?;
    let mut refs = Vec::with_capacity(ref_count);
    let mut line = 0u32;
    for _ in 0..ref_count {
        let name = reader.count()?;
        if name >= strings.len() {
            return Err("bad name index".into());
        }
        let kind = kind_from_code(reader.byte()?).ok_or("bad reference kind")?;
        line = line
            .checked_add(u32::try_from(reader.varint()?).map_err(|_| "bad line")?)
            .ok_or("bad line")?;
        let column = u32::try_from(reader.varint()?).map_err(|_| "bad column")?;
        let scope = reader.count()?;
        if scope >= scopes.len() {
            return Err("bad scope index".into());
        }
        refs.push(DecodedRef {
            name,
            kind,
            line,
            column,
            scope,
        });
    }
    if reader.at != data.len() {
        return Err("trailing bytes after the references".into());
    }
    Ok(DecodedRefs {
        strings,
        scopes,
        refs,
    })
}

fn kind_code(kind: RefKind) -> u8 {
    RefKind::ALL
        .iter()
        .position(|&k| k == kind)
        .map_or(u8::MAX, |at| at as u8)
}

fn kind_from_code(code: u8) -> Option<RefKind> {
    RefKind::ALL.get(usize::from(code)).copied()
}

fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.data.get(self.at).ok_or("record ends early")?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long".into())
    }

    /// A varint used as a length or index: bounded by the record's size, so a damaged record
    /// cannot ask for a huge allocation.
    fn count(&mut self) -> Result<usize, String> {
        let value = self.varint()?;
        usize::try_from(value)
            .ok()
            .filter(|&n| n <= self.data.len())
            .ok_or_else(|| "a count is larger than the record".to_string())
    }

    fn take(&mut self, length: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(length).ok_or("record ends early")?;
        let bytes = self.data.get(self.at..end).ok_or("record ends early")?;
        self.at = end;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str, kind: RefKind, line: u32, column: u32, scope: &[&str]) -> Reference {
        Reference {
            name: name.to_string(),
            kind,
            line,
            column,
            scope: scope.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn round_trips_names_kinds_positions_and_scopes() {
        let references = vec![
            reference("open", RefKind::Call, 3, 9, &[]),
            reference("Store", RefKind::Type, 3, 20, &["store", "impl Store"]),
            reference(
                "open",
                RefKind::MethodCall,
                7,
                13,
                &["store", "impl Store", "open"],
            ),
            reference("println", RefKind::Macro, 120, 5, &["store", "impl Store"]),
            reference("é", RefKind::Import, 400, 1, &["é"]),
        ];
        let encoded = encode(&references);
        let counts: Vec<(&str, u32)> = encoded.name_counts().collect();
        assert_eq!(
            counts,
            [("open", 2), ("Store", 1), ("println", 1), ("é", 1)]
        );
        let decoded = decode(&encoded.data).unwrap();
        let back: Vec<Reference> = decoded
            .refs
            .iter()
            .map(|r| Reference {
                name: decoded.name(r.name).to_string(),
                kind: r.kind,
                line: r.line,
                column: r.column,
                scope: decoded.scope(r.scope).to_vec(),
            })
            .collect();
        assert_eq!(back, references);
        let lines: Vec<u32> = decoded.named("open").map(|r| r.line).collect();
        assert_eq!(lines, [3, 7]);
        assert_eq!(decoded.named("missing").count(), 0);
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let references = [reference("open", RefKind::Call, 3, 9, &["a"])];
        let encoded = encode(&references);
        for cut in 0..encoded.data.len() {
            assert!(decode(&encoded.data[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = encoded.data.clone();
        trailing.push(0);
        assert!(decode(&trailing).is_err());
        let mut bad_version = encoded.data.clone();
        bad_version[0] = 9;
        assert!(decode(&bad_version).unwrap_err().contains("version"));
        assert!(
            decode(&[
                1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
            ])
            .is_err()
        );
        assert_eq!(decode(&encode(&[]).data).unwrap().refs.len(), 0);
    }
}
