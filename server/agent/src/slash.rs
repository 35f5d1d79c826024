//! Commands lode answers itself when a prompt starts with `/name`, without asking the model.

/// `(name, description, input hint)` of every command, in the order `/help` lists them.
pub const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    ("help", "List lode's commands", None),
    (
        "compact",
        "Summarise older turns to free context (the history you see stays whole)",
        None,
    ),
    (
        "clear",
        "Forget the conversation for the model (the stored history stays)",
        None,
    ),
    (
        "mode",
        "Show or switch the mode: ask (read-only), code, architect (plans, no edits)",
        Some("ask | code | architect"),
    ),
    (
        "model",
        "Show or switch the model (a configured provider name)",
        Some("provider name"),
    ),
    (
        "map",
        "Show the repo map, optionally focused on files or identifiers",
        Some("[file or identifier ...]"),
    ),
    ("search", "Search the code index", Some("query")),
    (
        "remember",
        "Save a note to long-term memory in your own words (recalled as yours, trusted)",
        Some("text"),
    ),
    ("sessions", "List stored sessions of this workspace", None),
];

/// A parsed `/command rest` line, when `text` is one of lode's commands.
pub fn parse(text: &str) -> Option<(&'static str, String)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, argument) = match rest.split_once(char::is_whitespace) {
        Some((name, argument)) => (name, argument.trim().to_owned()),
        None => (rest.trim(), String::new()),
    };
    COMMANDS
        .iter()
        .find(|(candidate, _, _)| *candidate == name)
        .map(|(candidate, _, _)| (*candidate, argument))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_commands_parse_with_their_argument() {
        assert_eq!(parse("/mode ask"), Some(("mode", "ask".to_owned())));
        assert_eq!(parse("  /help"), Some(("help", String::new())));
        assert_eq!(
            parse("/search  chunk splitting "),
            Some(("search", "chunk splitting".to_owned()))
        );
    }

    #[test]
    fn other_text_is_a_prompt() {
        assert_eq!(parse("/usr/bin is where?"), None);
        assert_eq!(parse("please /help me"), None);
        assert_eq!(parse("/unknown"), None);
    }
}
