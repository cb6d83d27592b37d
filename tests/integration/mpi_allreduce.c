/* The two-node MPI test's program: every rank contributes rank + 1 to an
 * MPI_Allreduce sum; each rank prints what it got, so the test checks the
 * result (n(n+1)/2) on every rank, and which MPI library ran. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mine = rank + 1, sum = 0;
  if (MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return 2;
  /* The dev cluster's nodes share one hostname: Slurm's node name tells them apart. */
  const char *node = getenv("SLURMD_NODENAME");
  int len = 0;
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  MPI_Get_library_version(version, &len);
  char *nl = strchr(version, '\n');
  if (nl) *nl = '\0';
  char *comma = strchr(version, ',');
  if (comma) *comma = '\0';
  printf("rank %d of %d on %s: sum %ld (%s)\n", rank, size, node ? node : "?", sum, version);
  MPI_Finalize();
  return 0;
}
