#!/usr/bin/env bash
# Packs the GPU checks built on this (GPU-less) machine into .gpu-bundle/ at the repository root, for a GPU machine
# whose image cannot build the whole project (it lacks the library's Debian packages and has no network): the
# device collectives check (tern_gpu_device_check), the codec check (codec_cuda_test), the launcher, libtern.so
# and every shared library they need beyond glibc and libstdc++. tests/gpu/run.sh uses the bundle when it exists.
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
git -C "$root" rev-parse HEAD >"$out/COMMIT"
echo "tests/gpu/bundle.sh: $(du -sh "$out" | cut -f1) in $out (commit $(cut -c1-12 "$out/COMMIT"))"
