//! Argument parsing shared by the tools: model arguments into typed structs, with errors the model
//! can act on, and the blocking-work bridge for index calls.

use serde::de::DeserializeOwned;

use super::{ToolError, ToolErrorCategory};

/// Parses a tool's arguments. Arguments the model sent as a JSON string (some providers do) are
/// parsed from the string.
pub fn parse_args<T: DeserializeOwned>(
    tool: &str,
    arguments: &serde_json::Value,
) -> Result<T, ToolError> {
    let owned;
    let value = match arguments {
        serde_json::Value::String(text) => {
            owned = serde_json::from_str::<serde_json::Value>(text).map_err(|error| {
                invalid(format!(
                    "{tool}: the arguments are not a JSON object ({error})"
                ))
            })?;
            &owned
        }
        serde_json::Value::Null => {
            owned = serde_json::Value::Object(Default::default());
            &owned
        }
        other => other,
    };
    if !value.is_object() {
        return Err(invalid(format!(
            "{tool}: the arguments must be a JSON object"
        )));
    }
    T::deserialize(value).map_err(|error| invalid(format!("{tool}: {error}")))
}

/// An invalid-arguments error (retryable: the model can correct its call).
pub fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCategory::InvalidArguments, message, true)
}

/// A failure of the tool itself.
pub fn failed(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCategory::Failed, message, false)
}

/// A string field of possibly malformed arguments, for presentation and permission targets.
pub fn peek_str<'a>(arguments: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    arguments.get(field).and_then(serde_json::Value::as_str)
}

/// Runs blocking work (index queries, which take locks and read files) off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| failed(format!("the tool's worker stopped: {error}")))?
}
