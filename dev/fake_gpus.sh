# Fake GPUs for the dev cluster's first node, sourced by up.sh: four NVIDIA
# device files made with mknod (major 195 without a driver: opening them fails,
# nothing else happens), a fake /proc/driver/nvidia, a CDI spec that names
# them with a fake driver library, and the gres.conf line Slurm allocates from.
FAKE_GPU=$STATE/fakegpu

make_fake_gpus() {
  local node=$1 i
  mkdir -p "$FAKE_GPU"/{dev,cdi,lib} "$FAKE_GPU/proc/driver/nvidia/gpus"
  for i in 0 1 2 3; do
    [[ -c $FAKE_GPU/dev/nvidia$i ]] || mknod -m 666 "$FAKE_GPU/dev/nvidia$i" c 195 "$i"
    mkdir -p "$FAKE_GPU/proc/driver/nvidia/gpus/0000:0$((i + 1)):00.0"
    printf 'Model:\t\t Fake GPU\nGPU UUID:\t GPU-fake-%s\nDevice Minor:\t %s\n' "$i" "$i" \
      >"$FAKE_GPU/proc/driver/nvidia/gpus/0000:0$((i + 1)):00.0/information"
  done
  [[ -c $FAKE_GPU/dev/nvidiactl ]] || mknod -m 666 "$FAKE_GPU/dev/nvidiactl" c 195 255
  [[ -c $FAKE_GPU/dev/nvidia-uvm ]] || mknod -m 666 "$FAKE_GPU/dev/nvidia-uvm" c 237 0
  echo "fake driver" >"$FAKE_GPU/lib/libcuda.so.1"
  {
    printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n'
    for i in 0 1 2 3; do
      printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%s\n      hostPath: %s\n' \
        "$i" "$i" "$FAKE_GPU/dev/nvidia$i"
    done
    printf 'containerEdits:\n  env: ["NVIDIA_DRIVER_CAPABILITIES=compute,utility"]\n  deviceNodes:\n'
    printf '  - path: /dev/nvidiactl\n    hostPath: %s\n  - path: /dev/nvidia-uvm\n    hostPath: %s\n' \
      "$FAKE_GPU/dev/nvidiactl" "$FAKE_GPU/dev/nvidia-uvm"
    printf '  mounts:\n  - hostPath: %s\n    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n    options: [ro, bind]\n' \
      "$FAKE_GPU/lib/libcuda.so.1"
  } >"$FAKE_GPU/cdi/fake-nvidia.yaml"
  echo "NodeName=$node Name=gpu File=$FAKE_GPU/dev/nvidia[0-3]" >/etc/slurm/gres.conf
}

# crispd's view of the fake GPUs.
FAKE_GPU_CRISPD_ARGS="--dev-root $FAKE_GPU/dev --proc-root $FAKE_GPU/proc --cdi-dir $FAKE_GPU/cdi"
