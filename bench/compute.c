/* The compute kernels of bench/: the same static binary runs on the host and
 * in the image, so any difference is the container's.
 *   compute cpu   integer and floating-point work that stays in registers: Mops/s
 *   compute mem   STREAM triad over arrays much larger than the caches: GB/s
 * Prints one number: the best of its repetitions (noise only slows a run down). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
    perror("clock_gettime");
    exit(1);
  }
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_run(void) {
  const uint64_t n = 150u * 1000u * 1000u;
  uint64_t x = 88172645463325252ull;
  double f = 1.0;
  double t0 = now();
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = f * 0.999999 + (double)(x & 0xff) * 1e-9;
  }
  double t = now() - t0;
  /* Kept live, so the compiler cannot drop the loop. */
  if (f == 0.0 && x == 0) puts("");
  return (double)n / t / 1e6;
}

static double mem_run(double* a, const double* b, const double* c, size_t n) {
  const double s = 3.0;
  double t0 = now();
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  double t = now() - t0;
  return 3.0 * sizeof(double) * (double)n / t / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "cpu") != 0 && strcmp(argv[1], "mem") != 0)) {
    fprintf(stderr, "usage: %s cpu|mem\n", argv[0]);
    return 2;
  }
  double best = 0;
  if (strcmp(argv[1], "cpu") == 0) {
    for (int r = 0; r < 5; ++r) {
      double v = cpu_run();
      if (v > best) best = v;
    }
  } else {
    const size_t n = 16u * 1024u * 1024u; /* 3 arrays of 128 MiB */
    double* a = malloc(n * sizeof(double));
    double* b = malloc(n * sizeof(double));
    double* c = malloc(n * sizeof(double));
    if (!a || !b || !c) {
      perror("malloc");
      return 1;
    }
    for (size_t i = 0; i < n; ++i) {
      a[i] = 0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
    for (int r = 0; r < 20; ++r) {
      double v = mem_run(a, b, c, n);
      if (v > best) best = v;
    }
    if (a[n / 2] != 7.0) {
      fprintf(stderr, "triad gave a wrong result\n");
      return 1;
    }
  }
  printf("%.2f\n", best);
  return 0;
}
