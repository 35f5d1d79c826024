"""Build aider's repo map for a directory without an LLM (run with the aider venv's python).

    aider-venv/bin/python bench/lib/aider_map.py ROOT --tokens 1024 [--focus REL]... \
        [--mention IDENT]... [--files-from LIST] [--out MAP.txt] [--json META.json]

This calls aider.repomap.RepoMap.get_repo_map() the way aider's Coder does on every
prompt: chat_files = the focus files, other_files = every other file of the repository
(the file list is read from --files-from, one path per line relative to ROOT, e.g. the
output of `rg --files`, which stands in for `git ls-files`), mentioned_idents = --mention.
Token counting uses tiktoken's cl100k_base (what `lode map --tokens` counts) via the BPE file that litellm bundles,
so nothing is fetched from the network. The tags cache (.aider.tags.cache.v*) is written
to ROOT as aider would; delete it for a cold run.

The JSON side output lists the definitions (file, line, name) that made it into the map
(the exact tag set of the map aider chose, captured from RepoMap.to_tree).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()

# litellm ships the tiktoken BPE files; point tiktoken at them before anything imports it.
try:
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        tok_dir = os.path.join(list(spec.submodule_search_locations)[0], "litellm_core_utils", "tokenizers")
        if os.path.isdir(tok_dir):
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", tok_dir)
except Exception:
    pass
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import tiktoken  # noqa: E402
from aider.repomap import RepoMap, Tag  # noqa: E402

T_IMPORTED = time.perf_counter()


class QuietIO:
    """The slice of aider.io.InputOutput that RepoMap uses."""

    def __init__(self):
        self.warnings = []

    def read_text(self, fname, silent=False):
        try:
            with open(fname, "r", encoding="utf-8") as fh:
                return fh.read()
        except (OSError, UnicodeError) as e:
            if not silent:
                self.warnings.append(f"{fname}: {e}")
            return None

    def tool_output(self, *a, **k):
        pass

    def tool_warning(self, msg="", *a, **k):
        self.warnings.append(str(msg))

    def tool_error(self, msg="", *a, **k):
        self.warnings.append(str(msg))


class TokenModel:
    """Stands in for aider.models.Model: only token_count() is used by RepoMap."""

    def __init__(self, encoding: str):
        self.enc = tiktoken.get_encoding(encoding)

    def token_count(self, text):
        if not isinstance(text, str):
            text = json.dumps(text)
        return len(self.enc.encode(text, disallowed_special=()))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--focus", action="append", default=[], help="chat file, relative to root")
    ap.add_argument("--mention", action="append", default=[], help="identifier mentioned in chat")
    ap.add_argument("--files-from", help="file list (relative paths); default: os.walk of root")
    ap.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding (lode counts cl100k)")
    ap.add_argument("--out", help="write the map text here (default stdout)")
    ap.add_argument("--json", help="write timings and the included definitions here")
    ap.add_argument("--count-tokens", action="store_true",
                    help="only print the token count of the file named by ROOT and exit")
    a = ap.parse_args()
    if a.count_tokens:
        with open(a.root, encoding="utf-8", errors="replace") as fh:
            print(TokenModel(a.encoding).token_count(fh.read()))
        return 0

    root = os.path.abspath(a.root)
    if a.files_from:
        with open(a.files_from) as fh:
            rels = [l.strip() for l in fh if l.strip()]
    else:
        rels = []
        for d, dirs, fs in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            rels += [os.path.relpath(os.path.join(d, f), root) for f in fs]
    focus = [os.path.normpath(f) for f in a.focus]
    chat = [os.path.join(root, f) for f in focus]
    other = [os.path.join(root, f) for f in rels if os.path.normpath(f) not in set(focus)]

    io = QuietIO()
    model = TokenModel(a.encoding)
    t0 = time.perf_counter()
    rm = RepoMap(map_tokens=a.tokens, root=root, main_model=model, io=io, verbose=False,
                 refresh="always")

    # Capture the tag list behind each candidate tree so we can report the exact
    # definitions in the map aider finally picks (its binary search keeps the best one).
    seen: dict[str, list] = {}
    orig_to_tree = rm.to_tree

    def to_tree(tags, chat_rel_fnames):
        out = orig_to_tree(tags, chat_rel_fnames)
        seen[out] = [t for t in tags if isinstance(t, Tag)]
        return out

    rm.to_tree = to_tree
    text = rm.get_repo_map(chat, other, mentioned_fnames=set(), mentioned_idents=set(a.mention)) or ""
    t1 = time.perf_counter()

    listing = text
    defs = []
    chat_rel = {os.path.relpath(c, root) for c in chat}
    for out, tags in seen.items():
        if out and out in text:
            listing = out
            defs = [{"path": t.rel_fname, "line": t.line + 1, "name": t.name}
                    for t in tags if t.kind == "def" and t.rel_fname not in chat_rel]
            break
    files_in_map = []
    for t in defs:
        if t["path"] not in files_in_map:
            files_in_map.append(t["path"])

    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    if a.json:
        meta = {
            "import_s": T_IMPORTED - T_START,
            "repo_map_s": t1 - t0,
            "tokens_budget": a.tokens,
            "tokens_used": model.token_count(listing),
            "files_considered": len(other) + len(chat),
            "files_in_map": files_in_map,
            "definitions": defs,
            "warnings": io.warnings[:20],
        }
        with open(a.json, "w") as fh:
            json.dump(meta, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
