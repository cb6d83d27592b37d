# Integration tests across the dev cluster's two nodes (dev/node2.sh), sourced by run.sh.

MPI_IMAGE=$REGISTRY/crisp-test/mpi:bookworm
TWO_NODES=(-p multi -N2 --ntasks-per-node=2)

test_two_nodes_one_container_each() {
  run as_user "${SRUN[@]}" "${TWO_NODES[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'echo "$SLURMD_NODENAME $SLURM_PROCID $(readlink /proc/self/ns/mnt) $(grep -c ^ID=crisp-busybox /etc/os-release)"'
  expect "4 tasks ran" equals "$(wc -l <<<"$OUT")" 4
  expect "on both nodes" equals "$(cut -d' ' -f1 <<<"$OUT" | sort -u | tr '\n' ' ')" "$(printf '%s\n' "$NODE2" "$(hostname -s)" | sort | tr '\n' ' ')"
  expect "each in the image" equals "$(cut -d' ' -f4 <<<"$OUT" | sort -u)" 1
  expect "one container (mount namespace) per node" equals "$(cut -d' ' -f1,3 <<<"$OUT" | sort -u | wc -l)" 2
  # By node and namespace: a namespace's inode number may be reused once the other node's step is gone.
  expect "two tasks per node share it" equals "$(cut -d' ' -f1,3 <<<"$OUT" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" "2 2 "
}

# mpi_allreduce MPI-FLAG PROGRAM: 4 ranks over 2 nodes; each must print sum 10.
mpi_allreduce() {
  run as_user "${SRUN[@]}" "${TWO_NODES[@]}" --mpi="$1" --container-image="$MPI_IMAGE" \
    --export=ALL,OMPI_MCA_btl_tcp_if_include=$NODE1_IP/24,OMPI_MCA_oob_tcp_if_include=$NODE1_IP/24 "$2"
  expect "srun --mpi=$1 succeeds" equals "$RC" 0
  expect "4 ranks report" equals "$(grep -c '^rank ' <<<"$OUT")" 4
  expect "every rank's allreduce sum is 1+2+3+4" equals "$(grep -c ': sum 10 ' <<<"$OUT")" 4
  expect "ranks on both nodes" equals "$(grep -o ' on [^:]*' <<<"$OUT" | sort -u | wc -l)" 2
}

test_mpi_pmix_openmpi() {
  mpi_allreduce pmix allreduce-openmpi
  expect "it is Open MPI" contains "$OUT" "Open MPI v4"
}

test_mpi_pmi2_mpich() {
  mpi_allreduce pmi2 allreduce-mpich
  expect "it is MPICH" contains "$OUT" "MPICH Version"
}
