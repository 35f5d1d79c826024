#!/usr/bin/env python3
"""ACP overhead of `lode acp`, measured against the scripted LLM server in the same run.

1. First chunk: for N prompts, the time from writing `session/prompt` to reading the first
   `agent_message_chunk`, next to the time from POSTing the same kind of request straight to the
   scripted server to reading its first content delta. Reported: both medians, their difference
   (what lode adds: the turn, context assembly, the ACP mapping) and their ratio.
2. Idle sessions: resident memory of the `lode acp` process before and after opening M sessions
   with `session/new`, per session.

Usage: bench/acp.py [--lode target/release/lode] [--prompts 30] [--sessions 200]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_llm(lode):
    server = subprocess.Popen(
        [lode, "llm-script", "--script", os.path.join(REPO, "fixtures/llm/acp_bench.json")],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline().strip()
    assert line.startswith("listening on "), line
    return server, line[len("listening on "):]


def direct_first_token(base_url):
    """Seconds from POST to the first content delta of a streamed chat completion."""
    body = json.dumps({
        "model": "bench",
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }).encode()
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions", data=body, headers={"content-type": "application/json"}
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request) as response:
        first = None
        for raw in response:
            line = raw.decode().strip()
            if first is None and line.startswith("data:") and '"content"' in line:
                first = time.perf_counter() - start
        return first


class Acp:
    def __init__(self, lode, root):
        self.process = subprocess.Popen(
            [lode, "--root", root, "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self.next_id

    def read(self):
        return json.loads(self.process.stdout.readline())

    def call(self, method, params):
        request_id = self.send(method, params)
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lode", default=os.path.join(REPO, "target/release/lode"))
    parser.add_argument("--prompts", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()

    server, url = start_llm(args.lode)
    try:
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, ".lode"))
            os.makedirs(os.path.join(root, ".git"))
            os.makedirs(os.path.join(root, "src"))
            with open(os.path.join(root, "src/main.rs"), "w") as source:
                source.write('fn main() {\n    println!("hello");\n}\n')
            with open(os.path.join(root, ".lode/config.toml"), "w") as config:
                config.write(
                    f'[[llm.providers]]\nname = "bench"\nkind = "openai"\n'
                    f'base_url = "{url}/v1"\nmodel = "bench"\n'
                )
            acp = Acp(args.lode, root)
            acp.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = acp.call("session/new", {"cwd": root, "mcpServers": []})["result"]["sessionId"]

            direct = [direct_first_token(url) for _ in range(args.prompts)]
            through_acp = []
            for _ in range(args.prompts):
                start = time.perf_counter()
                request_id = acp.send(
                    "session/prompt",
                    {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]},
                )
                first = None
                while True:
                    message = acp.read()
                    update = message.get("params", {}).get("update", {})
                    if first is None and update.get("sessionUpdate") == "agent_message_chunk":
                        first = time.perf_counter() - start
                    if message.get("id") == request_id and "method" not in message:
                        break
                through_acp.append(first)

            before = acp.rss_kib()
            for _ in range(args.sessions):
                acp.call("session/new", {"cwd": root, "mcpServers": []})
            after = acp.rss_kib()
            acp.close()
    finally:
        server.kill()
        server.wait()

    direct_ms = statistics.median(direct) * 1000
    acp_ms = statistics.median(through_acp) * 1000
    print(f"prompts: {args.prompts}")
    print(f"first token, scripted server direct: median {direct_ms:.2f} ms")
    print(f"first agent_message_chunk via lode acp: median {acp_ms:.2f} ms")
    print(f"added by lode: {acp_ms - direct_ms:.2f} ms; ratio acp/direct: {acp_ms / direct_ms:.1f}x")
    print(f"idle sessions: {args.sessions}; RSS {before} KiB -> {after} KiB; "
          f"{(after - before) / args.sessions:.1f} KiB per session")


if __name__ == "__main__":
    sys.exit(main())
