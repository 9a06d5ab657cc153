"""The repo map: the definitions that matter most, cut to a token budget.

As in Aider's repo map: files are nodes of a graph, with an edge from a file that
references an identifier to each file defining it; personalised PageRank toward the
files in play ranks the files, each file's rank flows along its edges onto
definitions, and the best definitions that fit the budget are rendered. Tags are
cached by file mtime+size (in memory and in .clover/cache/), the graph by the set of
tags, the rendered map by its arguments, so a warm call on an unchanged repo is cheap.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code import jsonsafe
from clover_code.tokens import estimate_tokens
from clover_code.tools.codemap.tags import MAX_FILE_BYTES, Definition, FileTags, extract, language_for

CACHE_FILE = "tags-v1.json"
# A name defined in more files than this (`get`, `run`, `__init__`) says nothing about which
# of them a reference means, and would cost referencers x definers edges: it gets none.
MAX_DEFINERS = 25

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# What the rendered map depends on: (tag generation, the files' paths)
_State = tuple[int, tuple[str, ...]]


@dataclass
class _Entry:
    key: tuple[int, int]  # (mtime_ns, size)
    tags: FileTags


class TagIndex:
    """Tags of a workspace's source files; only new or changed files are parsed."""

    def __init__(self, root: Path, cache_dir: Path | None = None):
        self.root = root
        self.cache_dir = cache_dir
        self.generation = 0  # bumped whenever some file's tags change
        self._entries: dict[str, _Entry] = {}
        self._loaded = cache_dir is None

    def update(self, rels: list[str], prune: bool = False) -> dict[str, FileTags]:
        """Tags of the given workspace-relative files (unsupported or unreadable ones left out).
        `prune`: `rels` is the whole source tree; forget every other file."""
        if not self._loaded:
            self._load()
        changed = False
        out: dict[str, FileTags] = {}
        root = str(self.root)
        for rel in rels:
            language = language_for(rel)
            if language is None:
                continue
            try:
                st = os.lstat(os.path.join(root, rel))  # lstat: a symlink may lead out of the workspace
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                continue
            key = (st.st_mtime_ns, st.st_size)
            entry = self._entries.get(rel)
            if entry is None or entry.key != key:
                try:
                    tags = extract((self.root / rel).read_bytes(), language)
                except (OSError, ImportError):  # unreadable, or that grammar is not installed
                    continue
                entry = self._entries[rel] = _Entry(key, tags)
                changed = True
            out[rel] = entry.tags
        if prune and len(out) != len(self._entries):
            self._entries = {rel: self._entries[rel] for rel in out}
            changed = True
        if changed:
            self.generation += 1
            self._save()
        return out

    def _cache_usable(self) -> bool:
        """The repository could make .clover/cache a symlink to elsewhere: then it is not used."""
        if self.cache_dir is None:
            return False
        try:
            return self.cache_dir.resolve().is_relative_to(self.root.resolve())
        except (OSError, RuntimeError):
            return False

    def _load(self) -> None:
        """Tags from the disk cache. It comes from the repository: data, checked, never code (no pickle)."""
        self._loaded = True
        if self.cache_dir is None or not self._cache_usable():
            return
        try:
            raw = jsonsafe.loads((self.cache_dir / CACHE_FILE).read_text(encoding="utf-8"))  # never RecursionError
            for rel, (mtime_ns, size, defs, refs) in raw["files"].items():
                definitions = [Definition(str(n), str(k), int(line), str(t)) for n, k, line, t in defs]
                tags = FileTags(definitions, {str(name): int(count) for name, count in refs.items()})
                self._entries[str(rel)] = _Entry((int(mtime_ns), int(size)), tags)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            self._entries.clear()  # missing or damaged: rebuild

    def _save(self) -> None:
        if self.cache_dir is None:
            return
        files = {rel: [*e.key, e.tags.definitions, e.tags.references] for rel, e in self._entries.items()}
        if not self._cache_usable():
            return
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            ignore = self.cache_dir / ".gitignore"
            if not os.path.lexists(ignore):
                ignore.write_text("# clover-code cache\n*\n")
            # mkstemp: a fresh name (O_EXCL), so no planted symlink is followed
            fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=f".{CACHE_FILE}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"files": files}, fh, separators=(",", ":"))
                os.replace(tmp, self.cache_dir / CACHE_FILE)
            finally:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
        except OSError:
            pass  # a read-only workspace: the in-memory cache still works


