//! Doom-loop detection: a model that makes the same tool call and gets the same result three
//! times in one turn is stuck, and saying so beats burning the iteration budget.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

/// How many identical (call, result) pairs make a loop.
pub const REPEATS_THAT_MAKE_A_LOOP: usize = 3;

/// Counts identical tool calls with identical results within one turn.
#[derive(Debug, Default)]
pub struct DoomLoopDetector {
    seen: HashMap<u64, usize>,
}

impl DoomLoopDetector {
    /// Records one finished call and answers whether it has now repeated often enough to be a loop.
    pub fn record(&mut self, tool: &str, arguments: &serde_json::Value, result: &str) -> bool {
        // serde_json's maps are ordered by key, so equal arguments serialise equally.
        let key = format!("{tool}\u{0}{arguments}\u{0}{result}");
        let count = self.seen.entry(xxh3_64(key.as_bytes())).or_insert(0);
        *count += 1;
        *count >= REPEATS_THAT_MAKE_A_LOOP
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_third_identical_call_with_the_same_result_is_a_loop() {
        let mut detector = DoomLoopDetector::default();
        let args = json!({"path": "a.rs"});
        assert!(!detector.record("read_file", &args, "same"));
        assert!(!detector.record("read_file", &args, "same"));
        assert!(detector.record("read_file", &args, "same"));
    }

    #[test]
    fn a_changed_result_or_argument_is_progress() {
        let mut detector = DoomLoopDetector::default();
        assert!(!detector.record("run_command", &json!({"command": "cargo test"}), "1 failed"));
        assert!(!detector.record("run_command", &json!({"command": "cargo test"}), "2 failed"));
        assert!(!detector.record("run_command", &json!({"command": "cargo test"}), "1 failed"));
        assert!(!detector.record(
            "run_command",
            &json!({"command": "cargo check"}),
            "1 failed"
        ));
    }
}
