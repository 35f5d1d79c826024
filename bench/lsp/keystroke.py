#!/usr/bin/env python3
"""Keystroke latency of `lode lsp` on large files, driven as a plain LSP client.

For each file: a fresh workspace holding a copy of it; `initialize`, `initialized`, then
`didOpen` + `documentSymbol` (a whole parse: the reference this run compares keystrokes to),
then K keystrokes (one one-character `didChange` each, typed into a comment line in the
middle of the file) each followed by `documentSymbol`, then K more each followed by
`workspace/symbol`. Reported: medians, p99 and maxima in ms, and the keystroke medians as a
ratio of the open in the same run.

`--huge`: one 20 MiB insertion into an open buffer, then the time until the next
`documentSymbol` is answered and the process's peak RSS above its idle RSS (VmHWM - VmRSS).

`--languages`: one large real file per language, pinned with its package and version in
bench/lsp/large-files.txt and fetched from its registry (Debian, PyPI, npm, crates.io), each
reported as the ratio of its keystroke medians to the Rust reference file's in the same run.

Usage: bench/lsp/keystroke.py [--lode target/release/lode] [--keystrokes 60] [--huge] [FILE ...]
       bench/lsp/keystroke.py --languages [--only c,java] [--keystrokes 60]
Without files: the largest source files of the crates in Cargo.lock (see DEFAULT_FILES).
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LARGE_FILES = os.path.join(REPO, "bench", "lsp", "large-files.txt")
REGISTRY = os.path.expanduser("~/.cargo/registry/src/*")
# The table: hashbrown's map (273 KiB), qdrant-client's generated module (432 KiB),
# aws-lc-sys's generated bindings (933 KiB).
DEFAULT_FILES = [
    "hashbrown-0.1[0-9]*/src/map.rs",
    "qdrant-client-*/src/qdrant.rs",
    "aws-lc-sys-*/src/x86_64_unknown_linux_gnu_crypto.rs",
]


class Lsp:
    def __init__(self, lode, root):
        env = dict(os.environ)
        env.setdefault("LODE_LOG", "warn")
        self.stderr = open(os.path.join(root, "..", "lsp-stderr.log"), "w")
        self.process = subprocess.Popen(
            [lode, "lsp", "--root", root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=root,
            env=env,
        )
        self.next_id = 0

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def read(self, parse_large=True):
        """The next message. A large response (an outline of thousands of symbols) is not
        parsed unless asked: only its id is read, so the time measured is lode's and the pipe's,
        not Python's JSON parser's (an editor parses JSON an order of magnitude faster)."""
        length = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("lode lsp closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        body = self.process.stdout.read(length)
        if not parse_large and length > 65536:
            tail = re.search(rb'"id":\s*(\d+)\s*}\s*$', body[-64:])
            if tail and b'"method"' not in body[:64]:
                return {"id": int(tail.group(1)), "result": None, "unparsed": True}
        return json.loads(body)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, parse=True):
        self.next_id += 1
        wanted = self.next_id
        self.send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            message = self.read(parse_large=parse)
            if message.get("id") == wanted and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
            if "method" in message and "id" in message:
                # A request from the server (progress, showMessageRequest): answer it.
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def timed(self, method, params):
        start = time.perf_counter()
        result = self.request(method, params)
        return (time.perf_counter() - start) * 1000, result

    def status(self, key):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
        self.stderr.close()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def typing_position(text):
    """(line, column) at the end of a line in the middle of the file: keystrokes go into a new
    comment there, so the file's symbols stay the same."""
    lines = text.split("\n")
    middle = len(lines) // 2
    return middle, len(lines[middle].encode("utf-16-le")) // 2