class _Graph:
    """Reference edges as arrays: edge e goes from file src[e] to file dst[e], for definition key[e]."""

    def __init__(self, tags: dict[str, FileTags]):
        import numpy as np

        self.files = sorted(tags)
        index = {rel: i for i, rel in enumerate(self.files)}
        definers: dict[str, list[int]] = {}
        for rel in self.files:
            for name in {d.name for d in tags[rel].definitions}:
                definers.setdefault(name, []).append(index[rel])
        self.keys: list[tuple[int, str]] = [(j, name) for name, js in definers.items() for j in js]
        key_of = {k: n for n, k in enumerate(self.keys)}
        src, key, weight = [], [], []
        for rel in self.files:
            i = index[rel]
            for name, count in tags[rel].references.items():
                js = definers.get(name)
                if js and len(js) <= MAX_DEFINERS:
                    w = _identifier_weight(name, len(js)) * math.sqrt(count)
                    for j in js:
                        src.append(i)
                        key.append(key_of[(j, name)])
                        weight.append(w)
        self.src = np.array(src, dtype=np.int64)
        self.key = np.array(key, dtype=np.int64)
        self.weight = np.array(weight, dtype=np.float64)
        self.key_file = np.array([j for j, _ in self.keys], dtype=np.int64)
        self.dst = self.key_file[self.key]
        self.key_names = [name for _, name in self.keys]

    def rank(self, focus: set[str], mentioned: set[str]) -> list[tuple[int, str]]:
        """Definition keys (file index, name), best first."""
        import numpy as np

        n = len(self.files)
        in_focus = np.array([rel in focus for rel in self.files], dtype=bool)
        weight = self.weight * np.where(in_focus[self.src], 50.0, 1.0)
        named = np.array([name in mentioned for name in self.key_names], dtype=bool)
        weight = weight * np.where(named[self.key], 10.0, 1.0)
        personal = in_focus / in_focus.sum() if in_focus.any() else np.full(n, 1.0 / n)
        file_rank = pagerank(n, self.src, self.dst, weight, personal)
        flow = file_rank[self.src] * weight / np.bincount(self.src, weights=weight, minlength=n)[self.src]
        score = np.bincount(self.key, weights=flow, minlength=len(self.keys)).astype(np.float64)
        score += 1e-3 * file_rank[self.key_file]  # unreferenced definitions follow their file
        score *= np.where(named, 10.0, 1.0)  # what the task names comes first, referenced or not
        order = np.lexsort((self.key_file, -score))  # best first; ties by path
        return [self.keys[k] for k in order.tolist()]


def _identifier_weight(name: str, n_definers: int) -> float:
    """Long specific names say more than short or private ones; names defined everywhere say little."""
    weight = 1.0
    if len(name) >= 8 and ("_" in name or name.lower() != name):
        weight *= 10
    if name.startswith("_"):
        weight *= 0.1
    if n_definers > 5:
        weight *= 0.1
    return weight


def pagerank(n: int, src: NDArray[np.int64], dst: NDArray[np.int64], weight: NDArray[np.float64],
             personal: NDArray[np.float64], damping: float = 0.85, tol: float = 1e-9) -> NDArray[np.float64]:
    """Personalised PageRank by power iteration; dangling files teleport to `personal`."""
    import numpy as np

    out = np.bincount(src, weights=weight, minlength=n).astype(np.float64)
    share = weight / out[src]
    dangling = out == 0
    rank = personal.copy()
    for _ in range(100):
        flow = np.bincount(dst, weights=rank[src] * share, minlength=n).astype(np.float64, copy=False)  # float already
        new = damping * flow
        new += (damping * rank[dangling].sum() + 1 - damping) * personal
        done = np.abs(new - rank).sum() < tol
        rank = new
        if done:
            break
    return rank


def render(files: list[str], tags: dict[str, FileTags], keys: list[tuple[int, str]]) -> str:
    """Files in order of their best definition; each file's chosen definitions in line order."""
    chosen: dict[int, set[str]] = {}
    for j, name in keys:
        chosen.setdefault(j, set()).add(name)
    parts = []
    for j, names in chosen.items():
        rel = files[j]
        lines = {d.line: d.text for d in tags[rel].definitions if d.name in names}
        parts.append(f"{rel}:\n" + "".join(f"{line + 1:>6} {text}\n" for line, text in sorted(lines.items())))
    return "".join(parts)


class CodeMap:
    """One workspace's map of definitions; thread-safe (tools run it off the event loop)."""

    def __init__(self, root: Path, cache_dir: Path | None = None):
        self.index = TagIndex(root, cache_dir)
        self._lock = threading.Lock()
        self._graph: tuple[_State, _Graph] | None = None
        self._memo: dict[tuple[_State, tuple[str, ...], tuple[str, ...], int], str] = {}

    def tags(self, rels: list[str]) -> dict[str, FileTags]:
        with self._lock:
            return self.index.update(rels)

    def render(self, rels: list[str], focus: Iterable[str] = (), mentioned: Iterable[str] = (),
               max_tokens: int = 1024) -> str:
        """The map of the source files among `rels` (the whole tree), at most `max_tokens` long."""
        with self._lock:
            tags = self.index.update(rels, prune=True)
            state: _State = (self.index.generation, tuple(sorted(tags)))
            memo_key = (state, tuple(sorted(focus)), tuple(sorted(mentioned)), max_tokens)
            if memo_key not in self._memo:
                if len(self._memo) > 32:
                    self._memo.clear()
                self._memo[memo_key] = self._fit(state, tags, set(focus), set(mentioned), max_tokens)
            return self._memo[memo_key]

    def _fit(self, state: _State, tags: dict[str, FileTags], focus: set[str], mentioned: set[str],
             max_tokens: int) -> str:
        if not tags:
            return ""
        if self._graph is None or self._graph[0] != state:
            self._graph = (state, _Graph(tags))
        graph = self._graph[1]
        keys = graph.rank(focus, mentioned)

        def fits(n: int) -> str | None:
            text = render(graph.files, tags, keys[:n])
            return text if estimate_tokens(text) <= max_tokens else None

        # Binary search for the most definitions that fit. Each one costs about a token or
        # more, so the search starts below max_tokens and widens only if that all fits.
        hi = min(len(keys), max_tokens)
        while hi < len(keys) and fits(hi) is not None:
            hi = min(len(keys), hi * 2)
        lo, best = 0, ""
        while lo < hi:
            mid = (lo + hi + 1) // 2
            text = fits(mid)
            if text is not None:
                lo, best = mid, text
            else:
                hi = mid - 1
        return best
