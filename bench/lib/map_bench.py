"""Repo map: `lode map` vs aider's RepoMap on the same repository and token budget.

Run through bench/map.sh. Needs the aider venv (bench/out/aider-venv, made by map.sh).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from benchlib import (BENCH, CORPUS, LODE, OUT, die, fmt_s, last_line, listed_files, machine,
                      require_dir, require_lode, run_timed, table, write_json)

TARGET_SPEEDUP = 10.0
AIDER_PY = Path(__import__("os").environ.get("AIDER_PY", OUT / "aider-venv" / "bin" / "python"))
AIDER_DRIVER = BENCH / "lib" / "aider_map.py"
DEFAULT_FOCUS = {  # per repository directory name
    "tokio": ["src/runtime/builder.rs", "src/sync/mpsc/bounded.rs", "src/net/tcp/stream.rs"],
    "regex": ["src/regex/string.rs", "src/builders.rs"],
    "regex-automata": ["src/meta/regex.rs", "src/dfa/dense.rs", "src/nfa/thompson/compiler.rs"],
}
DEF_RE = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!|class|def|function|interface|func)\s+"
    r"([A-Za-z_][A-Za-z0-9_]*)")
IMPL_RE = re.compile(r"\bimpl\b(?:<[^>]*>)?\s+(?:[\w:]+\s+for\s+)?([A-Za-z_][\w]*)")


def aider_cache_dirs(repo: Path) -> list[Path]:
    return sorted(repo.glob(".aider.tags.cache.v*"))


def clear_aider(repo: Path) -> None:
    for d in aider_cache_dirs(repo):
        shutil.rmtree(d, ignore_errors=True)


def run_aider(repo: Path, tokens: int, focus: str | None, files_list: Path, mentions: list[str],
              tag: str) -> tuple[float, dict, str]:
    out_txt = OUT / "map" / f"aider-{tag}.txt"
    out_json = OUT / "map" / f"aider-{tag}.json"
    cmd = [AIDER_PY, AIDER_DRIVER, repo, "--tokens", str(tokens), "--files-from", files_list,
           "--out", out_txt, "--json", out_json]
    if focus:
        cmd += ["--focus", focus]
    for m in mentions:
        cmd += ["--mention", m]
    r = run_timed(cmd)
    if r.rc != 0:
        die(f"aider repo map failed (exit {r.rc}):\n{r.stderr[-3000:]}")
    return r.wall_s, json.loads(out_json.read_text()), out_txt.read_text()


def lode_map_cmd(repo: Path, tokens: int, focus: str | None, mentions: list[str], as_json: bool) -> list:
    cmd = [LODE, "map", "--root", repo, "--tokens", str(tokens)]
    if focus:
        cmd += ["--focus", focus]
    for m in mentions:
        cmd += ["--mention", m]
    if as_json:
        cmd.append("--json")
    return cmd


def run_lode(repo: Path, tokens: int, focus: str | None, mentions: list[str], as_json: bool = False):
    r = run_timed(lode_map_cmd(repo, tokens, focus, mentions, as_json), cwd=repo)
    if r.rc != 0:
        die(f"lode map failed (exit {r.rc}) in {repo}:\n{r.stderr[-3000:]}")
    return r


def lode_cold(repo: Path, tokens: int, focus: str | None, mentions: list[str], split: bool) -> dict:
    """Cold = no .lode/ at all. By default one `lode map` process, which builds the index
    itself (it refreshes before answering); with split=True `lode index` then `lode map`."""
    shutil.rmtree(repo / ".lode", ignore_errors=True)
    ri = None
    if split:
        ri = run_timed([LODE, "index", repo]).check()
    rm = run_lode(repo, tokens, focus, mentions)
    if not rm.stdout.strip() or not (repo / ".lode").exists():
        die(f"`lode map` printed nothing or built no {repo}/.lode; is {LODE} the real lode binary?")
    idx = ri.wall_s if ri else 0.0
    return {"index_s": ri.wall_s if ri else None, "map_s": rm.wall_s, "total_s": idx + rm.wall_s,
            "summary": last_line((ri or rm).stderr),
            "peak_rss_mb": max((ri.max_rss_kb if ri else 0) or 0, rm.max_rss_kb or 0) // 1024}


# ---------------------------------------------------------------- definitions in a map
PATH_KEYS = ("path", "file", "rel_path", "fname", "filename")
LIST_KEYS = ("symbols", "defs", "definitions", "tags", "items", "entries", "lines")
NAME_KEYS = ("name", "symbol", "ident", "identifier")


def defs_from_json(obj) -> list[dict]:
    """Pull (path, name, line) out of lode's map JSON without assuming one exact schema:
    either file objects {path, symbols:[{name, line}]} or flat entries {path, name, line}."""
    found: list[dict] = []

    def line_of(d):
        for k in ("line", "start_line", "row"):
            if isinstance(d.get(k), int):
                return d[k]
        return None

    def walk(o, cur_path=None):
        if isinstance(o, dict):
            p = next((o[k] for k in PATH_KEYS if isinstance(o.get(k), str)), cur_path)
            name = next((o[k] for k in NAME_KEYS if isinstance(o.get(k), str)), None)
            if p and name and not any(isinstance(o.get(k), list) for k in LIST_KEYS):
                found.append({"path": p, "name": name, "line": line_of(o)})
            for k, v in o.items():
                if isinstance(v, (list, dict)):
                    walk(v, p)
        elif isinstance(o, list):
            for x in o:
                if isinstance(x, str) and cur_path and x:
                    m = DEF_RE.search(x) or IMPL_RE.search(x)
                    if m:
                        found.append({"path": cur_path, "name": m.group(1), "line": None})
                else:
                    walk(x, cur_path)

    walk(obj)
    seen, out = set(), []
    for d in found:
        d["path"] = norm(d["path"])
        key = (d["path"], d["name"], d["line"])
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def norm(p: str) -> str:
    import os
    return os.path.normpath(p) if p else p


def defs_from_text(text: str) -> list[dict]:
    """Parse an aider-style map: `path:` headers, then `│code` lines and `⋮` elisions."""
    out, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(("│", "⋮", " ", "\t", "|")) and line.rstrip().endswith(":"):
            cur = norm(line.rstrip()[:-1].strip())
            continue
        if cur is None:
            continue
        body = line.lstrip("│| \t")
        if body.lstrip().startswith(("//", "#", "/*", "*")):
            continue
        m = DEF_RE.search(body) or IMPL_RE.search(body)
        if m:
            out.append({"path": cur, "name": m.group(1), "line": None})
    return out


def parse_lode_map(stdout: str) -> list[dict]:
    s = stdout.strip()
    if not s:
        return []
    try:
        return defs_from_json(json.loads(s))
    except json.JSONDecodeError:
        pass
    try:  # JSON Lines
        objs = [json.loads(l) for l in s.splitlines() if l.strip()]
        return defs_from_json(objs)
    except json.JSONDecodeError:
        return defs_from_text(stdout)


def count_tokens(path: Path) -> int | None:
    p = subprocess.run([AIDER_PY, AIDER_DRIVER, path, "--count-tokens"], capture_output=True, text=True)
    return int(p.stdout.strip()) if p.returncode == 0 and p.stdout.strip().isdigit() else None


def files_in_order(defs: list[dict]) -> list[str]:
    out = []
    for d in defs:
        if d["path"] not in out:
            out.append(d["path"])
    return out


def md_side_by_side(focus: str | None, lode_defs, aider_defs, lode_txt: str, aider_txt: str,
                    lode_tok, aider_tok) -> str:
    lf, af = files_in_order(lode_defs), files_in_order(aider_defs)
    lset = {(d["path"], d["name"]) for d in lode_defs}
    aset = {(d["path"], d["name"]) for d in aider_defs}
    both = lset & aset
    jac = len(both) / len(lset | aset) if lset | aset else 0.0
    s = [f"## focus: `{focus or '(none)'}`\n",
         f"| | lode | aider |\n|---|---|---|\n"
         f"| tokens (cl100k) | {lode_tok} | {aider_tok} |\n"
         f"| files | {len(lf)} | {len(af)} |\n| definitions | {len(lset)} | {len(aset)} |\n",
         f"Files in both: {len(set(lf) & set(af))}; definitions in both: {len(both)} (Jaccard {jac:.2f}).\n"]
    by_file_l: dict[str, list[str]] = {}
    by_file_a: dict[str, list[str]] = {}
    for d in lode_defs:
        by_file_l.setdefault(d["path"], []).append(d["name"])
    for d in aider_defs:
        by_file_a.setdefault(d["path"], []).append(d["name"])
    s.append("| file | lode | aider |\n|---|---|---|")
    order = lf + [f for f in af if f not in lf]
    for f in order:
        def cell(names, other):
            return ", ".join(f"**{n}**" if (f, n) in other else n for n in dict.fromkeys(names)) or "—"
        s.append(f"| `{f}` | {cell(by_file_l.get(f, []), aset)} | {cell(by_file_a.get(f, []), lset)} |")
    s.append("\n(**bold** = the other tool includes the same definition.)\n")
    s.append("<details><summary>lode map output</summary>\n\n```\n" + lode_txt.strip() + "\n```\n</details>\n")
    s.append("<details><summary>aider map output</summary>\n\n```\n" + aider_txt.strip() + "\n```\n</details>\n")
    return "\n".join(s)


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/map.sh", description=__doc__)
    ap.add_argument("repo", nargs="?", default=str(CORPUS / "rust-vendor" / "tokio"),
                    help="repository directory (default bench/corpus/rust-vendor/tokio)")
    ap.add_argument("--tokens", type=int, default=1024, help="map token budget for both (default 1024)")
    ap.add_argument("--focus", action="append", default=None,
                    help="focus file relative to repo; one side-by-side per --focus (default: 3 per known repo)")
    ap.add_argument("--mention", action="append", default=[], help="identifier mentioned (both tools)")
    ap.add_argument("--runs", type=int, default=3, help="cold runs per tool (default 3)")
    ap.add_argument("--split-index", action="store_true",
                    help="cold lode = `lode index` + `lode map` (default: one `lode map` that indexes itself)")
    ap.add_argument("--keep", action="store_true", help="keep REPO/.lode and aider's tags cache afterwards")
    ap.add_argument("--out", default=str(OUT / "map.json"))
    ap.add_argument("--md", default=str(OUT / "map-compare.md"))
    a = ap.parse_args()

    require_lode()
    if not AIDER_PY.exists():
        die(f"aider venv not found ({AIDER_PY}); bench/map.sh creates it")
    repo = require_dir(Path(a.repo).resolve())
    focus = a.focus or DEFAULT_FOCUS.get(repo.name)
    if not focus:  # three largest source files, deterministic
        cands = [p for p in listed_files(repo) if p.suffix in (".rs", ".py", ".ts", ".js", ".go")]
        focus = [str(p.relative_to(repo)) for p in sorted(cands, key=lambda p: (-p.stat().st_size, str(p)))[:3]]
    for f in focus:
        if not (repo / f).is_file():
            die(f"focus file {f} not found in {repo}")
    (OUT / "map").mkdir(parents=True, exist_ok=True)
    files_list = OUT / "map" / "files.txt"
    files_list.write_text("\n".join(str(p.relative_to(repo)) for p in listed_files(repo)) + "\n")
    nfiles = len(files_list.read_text().splitlines())
    print(f"repo: {repo} ({nfiles} files), budget {a.tokens} tokens, focus {focus[0]} for timing\n")

    # ---- cold timings (first focus file) ------------------------------------------
    lode_runs, aider_runs = [], []
    for i in range(a.runs):
        c = lode_cold(repo, a.tokens, focus[0], a.mention, a.split_index)
        lode_runs.append(c)
        parts = f"index {fmt_s(c['index_s'])} + map {fmt_s(c['map_s'])} = " if c["index_s"] is not None else ""
        print(f"lode  cold #{i + 1}: {parts}{fmt_s(c['total_s'])}  rss {c['peak_rss_mb']} MB  [{c['summary']}]")
    for i in range(a.runs):
        clear_aider(repo)
        wall, meta, _ = run_aider(repo, a.tokens, focus[0], files_list, a.mention, "cold")
        aider_runs.append({"total_s": wall, "repo_map_s": meta["repo_map_s"], "import_s": meta["import_s"]})
        print(f"aider cold #{i + 1}: {fmt_s(wall)} (RepoMap.get_repo_map {fmt_s(meta['repo_map_s'])})")
    # ---- warm timings: caches/index present ----------------------------------------------
    lw = [run_lode(repo, a.tokens, focus[0], a.mention).wall_s for _ in range(max(1, a.runs))]
    aw = [run_aider(repo, a.tokens, focus[0], files_list, a.mention, "warm")[0] for _ in range(max(1, a.runs))]
    med = statistics.median
    lode_cold_s = med([r["total_s"] for r in lode_runs])
    aider_cold_s = med([r["total_s"] for r in aider_runs])
    speed = aider_cold_s / lode_cold_s if lode_cold_s else float("inf")
    warm_speed = med(aw) / med(lw) if med(lw) else float("inf")

    # ---- side by side per focus -------------------------------------------------------------
    md = [f"# lode map vs aider repo map\n",
          f"Repository `{repo.relative_to(BENCH) if repo.is_relative_to(BENCH) else repo}` ({nfiles} files), "
          f"token budget {a.tokens}, mentions {a.mention or 'none'}. Generated by `bench/map.sh` "
          f"on {time.strftime('%Y-%m-%d %H:%M')}.\n",
          "| | lode | aider | aider/lode |\n|---|---|---|---|",
          f"| cold (lode: no .lode/, new process; aider: empty tags cache, new process) | {fmt_s(lode_cold_s)} | "
          f"{fmt_s(aider_cold_s)} | {speed:.1f}x |",
          f"| warm (lode: index present; aider: tags cache present, new process) | {fmt_s(med(lw))} | "
          f"{fmt_s(med(aw))} | {warm_speed:.1f}x |\n",
          f"Target: lode >= {TARGET_SPEEDUP:.0f}x faster cold: **{'OK' if speed >= TARGET_SPEEDUP else 'MISS'}**.\n"]
    compare = []
    for i, f in enumerate(focus):
        lr = run_lode(repo, a.tokens, f, a.mention, as_json=True)
        lt = run_lode(repo, a.tokens, f, a.mention, as_json=False)
        ldefs = parse_lode_map(lr.stdout) or defs_from_text(lt.stdout)
        _, meta, atxt = run_aider(repo, a.tokens, f, files_list, a.mention, f"focus{i}")
        adefs = [dict(d, path=norm(d["path"])) for d in meta["definitions"]]
        ltxt_path = OUT / "map" / f"lode-focus{i}.txt"
        ltxt_path.write_text(lt.stdout)
        (OUT / "map" / f"lode-focus{i}.json").write_text(lr.stdout)
        ltok = count_tokens(ltxt_path)
        md.append(md_side_by_side(f, ldefs, adefs, lt.stdout, atxt, ltok, meta["tokens_used"]))
        lset = {(d["path"], d["name"]) for d in ldefs}
        aset = {(d["path"], d["name"]) for d in adefs}
        compare.append({"focus": f, "lode_tokens": ltok, "aider_tokens": meta["tokens_used"],
                        "lode_files": files_in_order(ldefs), "aider_files": files_in_order(adefs),
                        "lode_defs": len(lset), "aider_defs": len(aset), "common_defs": len(lset & aset),
                        "jaccard": len(lset & aset) / len(lset | aset) if lset | aset else 0.0})
        print(f"focus {f}: lode {len(lset)} defs in {len(files_in_order(ldefs))} files ({ltok} tok), "
              f"aider {len(aset)} defs in {len(files_in_order(adefs))} files ({meta['tokens_used']} tok), "
              f"common {len(lset & aset)}")
    Path(a.md).write_text("\n".join(md) + "\n")
    if not a.keep:
        shutil.rmtree(repo / ".lode", ignore_errors=True)
        clear_aider(repo)

    rows = [["cold", fmt_s(lode_cold_s), fmt_s(aider_cold_s), f"{speed:.1f}x"],
            ["warm", fmt_s(med(lw)), fmt_s(med(aw)), f"{warm_speed:.1f}x"]]
    print()
    print(table(rows, ["run", "lode", "aider", "aider/lode"]))
    print(f"\ncold speed-up {speed:.1f}x (target >= {TARGET_SPEEDUP:.0f}x)  {'OK' if speed >= TARGET_SPEEDUP else 'MISS'}")
    write_json(Path(a.out), {
        "repo": str(repo), "files": nfiles, "tokens": a.tokens, "focus": focus, "mentions": a.mention,
        "machine": machine(), "lode_cold": lode_runs, "aider_cold": aider_runs,
        "lode_warm_s": lw, "aider_warm_s": aw, "lode_cold_s": lode_cold_s, "aider_cold_s": aider_cold_s,
        "cold_speedup": speed, "warm_speedup": warm_speed, "target_speedup": TARGET_SPEEDUP,
        "meets_target": speed >= TARGET_SPEEDUP, "compare": compare})
    print(f"written {a.out} and {a.md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
