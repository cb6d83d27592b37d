# Fake GPUs for the dev cluster's first node, sourced by up.sh: four NVIDIA
# device files made with mknod (major 195 without a driver: opening them fails,
# nothing else happens), a fake /proc/driver/nvidia, a CDI spec that names
# them with a fake driver library, and the gres.conf line Slurm allocates from.
# And one fake HCA, mlx5_0: a sysfs tree and its verbs, rdma_cm and umad devices.
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
  # A createContainer hook, as nvidia-cdi-hook is one: it leaves a mark in the
  # container, through the OCI state's pid, saying whether the bundle was there.
  mkdir -p "$FAKE_GPU/hooks"
  cat >"$FAKE_GPU/hooks/mark.sh" <<'HOOK'
#!/bin/sh
state=$(cat)
pid=$(echo "$state" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
bundle=$(echo "$state" | sed -n 's/.*"bundle":"\([^"]*\)".*/\1/p')
[ -f "$bundle/config.json" ] && where=bundle-ok || where=no-bundle
echo "$1 $where" >"/proc/$pid/root/tmp/cdi-hook-ran"
HOOK
  chmod 755 "$FAKE_GPU/hooks/mark.sh"
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
    printf '  hooks:\n  - hookName: createContainer\n    path: %s\n    args: [mark, create-symlinks]\n' \
      "$FAKE_GPU/hooks/mark.sh"
  } >"$FAKE_GPU/cdi/fake-nvidia.yaml"
  echo "NodeName=$node Name=gpu File=$FAKE_GPU/dev/nvidia[0-3]" >/etc/slurm/gres.conf

  local pci=$FAKE_GPU/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0
  mkdir -p "$pci/infiniband_verbs/uverbs0" "$FAKE_GPU/sys/class/infiniband/mlx5_0/ports/1" "$FAKE_GPU/dev/infiniband"
  echo 0 >"$pci/numa_node"
  ln -sfn "$pci" "$FAKE_GPU/sys/class/infiniband/mlx5_0/device"
  [[ -c $FAKE_GPU/dev/infiniband/uverbs0 ]] || mknod -m 666 "$FAKE_GPU/dev/infiniband/uverbs0" c 231 192
  [[ -c $FAKE_GPU/dev/infiniband/rdma_cm ]] || mknod -m 666 "$FAKE_GPU/dev/infiniband/rdma_cm" c 10 58
  [[ -c $FAKE_GPU/dev/infiniband/umad0 ]] || mknod -m 600 "$FAKE_GPU/dev/infiniband/umad0" c 231 0
}

# crispd's view of the fake GPUs.
FAKE_GPU_CRISPD_ARGS="--dev-root $FAKE_GPU/dev --proc-root $FAKE_GPU/proc --sys-root $FAKE_GPU/sys --cdi-dir $FAKE_GPU/cdi"
