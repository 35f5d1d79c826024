#!/usr/bin/env bash
# The agent's own overhead per turn (everything except waiting for the model), as milliseconds
# and as a ratio of the scripted LLM server's latency. See server/agent/benches/agent_overhead.rs.
#
#   bench/agent/overhead.sh [--turns N] [--delay-ms MS] [--source DIR]
#
# Runs twice: once with no server delay (pure overhead), once with --delay-ms (default 200)
# before each response's first byte. --source is the workspace copied for the agent (default
# fixtures/agent/calculator; e.g. --source server/index for a mid-size Rust crate).
set -euo pipefail
cd "$(dirname "$0")/../.."
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --source) args+=("--source" "$(cd "$2" && pwd)"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
exec cargo bench -p lode-agent --bench agent_overhead -- "${args[@]}"
