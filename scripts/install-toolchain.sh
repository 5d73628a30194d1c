#!/usr/bin/env bash
# Installs what portcheck's compile step uses on Debian 12: hipcc (ROCm 5.2, clang 15)
# and the ROCm libraries Debian packages (hipRAND/rocRAND, hipSPARSE, rocPRIM), plus
# python3-venv and chromium (to test the HTML report as a browser shows it). Idempotent: installs only what is missing. Without root it only says
# what to install, and the compile tests skip (they are required in CI).
set -euo pipefail
need=()
python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
command -v hipcc >/dev/null 2>&1 || [ -x "${ROCM_PATH:-/opt/rocm}/bin/hipcc" ] || need+=(hipcc)
[ -f /usr/include/hiprand/hiprand.h ] || need+=(libhiprand-dev)
[ -f /usr/include/rocrand/rocrand.h ] || need+=(librocrand-dev)
[ -f /usr/include/hipsparse/hipsparse.h ] || need+=(libhipsparse-dev)
[ -d /usr/include/rocprim ] || need+=(librocprim-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium)  # the HTML report's browser tests
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "portcheck: for the compile step, install: ${need[*]} (apt-get install -y ...)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
echo "portcheck: installed ${need[*]}" >&2
