#!/usr/bin/env bash
# One-shot GPU check of tern's CUDA codecs, for a machine with an NVIDIA GPU (about 3-5 minutes on an H200):
#   1. configure and build with CUDA (the full project; if its configure fails for lack of Debian packages on a
#      bare GPU image, the codecs alone via the standalone src/compress/cuda project);
#   2. codec_cuda_test: GPU payloads, residuals and decodes equal the CPU's bit for bit, for every codec, input
#      dtype, many sizes, seeds and offsets, with and without error feedback;
#   3. the GPU throughput table of every kernel (encode, encode with error feedback, decode) next to the
#      device-to-device copy bandwidth.
# Usage: tests/gpu/run.sh [codec_cuda_test options, e.g. --quick --bench-mib=1024]
# Environment: BUILD (build directory, default build-gpu), JOBS, TERN_CUDA_ARCHITECTURES (default 90-real).
# Exit status: codec_cuda_test's (0 pass, 1 mismatch, 77 = SKIPPED: no CUDA device).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build-gpu}
jobs=${JOBS:-$(nproc)}
archs=${TERN_CUDA_ARCHITECTURES:-90-real}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no CUDA device (nvidia-smi finds no GPU)"
  exit 77
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader

nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
start=$(date +%s)

mkdir -p "$build"
if cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
     -DCMAKE_CUDA_COMPILER="$nvcc" -DTERN_CUDA_ARCHITECTURES="$archs" >"$build/configure.log" 2>&1 &&
   grep -q "tern: CUDA kernels ON" "$build/configure.log"; then
  echo "== building codec_cuda_test (full project, $archs)"
  cmake --build "$build" -j "$jobs" --target codec_cuda_test
  bin=$build/bin/codec_cuda_test
else
  echo "== full configure unavailable here (see $build/configure.log); building the codecs standalone ($archs)"
  cmake -S "$root/src/compress/cuda" -B "$build/codec" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DTERN_CUDA_ARCHITECTURES="$archs" >"$build/codec-configure.log" 2>&1 ||
    { cat "$build/codec-configure.log"; exit 1; }
  cmake --build "$build/codec" -j "$jobs" --target codec_cuda_test
  bin=$build/codec/bin/codec_cuda_test
fi
echo "== built in $(( $(date +%s) - start )) s; running $bin $*"
status=0
"$bin" "$@" || status=$?
echo "== total $(( $(date +%s) - start )) s, exit status $status"
exit $status
