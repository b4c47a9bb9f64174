"""The viewer's one way to open a file: a regular file inside a directory the viewer chose, resolved.

A run directory is data, not instructions: its run log names its predictions and metrics, a metrics header
names its predictions and gold, an episode names its trajectory, and any of its files may be a symbolic link.
None of that decides what the viewer reads. Every file the viewer opens is a :class:`RunFile`, made by
:func:`confine` from a path and the *roots* it must lie in, which the viewer picks, never the run:

- a run's own files (run log, header, predictions, metrics, trajectories, report.html): its run directory;
- gold data: a bundled dataset, a directory given with ``taskbench view --data``, or the run directory.

:meth:`RunFile.open` resolves the path, checks that it is inside a root, then opens it again one path component
at a time from the root with ``O_NOFOLLOW`` (a link swapped in after the check is refused, not followed) and
``O_NONBLOCK`` (a FIFO cannot hang the server), and serves it only when ``fstat`` says it is a regular file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ...errors import InputError

__all__ = ["Outside", "RunFile", "confine", "inside", "real_dir", "safe_dir"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)


class Outside(InputError):
    """A file a run names that the viewer does not read: outside its roots, not a regular file, or a link
    swapped in while it was opened."""


def real_dir(path: str | Path) -> Path:
    """``path`` resolved (symbolic links followed): the form roots are kept in."""
    return Path(os.path.realpath(path))


def inside(path: Path, root: Path) -> bool:
    """True when the resolved ``path`` is ``root`` or below it (both resolved)."""
    return path == root or root in path.parents


@dataclass(frozen=True)
class RunFile:
    """A file the viewer may read: ``path`` (resolved) inside ``root`` (resolved)."""

    path: Path
    root: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def suffix(self) -> str:
        return self.path.suffix

    def __str__(self) -> str:
        return str(self.path)

    def open(self) -> BinaryIO:
        """The file opened for reading; :class:`Outside` when it is no longer a regular file inside its root
        (a component replaced by a link, a FIFO, a device, a directory), :class:`InputError` when missing."""
        rel = self.path.relative_to(self.root).parts
        if not rel:
            raise Outside("is a directory, not a file", path=self.path)
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise InputError(f"cannot open its directory ({exc.strerror})", path=self.path) from None
        try:
            for part in rel[:-1]:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            nxt = os.open(rel[-1], _FILE_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        except FileNotFoundError:
            os.close(fd)
            raise InputError("file not found", path=self.path) from None
        except OSError as exc:
            os.close(fd)
            raise Outside(f"not opened ({exc.strerror}: a symbolic link or not a directory on the way)",
                          path=self.path) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise Outside("not a regular file (a FIFO, device, socket or directory is never read)", path=self.path)
        return os.fdopen(fd, "rb")

    def size(self) -> int:
        """The file's size in bytes (of the file itself, opened as :meth:`open` does)."""
        with self.open() as fh:
            return os.fstat(fh.fileno()).st_size

    def stamp(self) -> tuple[int, int]:
        """(size, mtime in ns): what a cache of this file's contents is keyed on."""
        with self.open() as fh:
            st = os.fstat(fh.fileno())
        return st.st_size, st.st_mtime_ns

    def is_file(self) -> bool:
        """True when :meth:`open` would succeed."""
        try:
            with self.open():
                return True
        except InputError:
            return False

    def read_bytes(self, limit: int) -> bytes:
        """The whole file, refused (:class:`InputError`) when it is over ``limit`` bytes."""
        with self.open() as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise InputError(f"file of {size / 1e6:.0f} MB is over the {limit >> 20} MB the viewer reads whole",
                                 path=self.path)
            data = fh.read(size)  # read(n) allocates n bytes up front: ask for the size, not the limit
            if fh.read(1):  # grew while read
                raise InputError(f"file grew past its size while read ({self.path.name})", path=self.path)
        return data


def confine(path: str | Path, roots: Iterable[Path], *, what: str = "file") -> RunFile:
    """``path`` as a :class:`RunFile` of the first root (resolved) it lies in once resolved; :class:`Outside`
    naming the roots when it lies in none (a ``../`` path, an absolute path elsewhere, a link out)."""
    real = Path(os.path.realpath(path))
    roots = list(roots)
    for root in roots:
        if inside(real, root) and real != root:
            return RunFile(real, root)
    where = " or ".join(str(r) for r in roots[:3]) or "(none)"
    raise Outside(f"{what} is outside the run directory ({where}): not read", path=path)


def safe_dir(path: str | Path, roots: Iterable[Path]) -> Path | None:
    """``path`` resolved, when it is a directory inside one of ``roots`` (None otherwise)."""
    real = real_dir(path)
    if any(inside(real, r) for r in roots) and real.is_dir():
        return real
    return None


def iter_dir(root: Path) -> Iterator[Path]:
    """The entries of ``root`` (nothing when it cannot be listed)."""
    try:
        yield from root.iterdir()
    except OSError:
        return
