#!/usr/bin/env bash
# Generate the Python code of the CRI v1 subset (kubecore_cri/proto/api.proto) with grpcio-tools:
# kubecore_cri/_pb/api_pb2.py and api_pb2_grpc.py. The generated files are committed; a test
# regenerates them into a temporary directory and compares.
#
#   bash scripts/gen-cri-proto.sh [OUTDIR]     (default: kubecore_cri/_pb)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/kubecore_cri/_pb}"
python="${PYTHON:-python3}"
mkdir -p "$out"
"$python" -m grpc_tools.protoc \
    --proto_path="$here/kubecore_cri/proto" \
    --python_out="$out" \
    --grpc_python_out="$out" \
    api.proto
# protoc writes `import api_pb2`; inside the package it must be the package's module.
sed -i 's/^import api_pb2 as api__pb2$/from kubecore_cri._pb import api_pb2 as api__pb2/' \
    "$out/api_pb2_grpc.py"