def open_workspace(lode, source):
    workdir = tempfile.mkdtemp(prefix="lode-keystroke-")
    root = os.path.join(workdir, "ws")
    os.makedirs(os.path.join(root, "src"))
    target = os.path.join(root, "src", os.path.basename(source))
    shutil.copyfile(source, target)
    lsp = Lsp(lode, root)
    uri = "file://" + target
    lsp.request("initialize", {"processId": None, "rootUri": "file://" + root, "capabilities": {}})
    lsp.notify("initialized", {})
    return workdir, lsp, uri, target


def keystroke_case(lode, source, keystrokes, language_id="rust"):
    workdir, lsp, uri, target = open_workspace(lode, source)
    with open(target, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    version = 1
    open_start = time.perf_counter()
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}},
    )
    lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, parse=False)
    open_ms = (time.perf_counter() - open_start) * 1000
    outline = lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    line, column = typing_position(text)

    def type_one(char):
        nonlocal version, column
        version += 1
        lsp.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": line, "character": column},
                            "end": {"line": line, "character": column},
                        },
                        "text": char,
                    }
                ],
            },
        )
        column += 1

    typed = " // " + "abcdefghijklmnopqrstuvwxyz" * 10
    outline_times, symbol_times = [], []
    for index in range(keystrokes):
        start = time.perf_counter()
        type_one(typed[index % len(typed)])
        lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, parse=False)
        outline_times.append((time.perf_counter() - start) * 1000)
    query = (outline[0]["name"] if outline else "main")[:4]
    for index in range(keystrokes):
        start = time.perf_counter()
        type_one(typed[(keystrokes + index) % len(typed)])
        lsp.request("workspace/symbol", {"query": query}, parse=False)
        symbol_times.append((time.perf_counter() - start) * 1000)
    lsp.close()
    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "file": os.path.relpath(source, os.path.dirname(os.path.dirname(os.path.dirname(source)))),
        "kib": os.path.getsize(source) // 1024,
        "symbols": len(outline or []),
        "open_ms": open_ms,
        "outline_median": statistics.median(outline_times),
        "outline_p99": percentile(outline_times, 0.99),
        "outline_max": max(outline_times),
        "symbol_median": statistics.median(symbol_times),
        "symbol_p99": percentile(symbol_times, 0.99),
    }


def huge_case(lode, source, mib):
    workdir, lsp, uri, target = open_workspace(lode, source)
    with open(target, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": text}},
    )
    lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    time.sleep(1.0)  # the open buffer's index sync settles
    idle_rss = lsp.status("VmRSS")
    filler = ("fn generated_%d() -> u32 { %d }\n" * 1)
    block = "".join(filler % (i, i) for i in range(2000))
    insertion = (block * (mib * 1024 * 1024 // len(block) + 1))[: mib * 1024 * 1024]
    start = time.perf_counter()
    lsp.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [
                {
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                    "text": insertion,
                }
            ],
        },
    )
    lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, parse=False)
    answer_ms = (time.perf_counter() - start) * 1000
    symbol_ms, _ = lsp.timed("workspace/symbol", {"query": "generated_1"})
    time.sleep(2.0)  # whatever runs after the answer (index syncs) counts toward the peak
    lsp.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    peak = lsp.status("VmHWM")
    lsp.close()
    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "insert_mib": mib,
        "next_request_ms": answer_ms,
        "workspace_symbol_ms": symbol_ms,
        "idle_rss_mb": idle_rss / 1e6,
        "peak_above_idle_mb": (peak - idle_rss) / 1e6,
    }


