#!/usr/bin/env bash
# Build llama-cpp-python for a stated x86-64 instruction baseline, once, into a folder whose name records the
# version and every compiler flag, and print the wheel's path. Never -march=native, never pip's wheel cache:
# pip caches a wheel it compiled under the sdist's name whatever CMAKE_ARGS were, and hands it to the next
# install, where it can crash on a CPU that lacks one of its instructions (SIGILL). See docs/embedded-model.md.
#
#   scripts/build-llama-wheel.sh PYTHON            -> prints the wheel path (builds it if missing)
#   LLAMA_BASELINE=x86-64-v2 scripts/build-llama-wheel.sh PYTHON   (for CPUs without AVX2)
#
# Environment: LLAMA_VERSION (default below), LLAMA_BASELINE (x86-64-v3 = AVX2+FMA+F16C+BMI2, the default;
# x86-64-v2 = SSE4.2 only), TASKBENCH_WHEELS (where wheels are kept; default ~/.cache/taskbench/wheels).
set -euo pipefail
PY="${1:?usage: build-llama-wheel.sh PYTHON}"
VERSION="${LLAMA_VERSION:-0.3.36}"
BASELINE="${LLAMA_BASELINE:-x86-64-v3}"
ARCH="$(uname -m)"
COMMON="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
NO_WIDE="-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if [ "$ARCH" = x86_64 ]; then
  case "$BASELINE" in
    x86-64-v3) ISA="-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;;
    x86-64-v2) ISA="-DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_BMI2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF" ;;
    *) echo "build-llama-wheel: unknown LLAMA_BASELINE '$BASELINE' (x86-64-v3 or x86-64-v2)" >&2; exit 2 ;;
  esac
  FLAGS="$COMMON $ISA $NO_WIDE"
else
  # other architectures: llama.cpp's own portable defaults for the target, still never native
  BASELINE="$ARCH-generic"
  FLAGS="$COMMON"
fi
HASH="$(printf '%s' "$VERSION $FLAGS $("$PY" -c 'import sys; print(sys.implementation.cache_tag)')" | sha256sum | cut -c1-12)"
ROOT="${TASKBENCH_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/taskbench/wheels}"
DIR="$ROOT/llama-cpp-python-$VERSION-$BASELINE-$HASH"
if ! ls "$DIR"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  mkdir -p "$ROOT"
  TMP="$(mktemp -d "$ROOT/.build-XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  echo "build-llama-wheel: compiling llama-cpp-python $VERSION for $BASELINE (5-20 minutes on 2 cores, once)" >&2
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    "$PY" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
      "llama-cpp-python==$VERSION" -w "$TMP" >&2
  printf '%s\n' "version=$VERSION" "baseline=$BASELINE" "cmake_args=$FLAGS" > "$TMP/BUILD_FLAGS"
  mv "$TMP" "$DIR.partial.$$" && rm -rf "$DIR" && mv "$DIR.partial.$$" "$DIR"
  trap - EXIT
fi
ls "$DIR"/llama_cpp_python-*.whl | head -1
