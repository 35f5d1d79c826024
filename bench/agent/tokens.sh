#!/usr/bin/env bash
# What the agent sends: tokens of the first model request, input tokens over a scripted session,
# and the share of each request that is a prefix of the next (what a provider's prompt cache can
# reuse), for the full profile (128k window) and the lean one (4096 tokens). See
# server/agent/benches/agent_tokens.rs.
#
#   bench/agent/tokens.sh [--turns N] [--profile full|lean] [--source DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --source) args+=("--source" "$(cd "$2" && pwd)"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
exec cargo bench -p lode-agent --bench agent_tokens -- "${args[@]}"
