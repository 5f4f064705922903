#!/usr/bin/env bash
# One-shot GPU check, for a machine with an NVIDIA GPU (a few minutes on an H200):
#   1. the programs: from .gpu-bundle/ when it exists (tests/gpu/bundle.sh packs them on a machine that builds the
#      whole project; a GPU image without the library's Debian packages cannot), else built here with CUDA (the
#      full project; if its configure fails, the codecs alone via the standalone src/compress/cuda project);
#   2. codec_cuda_test: GPU payloads, residuals and decodes equal the CPU's bit for bit, for every codec, input
#      dtype, many sizes, seeds and offsets, with and without error feedback; then the GPU throughput table of every
#      kernel (encode, encode with error feedback, decode) next to the device-to-device copy bandwidth;
#   3. tern_gpu_device_check on 2, 3 and 4 ranks sharing the GPU: the collectives matrix (every collective, dtype and
#      op, in and out of place) on cudaMalloc buffers through the stream-ordered calls of tern_cuda.h; then, on 2
#      ranks, TERN_COMPRESS for every codec on device buffers (the codecs on the GPU) against the host path's bits;
#   4. tests/gpu/torch_cuda_check.py on 2 ranks: the torch.distributed backend on CUDA tensors (every collective,
#      stream order, a DDP step), with the bundle's tern.torch when the machine's torch is the one it was built for.
# A part that cannot run is reported as NOT RUN and makes the exit status non-zero: nothing here passes by skipping.
# Usage: tests/gpu/run.sh [codec_cuda_test options, e.g. --quick --bench-mib=1024]
# Environment: BUILD (build directory, default build-gpu), JOBS, TERN_CUDA_ARCHITECTURES (default 90-real),
#   BUNDLE (default .gpu-bundle; BUNDLE=none builds even when a bundle exists).
# Exit status: 0 when every part ran and passed, 1 otherwise, 77 = SKIPPED: no CUDA device.
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

bundle=${BUNDLE:-$root/.gpu-bundle}
status=0
if [[ "$bundle" != none && -x "$bundle/bin/tern_gpu_device_check" ]]; then
  echo "== using the bundle $bundle (commit $(cat "$bundle/COMMIT" 2>/dev/null || echo unknown); this tree is" \
    "$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown))"
  export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  codec_bin=$bundle/bin/codec_cuda_test
  check_bin=$bundle/bin/tern_gpu_device_check
  launcher=$bundle/bin/tern-run
else
  mkdir -p "$build"
  if cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON \
       -DCMAKE_CUDA_COMPILER="$nvcc" -DTERN_CUDA_ARCHITECTURES="$archs" >"$build/configure.log" 2>&1 &&
     grep -q "tern: CUDA kernels ON" "$build/configure.log"; then
    echo "== building the GPU checks (full project, $archs)"
    cmake --build "$build" -j "$jobs" --target codec_cuda_test tern_gpu_device_check tern-run
    codec_bin=$build/bin/codec_cuda_test
    check_bin=$build/bin/tern_gpu_device_check
    launcher=$build/bin/tern-run
  else
    echo "== full configure unavailable here (see $build/configure.log); building the codecs standalone ($archs)"
    cmake -S "$root/src/compress/cuda" -B "$build/codec" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DTERN_CUDA_ARCHITECTURES="$archs" >"$build/codec-configure.log" 2>&1 ||
      { cat "$build/codec-configure.log"; exit 1; }
    cmake --build "$build/codec" -j "$jobs" --target codec_cuda_test
    codec_bin=$build/codec/bin/codec_cuda_test
    check_bin=
  fi
fi
echo "== ready in $(( $(date +%s) - start )) s"

echo "== codec_cuda_test $*"
"$codec_bin" "$@" || { echo "== codec_cuda_test FAILED (exit status $?)"; status=1; }

if [[ -n "$check_bin" ]]; then
  for n in 2 3 4; do
    echo "== device collectives, $n ranks on the GPU: tern-run -n $n tern_gpu_device_check all --large lean"
    if ! TERN_TIMEOUT=${TERN_TIMEOUT:-120} "$launcher" -n "$n" --timeout 300 "$check_bin" all --large lean; then
      echo "== device collectives on $n ranks FAILED"
      status=1
    fi
  done
  # Each rank sits on its GPU in the job topology, and the model prices the device engines on its links.
  echo "== GPU placement and the device engine's price: 2 ranks, TERN_DEBUG=INFO (TOPO, TUNE)"
  log=$(TERN_DEBUG=INFO TERN_DEBUG_SUBSYS=TOPO,TUNE TERN_TIMEOUT=${TERN_TIMEOUT:-120} \
    "$launcher" -n 2 --timeout 300 "$check_bin" all --large none 2>&1) || { echo "$log" | tail -20; status=1; }
  echo "$log" | grep -E "topology: host|on device buffers: " | sort -u | head -8 || true
  if [[ $(echo "$log" | grep -c "topology: host.*, GPU ") -ne 2 ]] ||
    ! echo "$log" | grep -q "on device buffers: nccl (.*) .*, staged"; then
    echo "== GPU placement or the device engine's price MISSING from the log"
    status=1
  fi
  for codec in sign qsgd:4 topk:0.01 bf16; do
    echo "== TERN_COMPRESS=$codec on device buffers, GPU codecs against the host path: 2 ranks"
    if ! TERN_COMPRESS=$codec TERN_COMPRESS_WHEN=always TERN_TIMEOUT=${TERN_TIMEOUT:-120} \
      "$launcher" -n 2 --timeout 300 "$check_bin" compressed; then
      echo "== TERN_COMPRESS=$codec on device buffers FAILED"
      status=1
    fi
  done
else
  echo "== device collectives NOT RUN: no bundle and the full project does not build here (run tests/gpu/bundle.sh" \
    "where it does and carry .gpu-bundle)"
  status=1
fi
py=$(command -v python3 || true)
torch_here=$([[ -n $py ]] && "$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)
torch_bundle=$(cat "$bundle/python/TORCH_VERSION" 2>/dev/null || echo none)
if [[ -d "$bundle/python/tern" && $torch_here == "$torch_bundle" ]]; then
  echo "== torch backend on CUDA tensors (torch $torch_here): torch_cuda_check.py 2"
  PYTHONPATH=$bundle/python${PYTHONPATH:+:$PYTHONPATH} TERN_TIMEOUT=${TERN_TIMEOUT:-120} \
    "$py" "$root/tests/gpu/torch_cuda_check.py" 2 || { echo "== torch backend on CUDA FAILED or NOT RUN"; status=1; }
else
  echo "== torch backend on CUDA NOT RUN: the bundle's tern.torch was built for torch $torch_bundle, this machine" \
    "has torch $torch_here"
  status=1
fi
echo "== total $(( $(date +%s) - start )) s, exit status $status"
exit $status
