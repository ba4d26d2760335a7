"""The files a session transfers: deterministic pseudo-random content per (size, count, seed),
made once and reused, with a manifest of SHA-256 digests that every run is checked against."""
from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataSet:
    root: Path          # the directory the server serves
    digests: dict[str, str]
    size: int

    def check(self) -> list[str]:
        """Problems with the files on disk (empty when every file is as made)."""
        problems = []
        for name in self.digests:
            path = self.root / name
            if not path.is_file():
                problems.append(f"{path}: missing")
            elif path.stat().st_size != self.size:
                problems.append(f"{path}: {path.stat().st_size} bytes, expected {self.size}")
        return problems


def file_name(index: int) -> str:
    return f"file{index:04d}.bin"


def ensure(base: Path, size: int, count: int, seed: int) -> DataSet:
    """The data set, made if absent or incomplete. Safe against interruption: a set counts only
    once its manifest is written, and the manifest is written last, atomically."""
    root = base / f"{size}B-x{count}-seed{seed}"
    # beside the served directory, not in it: mget * must fetch exactly the data files
    manifest = base / f"{root.name}.manifest.json"
    if manifest.is_file():
        data = DataSet(root, json.loads(manifest.read_text()), size)
        if not data.check():
            return data
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{seed}-{size}-{count}")
    digests = {}
    for index in range(count):
        content = rng.randbytes(size)
        name = file_name(index)
        (root / name).write_bytes(content)
        digests[name] = hashlib.sha256(content).hexdigest()
    partial = manifest.with_suffix(".tmp")
    partial.write_text(json.dumps(digests, indent=1))
    os.replace(partial, manifest)
    return DataSet(root, digests, size)


def verify_download(directory: Path, expected: dict[str, str]) -> list[str]:
    """Problems with a downloaded set (empty when every file arrived byte-identical)."""
    problems = []
    present = {p.name for p in directory.iterdir() if p.is_file()} if directory.is_dir() else set()
    for name, digest in expected.items():
        path = directory / name
        if name not in present:
            problems.append(f"{name}: not downloaded")
            continue
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != digest:
            problems.append(f"{name}: content differs ({path.stat().st_size} bytes)")
    extra = present - set(expected)
    if extra:
        problems.append(f"unexpected files: {', '.join(sorted(extra)[:5])}")
    return problems


@dataclass(frozen=True)
class Page:
    """A web page's files: the document and its embedded objects, all in `root`."""

    root: Path
    document: str
    objects: tuple[str, ...]
    digests: dict[str, str]
    sizes: dict[str, int]

    def paths(self) -> list[str]:
        """What a browser requests, in order: the document, then its objects."""
        return ["/" + name for name in (self.document, *self.objects)]

    def check(self) -> list[str]:
        problems = []
        for name, size in self.sizes.items():
            path = self.root / name
            if not path.is_file() or path.stat().st_size != size:
                problems.append(f"{path}: missing or not {size} bytes")
        return problems


def ensure_page(base: Path, document_size: int, objects: int, object_size: int,
                seed: int) -> Page:
    """A page of pseudo-random files: `page.html` of document_size bytes and objects o1.bin ...
    of object_size each; made once (its manifest written last, atomically), then reused."""
    root = base / f"page-{document_size}B-{objects}x{object_size}B-seed{seed}"
    manifest = base / f"{root.name}.manifest.json"
    names = ("page.html", *(f"o{i}.bin" for i in range(1, objects + 1)))
    sizes = {name: document_size if i == 0 else object_size for i, name in enumerate(names)}
    if manifest.is_file():
        page = Page(root, names[0], names[1:], json.loads(manifest.read_text()), sizes)
        if not page.check():
            return page
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"page-{seed}-{document_size}-{objects}-{object_size}")
    digests = {}
    for name in names:
        content = rng.randbytes(sizes[name])
        (root / name).write_bytes(content)
        digests[name] = hashlib.sha256(content).hexdigest()
    partial = manifest.with_suffix(".tmp")
    partial.write_text(json.dumps(digests, indent=1))
    os.replace(partial, manifest)
    return Page(root, names[0], names[1:], digests, sizes)
