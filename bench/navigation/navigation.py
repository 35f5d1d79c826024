#!/usr/bin/env python3
"""Type-resolved navigation (issue 26): lode's answers against the language server's own.

Corpus: a real Python project from a pinned sdist (werkzeug 3.0.6 by default, downloaded with
`pip download --no-deps --no-binary :all:` into bench/corpus/navigation/, gitignored): many
classes share method names (`get`, `pop`, `update`, `to_url`, `close`, ...).

Ground truth: pyright's language server (`pyright-langserver --stdio`, from
target/test-tools or PATH), driven directly as an LSP client. Names: the 50 non-dunder method
names defined in the most classes (at least two); for each, the definition in the first class
(by file and line) is the symbol asked about.

Measured, each from this one invocation:
- precision (and recall) of `textDocument/references` (declaration included) against
  pyright's answer at the same position: the real `lode lsp` with `--navigation-timeout-ms 0`
  (the index, by name: what lode answered before) and with pyright configured as its Python
  server (the navigation service, type-resolved); the names' definitions are taken from the
  package's own src/ first;
- latency of `textDocument/definition` at a call site of each name (its file open, as in an
  editor), after a warm-up round:
  pyright asked directly, `lode lsp` asking pyright, `lode lsp` from its index; and `hover`
  through `lode mcp`'s `hover` tool against pyright's own `textDocument/hover`, when
  `lode mcp` offers that tool;
- tokens: for 20 navigation questions through `lode mcp` (`references`, `definition`, `hover`
  by symbol), the bytes the tools return against the bytes of the files the answers are in.

Rust (rust-analyzer) is measured only when `rust-analyzer --version` works; it says so when not.

Usage: bench/navigation/run.sh [--names 50] [--questions 20] [--package werkzeug==3.0.6]
Writes bench/out/navigation.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CORPUS = Path(os.environ.get("LODE_BENCH_CORPUS", REPO / "bench" / "corpus")) / "navigation"
OUT = REPO / "bench" / "out"
PATIENCE = 300.0


def uri(path: Path) -> str:
    return "file://" + str(path)


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# ---------------------------------------------------------------------------------------------
# A plain LSP client over stdio (lode lsp or pyright-langserver)
# ---------------------------------------------------------------------------------------------


class Lsp:
    def __init__(self, command, cwd, env, log):
        self.log = open(log, "w")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            cwd=cwd, env=env)
        self.next_id = 0
        self.published = {}
        self.progress_ended = False

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.process.args[0]} closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))

    def handle(self, message):
        method = message.get("method")
        if method is None:
            return
        if "id" in message:
            if method == "workspace/configuration":
                result = [None] * len(message.get("params", {}).get("items", []))
            elif method == "workspace/workspaceFolders":
                result = None
            else:
                result = None
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            self.published[message["params"]["uri"]] = True
        elif method == "$/progress" and message["params"]["value"].get("kind") == "end":
            self.progress_ended = True

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        self.next_id += 1
        wanted = self.next_id
        self.send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == wanted and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
            self.handle(message)

    def timed(self, method, params):
        start = time.perf_counter()
        result = self.request(method, params)
        return (time.perf_counter() - start) * 1000, result

    def wait(self, done, what):
        deadline = time.time() + PATIENCE
        while not done():
            if time.time() > deadline:
                raise RuntimeError(f"no {what} within {PATIENCE}s")
            self.handle(self.read())

    def initialize(self, root):
        self.request("initialize", {
            "processId": None, "rootUri": uri(root),
            "workspaceFolders": [{"uri": uri(root), "name": root.name}],
            "capabilities": {
                "window": {"workDoneProgress": True},
                "workspace": {"configuration": True, "workspaceFolders": True},
                "textDocument": {"publishDiagnostics": {"versionSupport": True}},
            },
        })
        self.notify("initialized", {})

    def open(self, path):
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(path), "languageId": "python", "version": 1,
            "text": path.read_text(encoding="utf-8", errors="replace")}})

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()
        self.log.close()


class Mcp:
    """`lode mcp` over stdio (newline-delimited JSON-RPC)."""

    def __init__(self, command, cwd, env, log):
        self.log = open(log, "w")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            cwd=cwd, env=env)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        wanted = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        while True:
            raw = self.process.stdout.readline()
            if not raw:
                raise RuntimeError("lode mcp closed its output")
            message = json.loads(raw)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.process.stdin.write(json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        self.process.stdin.flush()

    def tools(self):
        return [tool["name"] for tool in self.request("tools/list", {})["tools"]]

    def call(self, name, arguments):
        start = time.perf_counter()
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        elapsed = (time.perf_counter() - start) * 1000
        text = "".join(part.get("text", "") for part in result.get("content", []))
        return elapsed, text, result.get("isError", False)

    def close(self):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


# ---------------------------------------------------------------------------------------------
# Corpus and questions
# ---------------------------------------------------------------------------------------------


def corpus(package: str) -> Path:
    name, _, version = package.partition("==")
    CORPUS.mkdir(parents=True, exist_ok=True)
    root = CORPUS / f"{name}-{version}"
    if root.is_dir():
        return root
    archives = list(CORPUS.glob(f"{name}-{version}.tar.gz"))
    if not archives:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", package, "-d", str(CORPUS)], check=True)
        archives = list(CORPUS.glob(f"{name}-{version}.tar.gz"))
    with tarfile.open(archives[0]) as archive:
        try:
            archive.extractall(CORPUS, filter="data")
        except TypeError:  # Python before 3.11.4: no filters
            archive.extractall(CORPUS)
    return root


def method_targets(root: Path, count: int):
    """The `count` non-dunder method names defined in the most classes (at least two), each
    with the position of its first definition's name (by file, line): 0-based line, UTF-16."""
    defined = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and not item.name.startswith("__"):
                    defined[item.name].append((path, item.lineno, node.name))
    several = [(name, places) for name, places in defined.items()
               if len({(p, c) for p, _, c in places}) >= 2]
    several.sort(key=lambda entry: (-len({(p, c) for p, _, c in entry[1]}), entry[0]))
    targets = []
    for name, places in several[:count]:
        # The package's own code first (src/, not its tests or examples).
        path, line, cls = sorted(
            places, key=lambda p: ("/src/" not in str(p[0]), str(p[0]), p[1]))[0]
        text = path.read_text(encoding="utf-8").splitlines()[line - 1]
        match = re.search(r"\bdef\s+(" + re.escape(name) + r")\b", text)
        if not match:
            continue
        targets.append({
            "name": name, "class": cls, "classes": len({(p, c) for p, _, c in places}),
            "path": path, "line": line - 1, "character": utf16(text[:match.start(1)]),
        })
    return targets


