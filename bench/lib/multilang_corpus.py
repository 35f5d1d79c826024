"""Builds the mixed Java + C/C++ + Ruby corpus of bench/index-multilang.sh from the pins in
bench/multilang-corpus.txt; `--remove` deletes it and its downloads instead."""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from benchlib import BENCH, CORPUS, du_bytes
from pinned import materialize, read_pins, remove_downloads

PINS = BENCH / "multilang-corpus.txt"
TREE = CORPUS / "multilang-mixed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--remove", action="store_true", help="delete the tree and its downloads")
    a = ap.parse_args()
    pins = read_pins(PINS)
    if a.remove:
        shutil.rmtree(TREE, ignore_errors=True)
        remove_downloads(pins)
        print(f"removed {TREE} and its downloads")
        return 0
    for pin in pins:
        done = TREE / f".done-{pin.label}"
        if done.exists():
            continue
        shutil.rmtree(TREE / pin.label, ignore_errors=True)
        materialize(pin, TREE / pin.label)
        # The package is copied out: its download goes now, so the disk holds one copy.
        remove_downloads([pin])
        done.touch()
    print(f"corpus {TREE}: {du_bytes(TREE) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
