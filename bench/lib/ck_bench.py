"""Cold index, lode against ck on the same tree; run through bench/ck.sh (which installs ck).

Each round removes both indexes and runs `lode index PATH` and `ck --index --model minilm PATH`
one after the other (the order alternates between rounds, since this VM's speed drifts within
minutes), recording wall time, user+system CPU seconds and peak RSS. MB indexed is each tool's
own: lode's "parsed X MB" summary, and the sizes of the files in ck's manifest (ck also indexes
text such as licences, manifests and lock files). Targets (issue 22): ck's wall time at least 5x
lode's; lode's peak RSS per MB indexed no more than ck's.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from pathlib import Path

from benchlib import (CORPUS, LODE, OUT, die, fmt_s, last_line, machine, median, require_dir, require_lode,
                      run_timed, source_stats, table, warm_cache, write_json)

TARGET_SPEEDUP = 5.0  # ck's cold index time / lode's, at least
CK_MODEL = "minilm"


def ck_env() -> dict:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.environ["CK_ENV_LD_LIBRARY_PATH"]
    env["XDG_CACHE_HOME"] = os.environ["CK_ENV_XDG_CACHE_HOME"]
    env["HF_HUB_OFFLINE"] = "1"
    return env


def remove_ck_index(path: Path) -> None:
    shutil.rmtree(path / ".ck", ignore_errors=True)
    (path / ".ckignore").unlink(missing_ok=True)  # ck writes it into the tree on a first index


def ck_indexed(path: Path) -> tuple[int, float]:
    manifest = json.loads((path / ".ck" / "manifest.json").read_text())
    sizes = [entry.get("size", 0) for entry in manifest.get("files", {}).values()]
    return len(sizes), sum(sizes) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/ck.sh", description=__doc__)
    ap.add_argument("path", nargs="?", default=str(CORPUS / "rust-vendor" / "tokio"),
                    help="tree to index (default: bench/corpus/rust-vendor/tokio)")
    ap.add_argument("--runs", type=int, default=2, help="rounds of one cold index each (median; default 2)")
    ap.add_argument("--out", default=str(OUT / "ck.json"))
    a = ap.parse_args()

    require_lode()
    ck = Path(os.environ.get("CK_BIN", ""))
    if not ck.is_file():
        die("CK_BIN is not set to the ck binary; run this through bench/ck.sh")
    path = require_dir(Path(a.path).resolve())
    st = source_stats(path)
    print(f"tree: {path}\n  {st['files']} files / {st['mb']:.1f} MB visible to a gitignore-aware walker; "
          f"{st['source_files']} source files / {st['source_mb']:.1f} MB in lode's languages")
    print(f"  page cache warmed ({warm_cache(st.pop('_paths')):.1f}s)\n")

    lode_runs, ck_runs = [], []
    lode_mb = ck_files = ck_mb = None
    for i in range(a.runs):
        order = ("lode", "ck") if i % 2 == 0 else ("ck", "lode")
        for tool in order:
            if tool == "lode":
                shutil.rmtree(path / ".lode", ignore_errors=True)
                r = run_timed([LODE, "index", path]).check()
                m = re.search(r"parsed ([\d.]+) MB", last_line(r.stderr))
                # lode prints one decimal: a tiny tree's "0.0 MB" falls back to the file sizes
                lode_mb = float(m.group(1)) if m and float(m.group(1)) > 0 else st["source_mb"]
                lode_runs.append(r)
            else:
                remove_ck_index(path)
                r = run_timed([ck, "--index", "--model", CK_MODEL, path], env=ck_env()).check()
                if not (path / ".ck" / "manifest.json").is_file():
                    die(f"ck exited 0 but wrote no {path / '.ck' / 'manifest.json'}")
                ck_files, ck_mb = ck_indexed(path)
                ck_runs.append(r)
            print(f"#{i + 1} {tool:4}: {fmt_s(r.wall_s)}  cpu {r.cpu_s:.1f} s  "
                  f"rss {(r.max_rss_kb or 0) // 1024} MB  [{last_line(r.stderr)[:100]}]")
    shutil.rmtree(path / ".lode", ignore_errors=True)
    remove_ck_index(path)

    def summary(runs: list, mb: float) -> dict:
        rss_mb = max(r.max_rss_kb or 0 for r in runs) / 1024
        if mb <= 0:
            die(f"nothing indexed in {path} (0 MB); pick a tree with source files")
        return {"wall_s": median([r.wall_s for r in runs]), "runs_wall_s": [r.wall_s for r in runs],
                "cpu_s": median([r.cpu_s for r in runs]), "runs_cpu_s": [r.cpu_s for r in runs],
                "peak_rss_mb": rss_mb, "indexed_mb": mb, "rss_mb_per_indexed_mb": rss_mb / mb}

    lode_s, ck_s = summary(lode_runs, lode_mb), summary(ck_runs, ck_mb)
    ck_s["indexed_files"] = ck_files
    speedup = ck_s["wall_s"] / lode_s["wall_s"]
    cpu_ratio = ck_s["cpu_s"] / lode_s["cpu_s"]
    ok_speed = speedup >= TARGET_SPEEDUP
    ok_rss = lode_s["rss_mb_per_indexed_mb"] <= ck_s["rss_mb_per_indexed_mb"]
    write_json(Path(a.out), {
        "tree": str(path), "corpus": st, "machine": machine(), "ck_model": CK_MODEL,
        "lode": lode_s, "ck": ck_s, "speedup_wall": speedup, "speedup_cpu": cpu_ratio,
        "targets": {"speedup_wall_min": TARGET_SPEEDUP, "rss_per_mb": "lode <= ck"},
        "meets_targets": {"speed": ok_speed, "rss_per_mb": ok_rss},
    })
    rows = [[name, fmt_s(s["wall_s"]), f"{s['cpu_s']:.1f} s", f"{s['indexed_mb']:.2f} MB",
             f"{s['indexed_mb'] / s['wall_s']:.2f} MB/s", f"{s['peak_rss_mb']:.0f} MB",
             f"{s['rss_mb_per_indexed_mb']:.1f}"] for name, s in (("lode", lode_s), (f"ck ({CK_MODEL})", ck_s))]
    print()
    print(table(rows, ["cold index", "wall", "cpu", "indexed", "throughput", "peak RSS", "RSS MB / MB"]))
    print(f"\nck / lode = {speedup:.1f}x wall, {cpu_ratio:.1f}x CPU   (target >= {TARGET_SPEEDUP:.0f}x)  "
          f"{'OK' if ok_speed else 'MISS'}")
    print(f"peak RSS per MB indexed: lode {lode_s['rss_mb_per_indexed_mb']:.1f}, ck {ck_s['rss_mb_per_indexed_mb']:.1f}"
          f"   (target: lode <= ck)  {'OK' if ok_rss else 'MISS'}")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
