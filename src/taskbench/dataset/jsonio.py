"""JSON and JSON Lines reading/writing with errors that name file:line.

Writers are crash-safe: :func:`write_json` writes a temporary file and renames it; :class:`JsonlAppender`
appends whole lines with one unbuffered write each (fsynced at most once a second and on close), and :func:`read_jsonl` tolerates a torn last line (a line
without its newline) when asked, so an interrupted append never corrupts what was already written.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError


def _json_error(path: Path, exc: json.JSONDecodeError, line_offset: int = 0) -> InputError:
    return InputError(
        f"invalid JSON: {exc.msg} (column {exc.colno})",
        path=path,
        line=exc.lineno + line_offset,
        hint="fix or remove this line",
    )


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON document; a missing file or a syntax error raises :class:`InputError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None


def iter_jsonl(path: str | Path, *, allow_torn_tail: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSON Lines file.

    With ``allow_torn_tail`` a last line that has no trailing newline and does not parse is skipped (it is
    what an interrupted append leaves behind); otherwise every bad line raises :class:`InputError`.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path=path) from None
    with fh:
        data = fh.read()
    lines = data.split(b"\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=i + 1) from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if allow_torn_tail and i == last:
                return
            raise InputError(
                f"invalid JSON: {exc.msg} (column {exc.colno})",
                path=path,
                line=i + 1,
                hint="each line must be one complete JSON object",
            ) from None
        yield i + 1, value


def read_jsonl(path: str | Path, *, allow_torn_tail: bool = False) -> list[Any]:
    """All values of a JSON Lines file (see :func:`iter_jsonl`)."""
    return [v for _, v in iter_jsonl(path, allow_torn_tail=allow_torn_tail)]


def read_json_or_jsonl(path: str | Path) -> list[Any]:
    """A list of records from a file that is either a JSON array or JSON Lines."""
    path = Path(path)
    try:
        head = path.open("rb").read(1 << 12).lstrip()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    if head.startswith(b"["):
        value = read_json(path)
        if not isinstance(value, list):
            raise InputError("expected a JSON array or JSON Lines", path=path)
        return value
    return read_jsonl(path)


def dumps_line(value: Any) -> str:
    """One compact JSON line (no trailing newline), stable key order as given."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def write_json(path: str | Path, value: Any, *, indent: int | None = 2) -> None:
    """Write JSON atomically (temporary file + rename)."""
    _atomic_write(Path(path), json.dumps(value, ensure_ascii=False, indent=indent) + "\n")


def write_jsonl(path: str | Path, values: list[Any]) -> None:
    """Write JSON Lines atomically (temporary file + rename)."""
    _atomic_write(Path(path), "".join(dumps_line(v) + "\n" for v in values))


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class JsonlAppender:
    """Append complete JSON lines to a file, crash-safely.

    Each :meth:`write` issues a single unbuffered ``write`` of the full line including its newline, so the
    moment it returns the line is in the operating system's hands: a killed process (``kill -9``, an OOM kill, a
    crash) loses nothing written. ``fsync`` says when the file is also forced to the disk, which only matters if
    the machine itself goes down: ``True`` after every line, ``False`` only on close, or a number of seconds
    (the default, 1.0): at most that often, and on close, so a power cut loses at most the last second and a
    fast writer does not pay a disk flush per record. If the file ends in a torn line (no newline: a previous
    process died mid-write), it is truncated back to the last newline on open, so the next record starts on a
    fresh line.
    """

    def __init__(self, path: str | Path, *, fsync: bool | float = 1.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._interval = 0.0 if fsync is True else None if fsync is False else float(fsync)
        self._synced = time.monotonic()
        self._dirty = False
        self._repair_tail()
        self._fh = self.path.open("ab", buffering=0)

    def _repair_tail(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("r+b") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            # walk back to the last newline and cut the torn tail
            pos = size
            chunk = 1 << 16
            while pos > 0:
                start = max(0, pos - chunk)
                fh.seek(start)
                buf = fh.read(pos - start)
                nl = buf.rfind(b"\n")
                if nl >= 0:
                    fh.truncate(start + nl + 1)
                    return
                pos = start
            fh.truncate(0)

    def write(self, value: Any) -> None:
        """Append one record as one line."""
        self._fh.write((dumps_line(value) + "\n").encode("utf-8"))
        self._dirty = True
        if self._interval is not None and time.monotonic() - self._synced >= self._interval:
            self.sync()

    def sync(self) -> None:
        """Force what was written to the disk now."""
        if self._dirty and not self._fh.closed:
            os.fsync(self._fh.fileno())
            self._dirty = False
        self._synced = time.monotonic()

    def close(self) -> None:
        """Flush to the disk and close the file."""
        if not self._fh.closed:
            self.sync()
            self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
