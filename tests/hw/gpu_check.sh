#!/bin/bash
# On a real GPU node with Slurm and crisp installed (not part of CI):
#   tests/hw/gpu_check.sh IMAGE [MB]
# IMAGE: a CUDA image that ships no driver (e.g. nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04).
# Prints nvidia-smi -L and a CUDA device query from inside a --gres=gpu:1 step,
# then host-to-device and device-to-device copy bandwidth in the container and
# on bare metal, and their ratio.
set -euo pipefail
image=${1:?usage: $0 IMAGE [MB]}
mb=${2:-1024}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d "$HOME/.crisp-hw-XXXXXX")
trap 'rm -rf "$bin"' EXIT
cc -O2 -o "$bin/cuda_query" "$here/cuda_query.c" -ldl

echo "== nvidia-smi -L inside the container"
srun --gres=gpu:1 --container-image="$image" nvidia-smi -L
echo "== CUDA device query inside (CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES)"
srun --gres=gpu:1 --container-image="$image" --container-mounts="$bin:/crisp-hw:ro" \
  sh -c 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; ls /dev | grep -E "^nvidia"; /crisp-hw/cuda_query'
echo "== copy bandwidth, $mb MiB x 10"
inside=$(srun --gres=gpu:1 --container-image="$image" --container-mounts="$bin:/crisp-hw:ro" /crisp-hw/cuda_query --bench "$mb" | grep '^bench')
bare=$(srun --gres=gpu:1 "$bin/cuda_query" --bench "$mb" | grep '^bench')
echo "container: $inside"
echo "bare:      $bare"
awk -v a="$inside" -v b="$bare" 'BEGIN { split(a, x, " "); split(b, y, " ");
  printf "ratio container/bare: htod %.3f dtod %.3f\n", x[3] / y[3], x[5] / y[5] }'
