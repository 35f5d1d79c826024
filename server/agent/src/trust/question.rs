//! The permission question that offers to trust a workspace's settings.

use std::path::Path;

use crate::event::ToolKind;
use crate::host::PermissionRequest;

/// The pseudo tool name of the question; no tool of that name exists, so no rule, remembered
/// answer, skill grant or `--yes-to` pattern was ever written for it.
pub const TRUST_QUESTION_TOOL: &str = "trust_workspace";

/// Most ignored settings listed in the question's title; the rest are in `raw_input`.
const LISTED: usize = 6;

/// The question for a session: what the workspace's `file` would change once trusted.
pub fn trust_request(session_id: &str, file: &Path, ignored: &[String]) -> PermissionRequest {
    PermissionRequest {
        tool_call_id: format!("trust-workspace-{session_id}"),
        tool: TRUST_QUESTION_TOOL.to_owned(),
        title: format!(
            "Trust this workspace's lode settings? {} is not trusted, so lode ignores: {}. \
             Allow always trusts this content (a change asks again); allow once applies it \
             until lode exits.",
            file.display(),
            super::summary(ignored, LISTED)
        ),
        kind: ToolKind::Other,
        raw_input: serde_json::json!({
            "file": file.display().to_string(),
            "ignored": ignored,
        }),
        always_pattern: String::new(),
        offer_network: false,
        // Only the user can trust a workspace: nothing automatic answers this.
        must_ask: true,
        reason: "the workspace ships settings lode applies only once you trust them".to_owned(),
        subjects: vec![file.display().to_string()],
        subject_kind: Default::default(),
    }
}
