//! The secret formats, as data compiled into the binary: gitleaks' default rule set
//! (`rules/gitleaks.toml`, MIT, unchanged) and lode's own (`rules/lode.toml`, each rule with its
//! test cases). Parsed on first use; each rule's regex is compiled the first time its keywords
//! appear in a text.

use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;
use regex::bytes::{Regex as BytesRegex, RegexBuilder};
use serde::Deserialize;

/// gitleaks 8.30.1's default configuration, as shipped in its binary.
pub const GITLEAKS_TOML: &str = include_str!("../rules/gitleaks.toml");
/// lode's own rules and their examples.
pub const LODE_TOML: &str = include_str!("../rules/lode.toml");

/// The compiled size a rule may reach (the default is 10 MiB; gitleaks' largest are far below).
const SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// Where a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Gitleaks,
    Lode,
}

/// When a rule runs: lode's key formats first, then gitleaks' rules, then the assignments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Keys,
    Gitleaks,
    Assignments,
}

/// Which text an allowlist's regexes look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RegexTarget {
    #[default]
    Secret,
    Match,
    Line,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
enum Condition {
    #[default]
    Or,
    And,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowlistData {
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
    #[serde(default)]
    regex_target: RegexTarget,
    #[serde(default)]
    condition: Condition,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GitleaksRule {
    id: String,
    description: String,
    regex: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    entropy: Option<f64>,
    secret_group: Option<usize>,
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistData>,
}

#[derive(Debug, Deserialize)]
struct GitleaksConfig {
    allowlist: AllowlistData,
    rules: Vec<GitleaksRule>,
}

/// One test case of a lode rule: `secret` must be gone from `text` once redacted.
#[derive(Debug, Clone, Deserialize)]
pub struct Example {
    pub text: String,
    pub secret: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LodeRule {
    id: String,
    description: String,
    regex: String,
    #[serde(default)]
    keywords: Vec<String>,
    stage: Stage,
    #[serde(default)]
    examples: Vec<Example>,
    #[serde(default)]
    clean: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LodeConfig {
    rules: Vec<LodeRule>,
}

/// An allowlist: a finding it matches is not a secret.
#[derive(Debug)]
pub(crate) struct Allowlist {
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
    target: RegexTarget,
    /// `AND` with conditions lode cannot check (paths, commits): never applies.
    inert: bool,
}

impl Allowlist {
    fn from_data(data: &AllowlistData) -> Allowlist {
        Allowlist {
            // An allowlist regex Rust cannot compile is dropped: it only ever narrows.
            regexes: data
                .regexes
                .iter()
                .filter_map(|source| Regex::new(source).ok())
                .collect(),
            stopwords: data
                .stopwords
                .iter()
                .map(|word| word.to_ascii_lowercase())
                .collect(),
            target: data.regex_target,
            inert: data.condition == Condition::And
                && (!data.paths.is_empty() || !data.commits.is_empty()),
        }
    }

    /// Whether the finding (`secret`, inside `whole`, on `line`) is allowed.
    pub(crate) fn allows(&self, secret: &str, whole: &str, line: &str) -> bool {
        if self.inert {
            return false;
        }
        let target = match self.target {
            RegexTarget::Secret => secret,
            RegexTarget::Match => whole,
            RegexTarget::Line => line,
        };
        let lower = secret.to_ascii_lowercase();
        self.regexes.iter().any(|regex| regex.is_match(target))
            || self.stopwords.iter().any(|word| lower.contains(word))
    }
}

/// One secret format.
#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub description: String,
    pub source: Source,
    pub stage: Stage,
    source_regex: String,
    regex: OnceLock<Option<BytesRegex>>,
    /// Lower case.
    pub keywords: Vec<String>,
    pub(crate) entropy: Option<f64>,
    pub(crate) secret_group: Option<usize>,
    pub(crate) allowlists: Vec<Allowlist>,
    pub examples: Vec<Example>,
    pub clean: Vec<String>,
}

impl Rule {
    /// The compiled regex (`None` when Rust's regex cannot compile it: the test suite checks
    /// that every rule compiles). Compiled over bytes with Unicode classes off, as gitleaks'
    /// Go regexes are (`\w`, `\s` and `(?i)` are ASCII), which also keeps them small.
    pub fn regex(&self) -> Option<&BytesRegex> {
        self.regex
            .get_or_init(|| {
                RegexBuilder::new(&self.source_regex)
                    .unicode(false)
                    .size_limit(SIZE_LIMIT)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    pub fn source_regex(&self) -> &str {
        &self.source_regex
    }
}

/// Every rule, in the order they are applied, and the keyword index.
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// gitleaks' global allowlist (applies to its rules).
    pub(crate) global: Allowlist,
    /// Rule ids gitleaks has that lode does not use, with the reason.
    pub skipped: Vec<(String, &'static str)>,
    keywords: Option<AhoCorasick>,
    /// For each keyword pattern of `keywords`, the rules that name it.
    keyword_rules: Vec<Vec<usize>>,
}

impl RuleSet {
    /// The rules whose keywords occur in `text` (and those without keywords), in order.
    pub fn candidates(&self, text: &str) -> Vec<usize> {
        let Some(keywords) = &self.keywords else {
            return (0..self.rules.len()).collect();
        };
        let mut wanted: Vec<bool> = self
            .rules
            .iter()
            .map(|rule| rule.keywords.is_empty())
            .collect();
        for found in keywords.find_overlapping_iter(text) {
            for &rule in &self.keyword_rules[found.pattern().as_usize()] {
                wanted[rule] = true;
            }
        }
        (0..self.rules.len()).filter(|&i| wanted[i]).collect()
    }
}

/// The rules, loaded once.
pub fn rule_set() -> &'static RuleSet {
    static RULES: LazyLock<RuleSet> = LazyLock::new(load);
    &RULES
}

fn load() -> RuleSet {
    // Both files are compiled in and their parsing is tested: a failure is a build defect, and
    // redaction then falls back to the rules in code (the name rule, base64) alone.
    let gitleaks: Option<GitleaksConfig> = toml::from_str(GITLEAKS_TOML).ok();
    let lode: Option<LodeConfig> = toml::from_str(LODE_TOML).ok();
    let mut rules = Vec::new();
    let mut skipped = Vec::new();
    for rule in lode.map(|config| config.rules).unwrap_or_default() {
        rules.push(Rule {
            id: rule.id,
            description: rule.description,
            source: Source::Lode,
            stage: rule.stage,
            source_regex: rule.regex,
            regex: OnceLock::new(),
            keywords: lower(rule.keywords),
            entropy: None,
            secret_group: None,
            allowlists: Vec::new(),
            examples: rule.examples,
            clean: rule.clean,
        });
    }
    let (global, gitleaks_rules) = match gitleaks {
        Some(config) => (Allowlist::from_data(&config.allowlist), config.rules),
        None => (Allowlist::from_data(&AllowlistData::default()), Vec::new()),
    };
    for rule in gitleaks_rules {
        let Some(regex) = rule.regex else {
            skipped.push((rule.id, "matches file names only, and lode scans text"));
            continue;
        };
        if rule.path.is_some() {
            skipped.push((
                rule.id,
                "applies to files of one kind (by path), and lode scans text without a path",
            ));
            continue;
        }
        rules.push(Rule {
            id: rule.id,
            description: rule.description,
            source: Source::Gitleaks,
            stage: Stage::Gitleaks,
            source_regex: regex,
            regex: OnceLock::new(),
            keywords: lower(rule.keywords),
            entropy: rule.entropy,
            secret_group: rule.secret_group,
            allowlists: rule.allowlists.iter().map(Allowlist::from_data).collect(),
            examples: Vec::new(),
            clean: Vec::new(),
        });
    }
    rules.sort_by_key(|rule| rule.stage);
    let mut patterns: Vec<String> = Vec::new();
    let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        for keyword in &rule.keywords {
            match patterns.iter().position(|known| known == keyword) {
                Some(at) => keyword_rules[at].push(index),
                None => {
                    patterns.push(keyword.clone());
                    keyword_rules.push(vec![index]);
                }
            }
        }
    }
    // Keywords are short literals; building fails only past the automaton's size limits, far
    // beyond a few hundred words. Without it every rule runs on every text.
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&patterns)
        .ok();
    RuleSet {
        rules,
        global,
        skipped,
        keywords,
        keyword_rules,
    }
}

fn lower(words: Vec<String>) -> Vec<String> {
    words
        .into_iter()
        .map(|word| word.to_ascii_lowercase())
        .filter(|word| !word.is_empty())
        .collect()
}

/// Shannon entropy of `text` in bits per character, as gitleaks computes it.
pub(crate) fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts = std::collections::HashMap::new();
    let mut total = 0usize;
    for ch in text.chars() {
        *counts.entry(ch).or_insert(0usize) += 1;
        total += 1;
    }
    counts
        .values()
        .map(|&count| {
            let p = count as f64 / total as f64;
            -p * p.log2()
        })
        .sum()
}
