/* A CUDA device query and copy-bandwidth benchmark that needs no CUDA toolkit
 * to build: it loads the driver (libcuda.so.1) at run time, as the container
 * gets it from crisp. Usage: cuda_query [--bench MB]. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "cuda_query: %s missing in libcuda.so.1\n", name);
    exit(2);
  }
  return p;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "cuda_query: cannot load libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  CUresult (*cuInit)(unsigned) = sym(lib, "cuInit");
  CUresult (*cuDeviceGetCount)(int *) = sym(lib, "cuDeviceGetCount");
  CUresult (*cuDeviceGet)(CUdevice *, int) = sym(lib, "cuDeviceGet");
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = sym(lib, "cuDeviceGetName");
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice) = sym(lib, "cuDeviceTotalMem_v2");
  CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice) = sym(lib, "cuDeviceGetPCIBusId");
  int rc = cuInit(0), n = 0;
  if (rc != 0 || cuDeviceGetCount(&n) != 0) {
    fprintf(stderr, "cuda_query: cuInit failed (%d)\n", rc);
    return 1;
  }
  printf("CUDA devices: %d\n", n);
  for (int i = 0; i < n; i++) {
    CUdevice d;
    char name[256], bus[32];
    size_t mem = 0;
    cuDeviceGet(&d, i);
    cuDeviceGetName(name, sizeof name, d);
    cuDeviceTotalMem(&mem, d);
    cuDeviceGetPCIBusId(bus, sizeof bus, d);
    printf("  %d: %s, %zu MiB, PCI %s\n", i, name, mem >> 20, bus);
  }
  if (argc > 2 && strcmp(argv[1], "--bench") == 0 && n > 0) {
    CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice) = sym(lib, "cuCtxCreate_v2");
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = sym(lib, "cuMemAlloc_v2");
    CUresult (*cuMemAllocHost)(void **, size_t) = sym(lib, "cuMemAllocHost_v2");
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = sym(lib, "cuMemcpyHtoD_v2");
    CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = sym(lib, "cuMemcpyDtoD_v2");
    CUresult (*cuCtxSynchronize)(void) = sym(lib, "cuCtxSynchronize");
    size_t bytes = (size_t)atol(argv[2]) << 20;
    CUdevice d;
    CUcontext ctx;
    CUdeviceptr a, b;
    void *host;
    cuDeviceGet(&d, 0);
    if (cuCtxCreate(&ctx, 0, d) || cuMemAlloc(&a, bytes) || cuMemAlloc(&b, bytes) || cuMemAllocHost(&host, bytes)) {
      fprintf(stderr, "cuda_query: allocation failed\n");
      return 1;
    }
    memset(host, 1, bytes);
    for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
      double t0 = now();
      for (int r = 0; r < 10; r++) cuMemcpyHtoD(a, host, bytes);
      cuCtxSynchronize();
      double t1 = now();
      for (int r = 0; r < 10; r++) cuMemcpyDtoD(b, a, bytes);
      cuCtxSynchronize();
      double t2 = now();
      if (pass) printf("bench htod_GBps %.2f dtod_GBps %.2f\n", 10.0 * bytes / (t1 - t0) / 1e9, 10.0 * bytes / (t2 - t1) / 1e9);
    }
  }
  return 0;
}