def languages_case(lode, keystrokes, only):
    """One pinned file per language; each row's medians as ratios of the Rust reference's."""
    sys.path.insert(0, os.path.join(REPO, "bench", "lib"))
    from pinned import materialize, read_pins

    from pathlib import Path

    pins = read_pins(Path(LARGE_FILES))
    if not pins or pins[0].label != "rust":
        sys.exit(f"{LARGE_FILES}: the first line must be the rust reference")
    wanted = set(only.split(",")) if only else None
    pins = [pin for pin in pins if pin.label == "rust" or wanted is None or pin.label in wanted]
    staging = tempfile.mkdtemp(prefix="lode-keystroke-files-")
    rows = []
    try:
        for pin in pins:
            target = materialize(pin, Path(staging) / pin.label / os.path.basename(pin.path))
            row = keystroke_case(lode, str(target), keystrokes, language_id=pin.label)
            row["language"] = pin.label
            row["file"] = f"{pin.package} {pin.version} {os.path.basename(pin.path)}"
            rows.append(row)
            print(
                f"{pin.label}: {row['kib']} KiB, {row['symbols']} outline roots, "
                f"keystroke + documentSymbol median {row['outline_median']:.1f} ms",
                file=sys.stderr,
                flush=True,
            )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    reference = rows[0]
    for row in rows:
        row["outline_vs_rust"] = row["outline_median"] / reference["outline_median"]
        row["symbol_vs_rust"] = row["symbol_median"] / reference["symbol_median"]
        row["open_vs_rust"] = row["open_ms"] / reference["open_ms"]
    print(
        "| language | file | KiB | outline roots | open + documentSymbol (ms) | keystroke + documentSymbol "
        "median / p99 (ms) | keystroke + workspace/symbol median (ms) | keystroke ÷ Rust's "
        "(documentSymbol / workspace/symbol) | open ÷ Rust's |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['language']} | {row['file']} | {row['kib']} | {row['symbols']} | "
            f"{row['open_ms']:.1f} | {row['outline_median']:.1f} / {row['outline_p99']:.1f} | "
            f"{row['symbol_median']:.1f} | {row['outline_vs_rust']:.2f} / {row['symbol_vs_rust']:.2f} | "
            f"{row['open_vs_rust']:.2f} |"
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lode", default=os.path.join(REPO, "target/release/lode"))
    parser.add_argument("--keystrokes", type=int, default=60)
    parser.add_argument("--huge", action="store_true", help="also the 20 MiB insertion")
    parser.add_argument("--huge-mib", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--languages", action="store_true", help="one pinned file per language (large-files.txt)"
    )
    parser.add_argument("--only", help="with --languages: these labels (comma-separated) and rust")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.languages:
        rows = languages_case(args.lode, args.keystrokes, args.only)
        if args.json:
            print(json.dumps({"languages": rows}, indent=2))
        return
    files = args.files
    if not files:
        for pattern in DEFAULT_FILES:
            found = sorted(glob.glob(os.path.join(REGISTRY, pattern)))
            if found:
                files.append(found[-1])
            else:
                print(f"skipped: no {pattern} in ~/.cargo/registry", file=sys.stderr)
    results = [keystroke_case(args.lode, path, args.keystrokes) for path in files]
    print("| file | KiB | open + documentSymbol (ms) | keystroke + documentSymbol median / p99 / max (ms) | keystroke + workspace/symbol median / p99 (ms) | keystroke median / open |")
    print("|---|---|---|---|---|---|")
    for row in results:
        print(
            f"| {row['file']} | {row['kib']} | {row['open_ms']:.1f} | "
            f"{row['outline_median']:.1f} / {row['outline_p99']:.1f} / {row['outline_max']:.1f} | "
            f"{row['symbol_median']:.1f} / {row['symbol_p99']:.1f} | "
            f"{row['outline_median'] / row['open_ms']:.3f} |"
        )
    huge = None
    if args.huge and files:
        huge = huge_case(args.lode, files[0], args.huge_mib)
        print(
            f"\n{huge['insert_mib']} MiB insertion: next documentSymbol answered in "
            f"{huge['next_request_ms']:.0f} ms, then workspace/symbol in {huge['workspace_symbol_ms']:.0f} ms; "
            f"peak RSS {huge['peak_above_idle_mb']:.0f} MB above idle ({huge['idle_rss_mb']:.0f} MB)"
        )
    if args.json:
        print(json.dumps({"keystrokes": results, "huge": huge}, indent=2))


if __name__ == "__main__":
    main()
