#!/bin/sh
# tests/gpu/smoke_run.sh BUILD OUT - early check of the agent on real CUPTI:
# a few runs of gpu_smoke with the agent, dumped with agentctl.
B=${1:-device/build}; OUT=${2:-/tmp/out}
export LD_LIBRARY_PATH=$(pwd)/device:${LD_LIBRARY_PATH:-}
S=/tmp/smoke-store; rm -rf $S
nvidia-smi -L
for how in return exit reset; do
  echo "== gpu_smoke 20000 4 $how"
  CUPTOP_STORE=$S CUPTOP_LOG=stderr CUDA_INJECTION64_PATH=$(pwd)/$B/libcuptop-agent.so \
      timeout 60 device/gpu_smoke 20000 4 $how; echo "rc=$?"
  $B/agentctl dump $S | head -60
done
echo "== count-only"
CUPTOP_SINK=null CUPTOP_STORE=$S CUDA_INJECTION64_PATH=$(pwd)/$B/libcuptop-agent.so timeout 60 device/gpu_smoke 20000 4; echo rc=$?
$B/agentctl dump $S | head -40
