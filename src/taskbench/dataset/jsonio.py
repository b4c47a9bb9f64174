"""JSON and JSON Lines reading/writing with errors that name file:line.

Writers are crash-safe: :func:`write_json` writes a temporary file and renames it; :class:`JsonlAppender`
appends whole lines with one unbuffered write each (fsynced at most once a second and on close), and
:func:`read_jsonl` tolerates a torn last line (a line without its newline) when asked, so an interrupted append
never corrupts what was already written. New files get the permissions any new file of the user gets (mode 0666 minus the umask).

Readers never end in a traceback on hostile text: a syntax error, nesting deeper than Python can parse, an
integer literal longer than Python converts (4,300 digits) and bytes that are not UTF-8 all become one
:class:`InputError` naming the file and line. Writers never fail on a lone surrogate (a ``"\\ud800"`` escape
in the input decodes to one): it is written back as the same JSON escape.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import InputError

_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(text: str | bytes, *, path: str | Path | None = None, line: int | None = None,
          hint: str = "fix or remove this line") -> Any:
    """``json.loads`` whose every failure is one :class:`InputError` at ``path:line`` (the line of a syntax
    error is counted from ``line``, or from 1 when it is None)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line + exc.lineno - 1
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=at, hint=hint) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=path, line=line,
                         hint="arrays and objects nested about a thousand levels deep; flatten this value") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=line) from None
    except ValueError as exc:  # an integer literal longer than Python converts (sys.get_int_max_str_digits)
        what = "an integer with more than 4300 digits" if "integer string conversion" in str(exc) else str(exc)
        raise InputError(f"invalid JSON: {what}", path=path, line=line, hint=hint) from None


def encode_text(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (which UTF-8 cannot hold) becomes its JSON escape ``\\udXXX``, so
    JSON text keeps meaning the same string."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def check_input_file(path: str | Path) -> None:
    """Raise :class:`InputError` when ``path`` exists but is no regular file to read: a FIFO (reading it waits
    for a writer forever), a device (``/dev/zero`` never ends, ``/dev/full`` neither) or a socket; or when it
    cannot even be looked at (a name too long, no permission). A missing file or a directory is left to the
    caller's own message. Never blocks (it only looks at the file's type)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError("not a regular file (a device, a pipe or a socket); give a file", path=path)


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON document; a missing file or a syntax error raises :class:`InputError`."""
    path = Path(path)
    check_input_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
    if not text.strip():
        raise InputError("the file is empty", path=path, hint="expected a JSON document")
    return loads(text, path=path)


def iter_jsonl(
    path: str | Path, *, allow_torn_tail: bool = False, errors: list[InputError] | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSON Lines file.

    With ``allow_torn_tail`` a last line that has no trailing newline and does not parse is skipped (it is
    what an interrupted append leaves behind). A line that cannot be read (bad JSON, not UTF-8, nested too
    deeply, a giant integer) raises :class:`InputError`, or, when an ``errors`` list is given, is appended
    to it and skipped, so one bad line does not stop a whole file.
    """
    path = Path(path)
    check_input_file(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
    with fh:
        data = fh.read()
    lines = data.split(b"\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8"))  # (json.loads of bytes detects the encoding: slower)
        except ValueError:  # JSONDecodeError, UnicodeDecodeError, a giant integer
            if allow_torn_tail and i == last:
                return
            err = _line_error(raw, path, i + 1)
        except RecursionError:
            err = _line_error(raw, path, i + 1)
        else:
            yield i + 1, value
            continue
        if errors is None:
            raise err
        errors.append(err)


def _line_error(raw: bytes, path: Path, line: int) -> InputError:
    """The :class:`InputError` of one JSON Lines line that did not parse."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not UTF-8 text ({exc.reason})", path=path, line=line)
    try:
        loads(text, path=path, line=line, hint="each line must be one complete JSON object")
    except InputError as err:
        return err
    return InputError("cannot read this line", path=path, line=line)  # pragma: no cover - it parsed the 2nd time


def read_jsonl(path: str | Path, *, allow_torn_tail: bool = False) -> list[Any]:
    """All values of a JSON Lines file (see :func:`iter_jsonl`)."""
    return [v for _, v in iter_jsonl(path, allow_torn_tail=allow_torn_tail)]


def read_json_or_jsonl(path: str | Path) -> list[Any]:
    """A list of records from a file that is either a JSON array or JSON Lines."""
    path = Path(path)
    check_input_file(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 12).lstrip()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a file, found a directory", path=path) from None
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


def model_json(model: Any) -> Any:
    """``model.model_dump(mode="json")`` of a pydantic model, also when a string holds a lone surrogate (from a
    ``"\\ud800"`` escape in the input), which pydantic's JSON mode cannot encode: then the Python dump, made
    JSON-compatible by a round trip through :func:`json.dumps` (datetimes and paths as text)."""
    try:
        return model.model_dump(mode="json")
    except UnicodeEncodeError:
        return json.loads(json.dumps(model.model_dump(mode="python"), default=str))


def write_jsonl(path: str | Path, values: list[Any]) -> None:
    """Write JSON Lines atomically (temporary file + rename)."""
    _atomic_write(Path(path), "".join(dumps_line(v) + "\n" for v in values))


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) atomically (temporary file + rename): readers see the old file or the new one."""
    _atomic_write(Path(path), text)


def _atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path) as fh:
        fh.write(text if isinstance(text, bytes) else encode_text(text))


@contextmanager
def atomic_writer(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through: a temporary file in the same directory, fsynced and renamed over
    ``path`` when the block ends (removed if it raises), so readers never see half a file.

    The file is created with mode 0666 minus the umask, as ``open(path, "w")`` would create it (a colleague on
    a shared machine can read what a run wrote if the user's umask allows it)."""
    path = Path(path)
    check_output_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temporary(path)
    except OSError as exc:  # a parent that is a file, a symlink loop, no permission, a full disk
        raise _unwritable(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:
            raise _unwritable(path, exc) from None  # a full disk, a directory put there meanwhile: one line
        raise


_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EISDIR,
                           errno.ENOTDIR, errno.EACCES, errno.EPERM})
