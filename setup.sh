#!/usr/bin/env bash
# Installs the Debian packages stratsim needs (only those missing; apt-get install -y is
# idempotent) and builds everything into build/ (the CLI at build/stratsim, the tests).
set -euo pipefail
cd "$(dirname "$0")"

# clang and libclang-rt-14-dev (libFuzzer and clang's ASan/UBSan runtimes for Debian 12's
# clang 14; clang only recommends it) build the fuzz targets; gcc's sanitizer runtimes come with
# build-essential; valgrind is for chasing what the sanitizers cannot see. Open MPI spreads
# search and sweep over ranks and runs the validate CPU runner; OpenBLAS times its GEMMs.
packages=(build-essential cmake pkg-config libglib2.0-dev libsqlite3-dev libcjson-dev
          gnuplot-nox libopenmpi-dev openmpi-bin libopenblas-dev clang libclang-rt-14-dev valgrind)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATSIM_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/stratsim"
