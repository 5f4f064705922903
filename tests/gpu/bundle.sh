#!/usr/bin/env bash
# Packs the GPU checks built on this (GPU-less) machine into .gpu-bundle/ at the repository root, for a GPU machine
# whose image cannot build the whole project (it lacks the library's Debian packages and has no network): the
# device collectives check (tern_gpu_device_check), the codec check (codec_cuda_test), the launcher, libtern.so
# and every shared library they need beyond glibc and libstdc++, plus the Python package (tern.torch with its
# extension, built against this machine's project venv torch: it loads on the GPU machine only under the same torch
# version, else run.sh reports that check NOT RUN). tests/gpu/run.sh uses the bundle when it exists.
# The bundle is ignored by git (.gitignore); carry it to the GPU machine (the device tool's `carry`).
# Usage: tests/gpu/bundle.sh [BUILD_DIR (default build)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
cmake --build "$build" -j "$(nproc)" --target tern tern-run tern_gpu_device_check codec_cuda_test >/dev/null
out=$root/.gpu-bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for b in tern-run tern_gpu_device_check codec_cuda_test; do
  cp "$build/bin/$b" "$out/bin/"
  strip --strip-debug "$out/bin/$b"
done
cp -L "$build/libtern.so.0" "$out/lib/libtern.so.0"
strip --strip-debug "$out/lib/libtern.so.0"
# What the loader resolves outside glibc, libstdc++ and libgcc: the image may not have it.
for f in "$out"/bin/* "$out/lib/libtern.so.0"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libgcc_s.so.* | libstdc++.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libtern.so.*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
# The torch backend: the package as the build tree lays it out (python/tern with _C*.so), with libtern beside it.
if cmake --build "$build" -j "$(nproc)" --target tern_torch >/dev/null 2>&1 && [[ -d $build/python/tern ]]; then
  mkdir -p "$out/python"
  cp -rL "$build/python/tern" "$out/python/"
  find "$out/python" -name '__pycache__' -prune -exec rm -rf {} +
  for so in "$out"/python/tern/_C*.so; do strip --strip-debug "$so"; done
  "$(bash "$root/tools/python-env.sh" 2>/dev/null || echo python3)" -c 'import torch; print(torch.__version__)' \
    >"$out/python/TORCH_VERSION" 2>/dev/null || echo unknown >"$out/python/TORCH_VERSION"
else
  echo "tests/gpu/bundle.sh: the torch extension (target tern_torch) did not build; the bundle has no tern.torch"
fi
git -C "$root" rev-parse HEAD >"$out/COMMIT"
echo "tests/gpu/bundle.sh: $(du -sh "$out" | cut -f1) in $out (commit $(cut -c1-12 "$out/COMMIT"))"
