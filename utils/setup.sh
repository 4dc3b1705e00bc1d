#!/usr/bin/env bash
# Installs every Debian package dp needs to build and run its tests, and
# nothing else. Safe to run again: it installs only what is missing.
#
#   utils/setup.sh            build + test dependencies
#
# Exporting the bundled models again (utils/export-models.py) needs
# python3-torch, python3-torchvision and python3-onnx in addition; CI never
# does that.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ python3
  # LLVM Support, FileCheck/not/split-file/lit, and what LLVM's CMake
  # package asks for
  llvm-14-dev llvm-14-tools zlib1g-dev libtinfo-dev libxml2-dev libffi-dev
  libz3-dev
  # ONNX: protobuf model, parser, checker, shape inference; protoc encodes
  # test fixtures
  libonnx-dev libprotobuf-dev protobuf-compiler
  # oneDNN: cost-annotate{source=onednn} measures ops on this CPU. Debian
  # builds it with the OpenCL GPU runtime, so its CMake package does
  # find_package(OpenCL REQUIRED); libdnnl-dev only recommends the OpenCL
  # development files, and recommends are not installed here
  libdnnl-dev ocl-icd-opencl-dev
  # graph partitioning, the LP solver of the placers and the lower bound,
  # and the MIP solver of place{algo=mip}
  libmetis-dev libscotch-dev libglpk-dev coinor-libcbc-dev
  # learned placers (lib/Learn): libtorch's C++ API, and an optimized BLAS
  # for it (the reference BLAS is ~20x slower on its matrix products)
  libtorch-dev libopenblas0-pthread
  # unit tests and benchmarks
  libgtest-dev libbenchmark-dev
  # hardening (docs/hardening.md): libFuzzer and the sanitizer runtimes of
  # clang 19 for the fuzz targets, and the ONNX operator test models that
  # the import sweep reads
  clang-19 libclang-rt-19-dev libonnx-testdata
  # emit's tests: the real ONNX checker on emitted models (python3-onnx, run
  # with /usr/bin/python3) and Graphviz rendering of emitted graphs (dot)
  python3-onnx graphviz
  # the PyTorch runtime (python/dp_torch) and its tests, which export
  # torchvision models with torch.onnx and compare with torch
  python3-torch python3-torchvision python3-numpy python3-pytest
  # the benchmark harness's charts (bench/dpbench/charts.py)
  python3-matplotlib
  # the HTML report's browser test (python/tests/test_html_report.py):
  # headless chromium renders the page and runs its script; chromium-driver
  # is its WebDriver, for checks that type into the page
  chromium chromium-driver
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
  --no-install-recommends "${missing[@]}"
