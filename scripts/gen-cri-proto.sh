#!/usr/bin/env bash
# Generate the Python code of the CRI v1 subset (kubecore_cri/proto/api.proto) with grpcio-tools:
# kubecore_cri/_pb/api_pb2.py, the messages and the services' descriptors (the client stubs are
# built from those: kubecore_cri/_stubs.py). The generated file is committed; a test regenerates
# it into a temporary directory and compares.
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
    api.proto