def place(location, root: Path):
    path = location["uri"].removeprefix("file://")
    try:
        path = str(Path(path).relative_to(root))
    except ValueError:
        pass
    start = location["range"]["start"]
    return (path, start["line"], start["character"])


def references_params(target):
    return {"textDocument": {"uri": uri(target["path"])},
            "position": {"line": target["line"], "character": target["character"]},
            "context": {"includeDeclaration": True}}


def position_params(path, line, character):
    return {"textDocument": {"uri": uri(path)},
            "position": {"line": line, "character": character}}


def precision(found, truth):
    hit = len(found & truth)
    return (hit / len(found) if found else 1.0), (hit / len(truth) if truth else 1.0), hit


def summary(values):
    ordered = sorted(values)
    if not ordered:
        return {}
    return {"median_ms": round(statistics.median(ordered), 2),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * (len(ordered) - 1) + 0.5))], 2),
            "n": len(ordered)}


# ---------------------------------------------------------------------------------------------


def find_pyright():
    tools = REPO / "target" / "test-tools" / "node_modules" / ".bin" / "pyright-langserver"
    if tools.is_file():
        return tools
    found = shutil.which("pyright-langserver")
    return Path(found) if found else None


def find_lode():
    if os.environ.get("LODE_BIN"):
        return Path(os.environ["LODE_BIN"])
    for build in ("release", "debug"):
        candidate = REPO / "target" / build / "lode"
        if candidate.is_file():
            help_text = subprocess.run([candidate, "lsp", "--help"], capture_output=True,
                                       text=True).stdout
            if "--navigation-timeout-ms" in help_text:
                return candidate
    sys.exit("no lode binary with `lsp --navigation-timeout-ms`: cargo build -p lode")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="werkzeug==3.0.6")
    parser.add_argument("--names", type=int, default=50)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--index-lode", type=Path,
                        help="another lode binary for the index-only run (e.g. a release build "
                             "from before `--navigation-timeout-ms`, which answers by name only)")
    args = parser.parse_args()

    lode = find_lode()
    pyright = find_pyright()
    if pyright is None:
        sys.exit("pyright-langserver not found: run scripts/install-test-tools.sh")
    root = corpus(args.package).resolve()
    targets = method_targets(root, args.names)
    work = Path(tempfile.mkdtemp(prefix="lode-nav-bench-"))
    print(f"lode: {lode}{' (index-only run: ' + str(args.index_lode) + ')' if args.index_lode else ''}\npyright: {pyright}\ncorpus: {root} "
          f"({sum(1 for _ in root.rglob('*.py'))} Python files)\n"
          f"names: {len(targets)} method names defined in 2-{max(t['classes'] for t in targets)} "
          f"classes\nlogs: {work}")
    config = work / "config.toml"
    config.write_text(
        "[lsp.diagnostics]\ndefault_servers = false\ncommands = false\n"
        f"servers = {{ python = [{json.dumps(str(pyright))}, \"--stdio\"] }}\n\n"
        f"[sandbox]\nread = [{json.dumps(str(pyright.parent.parent.parent))}]\n")
    env = dict(os.environ, LODE_CONFIG=str(config), LODE_EMBEDDER="none")
    env.pop("LODE_INDEX_DIR", None)
    results = {"lode": str(lode), "corpus": args.package, "names": len(targets)}

    # 1. pyright, directly: the ground truth, and its own latency.
    direct = Lsp([str(pyright), "--stdio"], root, env, work / "pyright.log")
    direct.initialize(root)
    opened = set()

    def ensure_open(client, path):
        if (id(client), path) not in opened:
            client.open(path)
            opened.add((id(client), path))

    first = targets[0]["path"]
    ensure_open(direct, first)
    start = time.perf_counter()
    direct.wait(lambda: uri(first) in direct.published, "pyright diagnostics")
    print(f"pyright loaded the workspace in {time.perf_counter() - start:.1f} s")
    truth = {}
    calls = {}
    for target in targets:
        ensure_open(direct, target["path"])
        found = direct.request("textDocument/references", references_params(target)) or []
        truth[target["name"]] = {place(location, root) for location in found}
        own = (str(target["path"].relative_to(root)), target["line"], target["character"])
        # A call site: the first reference that is not a definition of the name.
        for location in found:
            path = Path(location["uri"].removeprefix("file://"))
            line = location["range"]["start"]["line"]
            text = path.read_text(encoding="utf-8").splitlines()[line]
            if place(location, root) != own and not re.search(
                    r"\bdef\s+" + re.escape(target["name"]) + r"\b", text):
                calls[target["name"]] = (path, line, location["range"]["start"]["character"])
                break
    sites = [(name, *site) for name, site in calls.items()]
    direct_times = {"definition": [], "hover": []}
    # The files pyright's definition of each call site is in (where a hover's answer is too).
    defined_in = {}
    for round_ in range(2):
        for name, path, line, character in sites:
            ensure_open(direct, path)
            for method in ("definition", "hover"):
                elapsed, answer = direct.timed(f"textDocument/{method}",
                                               position_params(path, line, character))
                if round_ == 1:
                    direct_times[method].append(elapsed)
                if method == "definition":
                    answer = [answer] if isinstance(answer, dict) else answer or []
                    defined_in[name] = {
                        Path((a.get("uri") or a.get("targetUri")).removeprefix("file://"))
                        for a in answer}
    direct.close()

    # 2. lode lsp, by name from its index, then through pyright.
    lode_results = {}
    index_lode = args.index_lode.resolve() if args.index_lode else lode
    results["index_lode"] = str(index_lode)
    for mode, binary, timeout in (("index", index_lode, "0"), ("server", lode, "120000")):
        flags = ["--navigation-timeout-ms", timeout]
        if "--navigation-timeout-ms" not in subprocess.run(
                [binary, "lsp", "--help"], capture_output=True, text=True).stdout:
            flags = []  # a build from before it: always by name
        client = Lsp([str(binary), "lsp", "--root", str(root), "--index-dir",
                      str(work / f"index-{mode}"), "--no-watch", *flags],
                     root, env, work / f"lode-lsp-{mode}.log")
        client.initialize(root)
        client.wait(lambda: client.progress_ended, "the end of lode's indexing")
        found_by_name = {}
        first_ms = None
        for target in targets:
            elapsed, found = client.timed("textDocument/references", references_params(target))
            first_ms = elapsed if first_ms is None else first_ms
            found_by_name[target["name"]] = {place(location, root) for location in found or []}
        # The call sites' files are open, as the file an editor asks about is.
        for path in sorted({site[1] for site in sites}):
            client.open(path)
        times = []
        for round_ in range(2):
            for name, path, line, character in sites:
                elapsed, _ = client.timed("textDocument/definition",
                                          position_params(path, line, character))
                if round_ == 1:
                    times.append(elapsed)
        # The floor: a request lode lsp answers at once (`workspace/symbol` with an empty
        # query), the same JSON-RPC round trip with no work behind it.
        floor = [client.timed("workspace/symbol", {"query": ""})[0] for _ in range(60)][10:]
        client.close()
        per_name = [precision(found_by_name[t["name"]], truth[t["name"]]) for t in targets]
        hits = sum(p[2] for p in per_name)
        lode_results[mode] = {
            "precision_micro": round(hits / max(1, sum(len(found_by_name[t["name"]])
                                                       for t in targets)), 4),
            "recall_micro": round(hits / max(1, sum(len(truth[t["name"]]) for t in targets)), 4),
            "precision_macro": round(statistics.mean(p[0] for p in per_name), 4),
            "recall_macro": round(statistics.mean(p[1] for p in per_name), 4),
            "locations": sum(len(found_by_name[t["name"]]) for t in targets),
            "first_references_ms": round(first_ms, 1),
            "definition": summary(times),
            "floor": summary(floor),
            "exact_names": sum(found_by_name[t["name"]] == truth[t["name"]] for t in targets),
        }
    results["pyright_locations"] = sum(len(truth[t["name"]]) for t in targets)
    results["lode_lsp"] = lode_results
    results["pyright_direct"] = {method: summary(v) for method, v in direct_times.items()}

    # 3. lode mcp: hover latency and the bytes its navigation tools return.
    mcp = Mcp([str(lode), "--root", str(root), "--index-dir", str(work / "index-server"), "mcp"],
              root, env, work / "lode-mcp.log")
    mcp.initialize()
    offered = mcp.tools()
    if not {"hover", "definition"} <= set(offered) or "symbol" not in json.dumps(
            mcp.request("tools/list", {})):
        results["mcp"] = f"lode mcp offers no navigation by symbol (tools: {offered})"
    else:
        def symbol(path, line, character):
            text = path.read_text(encoding="utf-8").splitlines()[line]
            column = len(text.encode("utf-16-le")[:character * 2].decode("utf-16-le")) + 1
            return f"{path.relative_to(root)}:{line + 1}:{column}"

        hover_times = []
        for round_ in range(2):
            for name, path, line, character in sites:
                elapsed, _, _ = mcp.call("hover", {"symbol": symbol(path, line, character)})
                if round_ == 1:
                    hover_times.append(elapsed)
        questions = []
        kinds = ["references", "definition", "hover"]
        for n, (name, path, line, character) in enumerate(sites[:args.questions]):
            kind = kinds[n % 3]
            arguments = {"symbol": symbol(path, line, character)}
            if kind == "references":
                target = next(t for t in targets if t["name"] == name)
                arguments = {"symbol": symbol(target["path"], target["line"],
                                              target["character"])}
            _, text, error = mcp.call(kind, arguments)
            # The files the answer is in: for references every file with a use, for
            # definition and hover the file of the definition (pyright's answer).
            if kind == "references":
                files = {root / p for p, _, _ in truth[name]}
            else:
                files = defined_in.get(name, set())
            file_bytes = sum((f.stat().st_size for f in files if f.is_file()))
            questions.append({"kind": kind, "arguments": arguments, "error": error,
                              "tool_bytes": len(text.encode()), "file_bytes": file_bytes,
                              "resolved_by": (re.search(r"resolved_by:? *\"?(\w[\w-]*)", text)
                                              or [None, None])[1]})
        tool_bytes = sum(q["tool_bytes"] for q in questions)
        file_bytes = sum(q["file_bytes"] for q in questions)
        results["mcp"] = {"hover": summary(hover_times), "questions": questions,
                          "tool_bytes": tool_bytes, "file_bytes": file_bytes,
                          "ratio": round(tool_bytes / max(1, file_bytes), 4)}
    mcp.close()

    rust = subprocess.run(["rust-analyzer", "--version"], capture_output=True, text=True) \
        if shutil.which("rust-analyzer") else None
    results["rust"] = ("measured separately" if rust and rust.returncode == 0 else
                       "rust-analyzer is not usable here: " +
                       ((rust.stderr.strip().splitlines() or ["?"])[0] if rust else "not on PATH"))

    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "navigation.json").write_text(json.dumps(results, indent=2, default=str))
    report(results)


