"""Small helpers shared by the bench/ scripts (standard library only)."""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
OUT = BENCH / "out"
CORPUS = Path(os.environ.get("LODE_BENCH_CORPUS", BENCH / "corpus"))
LODE = Path(os.environ.get("LODE_BIN", ROOT / "target" / "release" / "lode"))

# Extensions of the languages lode parses (DESIGN.md: Rust, Python, JavaScript,
# TypeScript, Go at least). Used to compute "MB of indexed source".
SOURCE_EXTS = {
    ".rs": "rust", ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
    ".go": "go",
    # issue 43's languages (the extensions of grammars/*/language.toml that corpora here hold)
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".java": "java", ".cs": "csharp", ".kt": "kotlin", ".swift": "swift", ".rb": "ruby",
    ".php": "php", ".scala": "scala", ".lua": "lua", ".sh": "bash", ".zig": "zig",
    ".ex": "elixir", ".exs": "elixir", ".hs": "haskell", ".ml": "ocaml",
}


def die(msg: str, code: int = 1) -> "None":
    print(f"{Path(sys.argv[0]).name}: {msg}", file=sys.stderr)
    sys.exit(code)


def require_lode() -> Path:
    if not (LODE.is_file() and os.access(LODE, os.X_OK)):
        die(f"lode binary not found at {LODE}\n"
            f"  build it first:  (cd {ROOT} && cargo build --release -p lode)\n"
            f"  or point LODE_BIN at a lode binary.")
    return LODE


def require_dir(p: Path, hint: str = "run bench/corpus.sh first") -> Path:
    if not p.is_dir():
        die(f"directory {p} does not exist; {hint}")
    return p


@dataclass
class Run:
    cmd: list[str]
    wall_s: float
    max_rss_kb: int | None
    rc: int
    stdout: str
    stderr: str
    extra: dict = field(default_factory=dict)
    # user + system CPU seconds of the child (from /usr/bin/time -v), when known
    cpu_s: float | None = None

    def check(self) -> "Run":
        if self.rc != 0:
            die(f"command failed (exit {self.rc}): {' '.join(self.cmd)}\n{self.stderr[-4000:]}")
        return self


_TIME = shutil.which("time", path="/usr/bin") or None


def run_timed(cmd: list[str], cwd: Path | None = None, env: dict | None = None,
              stdin: str | None = None) -> Run:
    """Run cmd, measure wall time (perf_counter) and peak RSS.

    Peak RSS comes from `/usr/bin/time -v` ("Maximum resident set size") when it is
    installed, otherwise from os.wait4's rusage of the child (same number).
    """
    cmd = [str(c) for c in cmd]
    full = cmd
    tf = None
    if _TIME:
        tf = tempfile.NamedTemporaryFile(prefix="bench-time-", suffix=".txt", delete=False)
        tf.close()
        full = [_TIME, "-v", "-o", tf.name] + cmd
    t0 = time.perf_counter()
    p = subprocess.Popen(full, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, text=True)
    out, err = p.communicate(stdin)
    wall = time.perf_counter() - t0
    rss = None
    if tf:
        txt = Path(tf.name).read_text(errors="replace")
        os.unlink(tf.name)
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", txt)
        rss = int(m.group(1)) if m else None
        times = [re.search(rf"{kind} time \(seconds\): ([\d.]+)", txt) for kind in ("User", "System")]
        cpu = sum(float(m.group(1)) for m in times) if all(times) else None
        m = re.search(r"Exit status: (\d+)", txt)
        rc = int(m.group(1)) if m else p.returncode
        if "Command terminated by signal" in txt and p.returncode:
            rc = p.returncode
    else:
        rc = p.returncode
        cpu = None
    return Run(cmd, wall, rss, rc, out, err, cpu_s=cpu)


def listed_files(path: Path) -> list[Path]:
    """Files a gitignore-respecting walker sees under path (uses `rg --files`, which
    applies the same ignore rules as the `ignore` crate lode uses; hidden files and
    directories such as .lode/ are skipped)."""
    rg = shutil.which("rg")
    if not rg:
        die("ripgrep (rg) is required: apt-get install ripgrep")
    p = subprocess.run([rg, "--files", "--no-messages", "."], cwd=path, capture_output=True, text=True)
    return [path / line for line in p.stdout.splitlines() if line]


def source_stats(path: Path, max_file_size: int | None = None) -> dict:
    """Sizes of what a gitignore-aware walker sees; source_* counts files in lode's
    languages no larger than max_file_size (lode skips bigger files, default 1 MiB)."""
    files = listed_files(path)
    total = src = nsrc = skipped = 0
    by_lang: dict[str, list[int]] = {}
    for f in files:
        try:
            sz = f.stat().st_size
        except OSError:
            continue
        total += sz
        lang = SOURCE_EXTS.get(f.suffix.lower())
        if lang and max_file_size is not None and sz > max_file_size:
            skipped += 1
            continue
        if lang:
            nsrc += 1
            src += sz
            e = by_lang.setdefault(lang, [0, 0])
            e[0] += 1
            e[1] += sz
    return {
        "files": len(files), "bytes": total, "mb": total / 2**20,
        "source_files": nsrc, "source_bytes": src, "source_mb": src / 2**20,
        "source_files_over_max_size": skipped, "max_file_size": max_file_size,
        "by_language": {k: {"files": v[0], "mb": round(v[1] / 2**20, 2)} for k, v in sorted(by_lang.items())},
        "_paths": [f for f in files if f.suffix.lower() in SOURCE_EXTS
                   and (max_file_size is None or f.stat().st_size <= max_file_size)],
    }


def warm_cache(paths: list[Path]) -> float:
    """Read every file once so that all timed runs see a warm page cache."""
    t0 = time.perf_counter()
    buf = bytearray(1 << 20)
    for p in paths:
        try:
            with open(p, "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass
        except OSError:
            pass
    return time.perf_counter() - t0


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def du_bytes(p: Path) -> int:
    total = 0
    for d, _, fs in os.walk(p):
        for f in fs:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


def last_line(s: str) -> str:
    lines = [l for l in s.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def fmt_s(s: float | None) -> str:
    if s is None or s != s:
        return "-"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def table(rows: list[list[str]], header: list[str]) -> str:
    w = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r))
    return "\n".join([line(header), line(["-" * x for x in w])] + [line(r) for r in rows])


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)


def git_rev() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip() or None
    except Exception:
        return None


def lode_version() -> str | None:
    try:
        p = subprocess.run([str(LODE), "--version"], capture_output=True, text=True, timeout=30)
        return p.stdout.strip() or None
    except Exception:
        return None


def machine() -> dict:
    return {"cores": os.cpu_count(), "python": sys.version.split()[0], "git_rev": git_rev(),
            "lode": str(LODE), "lode_version": lode_version(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
