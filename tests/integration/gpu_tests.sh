# Integration tests of device injection on the dev cluster's fake GPUs
# (dev/fake_gpus.sh: mknod'ed NVIDIA device files, a CDI spec, gres.conf), sourced by run.sh.

list_dev() { as_user "${SRUN[@]}" "$@" --container-image="$TEST_IMAGE" sh -c 'ls /dev | tr "\n" " "'; }

test_gpus_follow_the_allocation() {
  local base; base=$(list_dev)
  expect "no GPU asked, no GPU device" lacks "$base" nvidia
  run as_user "${SRUN[@]}" --gres=gpu:2 --container-image="$TEST_IMAGE" \
    sh -c 'ls /dev | tr "\n" " "; echo; echo "$CUDA_VISIBLE_DEVICES|$NVIDIA_DRIVER_CAPABILITIES"; cat /usr/lib/x86_64-linux-gnu/libcuda.so.1 /tmp/cdi-hook-ran'
  local devs; devs=$(head -1 <<<"$OUT")
  local want; want=$(tr ' ' '\n' <<<"$base nvidia0 nvidia1 nvidiactl nvidia-uvm" | grep . | sort | tr '\n' ' ')
  expect "gpu:2: exactly two GPUs and the control devices more than a plain step" equals \
    "$(tr ' ' '\n' <<<"$devs" | grep . | sort | tr '\n' ' ')" "$want"
  expect "CUDA sees them as 0,1; the CDI spec's variable is set" equals "$(sed -n 2p <<<"$OUT")" "0,1|compute,utility"
  expect "the CDI spec's mount is there" equals "$(sed -n 3p <<<"$OUT")" "fake driver"
  expect "its createContainer hook ran with the OCI state (pid, bundle)" equals "$(sed -n 4p <<<"$OUT")" \
    "create-symlinks bundle-ok"
  # A second job gets the GPU the first does not hold.
  local name=crisp-it-gpu-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --gres=gpu:1 --container-image="$TEST_IMAGE" sleep 30 >/dev/null 2>&1 &
  local holder=$!
  running_job "$name" >/dev/null
  run as_user "${SRUN[@]}" --gres=gpu:1 --container-image="$TEST_IMAGE" \
    sh -c 'ls /dev | tr "\n" " "; echo; echo "$SLURM_STEP_GPUS|$CUDA_VISIBLE_DEVICES"'
  want=$(tr ' ' '\n' <<<"$base nvidia1 nvidiactl nvidia-uvm" | grep . | sort | tr '\n' ' ')
  expect "gpu:1 beside a running gpu:1 job: its own GPU and the control devices, nothing else" equals \
    "$(head -1 <<<"$OUT" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')" "$want"
  expect "... which is gres index 1, CUDA device 0" equals "$(sed -n 2p <<<"$OUT")" "1|0"
  scancel -n "$name"; wait "$holder" 2>/dev/null
}

test_rdma_devices() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'ls /dev/infiniband | tr "\n" " "; echo; echo "$NCCL_IB_HCA"'
  expect "the HCA's verbs device and rdma_cm, never umad" equals "$(head -1 <<<"$OUT")" "rdma_cm uverbs0 "
  expect "NCCL_IB_HCA names it" equals "$(sed -n 2p <<<"$OUT")" "=mlx5_0:1"
}

# Hole 9: SLURM_STEP_GPUS is the job's environment, which the user writes; on
# Slurm 22.05 a step without GPUs keeps the user's value.
test_forged_gpu_variable_gets_no_gpu() {
  run as_user env SLURM_STEP_GPUS=0,1 SLURM_JOB_GPUS=0,1 "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'ls /dev | grep -c "^nvidia[0-9]"; echo "${CUDA_VISIBLE_DEVICES-unset}"'
  expect "a step without --gres gets no GPU device, whatever its environment says" equals "$(head -1 <<<"$OUT")" 0
  expect "... and no CUDA_VISIBLE_DEVICES from crisp" equals "$(sed -n 2p <<<"$OUT")" unset
  run as_user env SLURM_STEP_GPUS=0,1 "${SRUN[@]}" --gres=gpu:1 --container-image="$TEST_IMAGE" \
    sh -c 'ls /dev | grep -c "^nvidia[0-9]"'
  expect "a step with one GPU gets one" equals "$OUT" 1
}