"""errno values of a write that failed because of where it went (turned into one :class:`InputError` line)."""


def _unwritable(path: Path, exc: OSError) -> InputError:
    """One line for a file that could not be written (what the system said, and what to do)."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return InputError(f"cannot write here ({why}); nothing was written", path=path,
                          hint="free some space, or choose another output path")
    if isinstance(exc, IsADirectoryError):
        return InputError("the output is a directory; give a file path", path=path)
    if isinstance(exc, FileExistsError | NotADirectoryError):  # mkdir or open met a file where a folder goes
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            why = f"{blocker} is a file, not a directory"
    return InputError(f"cannot write here ({why})", path=path, hint="choose another output path")


def check_output_file(path: str | Path) -> None:
    """Raise :class:`InputError` when ``path`` cannot be an output file that is replaced whole: no name (an
    empty path becomes '.'), a directory, or something that exists and is not a regular file (``/dev/full``,
    ``/dev/null``, a pipe: renaming a file over a device would replace the device itself)."""
    path = Path(path)
    if str(path) == ".":
        raise InputError("no output file name given (an empty path, or '.'); give a file path")
    if path.is_dir():
        raise InputError("the output is a directory; give a file path", path=path)
    if path.exists() and not path.is_file():
        raise InputError("the output exists and is not a regular file (a device, a pipe or a socket); give a file "
                         "path", path=path)


def make_directory(path: str | Path, *, option: str = "--output") -> Path:
    """Make the output directory ``path`` (and its parents); a file where it goes, no name, or a directory that
    cannot be made is one :class:`InputError` line."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("the output must be a directory, and this is not one", path=path,
                         hint=f"choose another {option}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    return path


def check_writable(path: str | Path) -> None:
    """Raise :class:`InputError` now when a file cannot be written at ``path`` later: it is a directory, or a
    part of its parent path is a file or a symlink loop (so a command fails before its model calls, not
    after them)."""
    path = Path(path)
    check_output_file(path)
    for parent in (path.parent, *path.parent.parents):
        try:
            parent.stat()
        except FileNotFoundError:
            continue  # made when the file is written
        except OSError as exc:
            raise _unwritable(path, exc) from None
        if not parent.is_dir():
            raise InputError(f"cannot write here ({parent} is a file, not a directory)", path=path,
                             hint="choose another output path")
        break


def _create_temporary(path: Path) -> tuple[int, str]:
    """Create a new, empty ``.<name>.<random>.tmp`` next to ``path``; mode 0666 is narrowed by the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file next to {path}")  # pragma: no cover


def torn_tail(path: str | Path, *, limit: int = 1 << 20) -> bytes | None:
    """The bytes after the last newline of ``path`` when it does not end in one (at most ``limit`` of them: the
    start of that last line), or None (no such file, an empty file, or one that ends in a newline)."""
    try:
        with Path(path).open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size == 0:
                return None
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return None
            pos = size
            chunk = 1 << 16
            while pos > 0:
                start = max(0, pos - chunk)
                fh.seek(start)
                buf = fh.read(pos - start)
                nl = buf.rfind(b"\n")
                if nl >= 0:
                    fh.seek(start + nl + 1)
                    return fh.read(limit)
                pos = start
            fh.seek(0)
            return fh.read(limit)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class JsonlAppender:
    """Append complete JSON lines to a file, crash-safely.

    Each :meth:`write` issues a single unbuffered ``write`` of the full line including its newline, so the
    moment it returns the line is in the operating system's hands: a killed process (``kill -9``, an OOM kill, a
    crash) loses nothing written. ``fsync`` says when the file is also forced to the disk, which only matters if
    the machine itself goes down: ``True`` after every line, ``False`` only on close, or a number of seconds
    (the default, 1.0): at most that often, and on close, so a power cut loses at most the last second and a
    fast writer does not pay a disk flush per record. If the file ends in a torn line (no newline: a previous
    process died mid-write), it is truncated back to the last newline on open, so the next record starts on a
    fresh line; a last line that is complete JSON without its newline (a hand edit) gets the newline instead,
    so no whole record is lost.
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
            tail = torn_tail(self.path)
            if tail is not None and len(tail) < 1 << 20:
                try:
                    json.loads(tail.decode("utf-8"))
                except (ValueError, RecursionError):
                    pass
                else:  # a whole line that only lacks its newline: keep it
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")
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
        """Append one record as one line. A write the disk refuses (full, over a quota) is undone to the last
        whole line and raised as one :class:`InputError`; the lines written before it are kept."""
        data = memoryview(encode_text(dumps_line(value) + "\n"))
        fd = self._fh.fileno()
        size = os.fstat(fd).st_size
        try:
            while data:
                written = self._fh.write(data)  # a raw write may take part of the line (a disk filling up)
                if not written:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                data = data[written:]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # no torn line left behind
            if exc.errno in _WRITE_ERRORS:
                why = exc.strerror or str(exc)
                raise InputError(f"cannot write here ({why}); the records written before are kept", path=self.path,
                                 hint="free some space and run the command again: it resumes") from None
            raise
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