def report(r):
    index, server = r["lode_lsp"]["index"], r["lode_lsp"]["server"]
    ok = lambda cond: "OK" if cond else "MISS"
    print(f"\nreferences of {r['names']} method names shared by several classes, "
          f"against pyright ({r['pyright_locations']} locations):")
    for label, row in (("index (by name)", index), ("lode lsp + pyright", server)):
        print(f"  {label:20} precision {row['precision_micro']:.4f} micro / "
              f"{row['precision_macro']:.4f} macro, recall {row['recall_micro']:.4f}; "
              f"{row['locations']} locations, {row['exact_names']}/{r['names']} names exact")
    print(f"  target ≥ 0.98 with the server: {ok(server['precision_micro'] >= 0.98)}")
    py = r["pyright_direct"]
    print("\ndefinition at call sites, warm (median / p90 ms):")
    print(f"  pyright directly      {py['definition']['median_ms']} / {py['definition']['p90_ms']}")
    print(f"  lode lsp + pyright    {server['definition']['median_ms']} / "
          f"{server['definition']['p90_ms']}  (+{server['definition']['median_ms'] - py['definition']['median_ms']:.2f} ms; "
          f"target ≤ +5: {ok(server['definition']['median_ms'] - py['definition']['median_ms'] <= 5)})")
    print(f"  lode lsp, index only  {index['definition']['median_ms']} / "
          f"{index['definition']['p90_ms']}  (target ≤ 5 ms: "
          f"{ok(index['definition']['median_ms'] <= 5)})")
    print(f"  lode lsp's floor (an empty workspace/symbol): {index['floor']['median_ms']} / "
          f"{server['floor']['median_ms']} ms in the two runs")
    mcp = r["mcp"]
    if isinstance(mcp, str):
        print(f"\n{mcp}")
    else:
        print(f"\nhover, warm (median / p90 ms): pyright {py['hover']['median_ms']} / "
              f"{py['hover']['p90_ms']}, lode mcp `hover` {mcp['hover']['median_ms']} / "
              f"{mcp['hover']['p90_ms']} (whole MCP round trip)")
        print(f"tokens: {len(mcp['questions'])} questions through lode mcp returned "
              f"{mcp['tool_bytes']} bytes; the files the answers are in hold "
              f"{mcp['file_bytes']} bytes: ratio {mcp['ratio']}")
    print(f"\nrust: {r['rust']}")


if __name__ == "__main__":
    main()
