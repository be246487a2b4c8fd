/* memcpy_bw.c: this machine's single-thread memcpy bandwidth, compare_peers.sh's yardstick.
 *   memcpy_bw [BYTES]      (default 64 MiB)
 * Allocates a source and a destination of BYTES each, touches every page of both (so no page
 * fault is timed) and copies once untimed, then takes COPIES samples, each timed on its own with
 * CLOCK_MONOTONIC: at least 10, and more for small buffers (1 GiB / BYTES, at most 1000). A sample
 * is one copy of the whole buffer, or below 64 KiB REPS copies back to back (64 KiB / BYTES), so
 * that the clock's own cost (tens of ns) does not swamp a copy of a few bytes; its time is the
 * sample's over REPS. Prints, on stdout, the median as JSON:
 *   {"bytes": N, "memcpy_gbps": X, "copies": C, "reps": R}
 * X is 10^9 bytes per second, the bytes counted once (BYTES / time, not read plus write). A
 * buffer that fits a cache measures that cache, as a collective on such a buffer would see it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  size_t bytes = (size_t)64 << 20;
  if (argc > 2) {
    fprintf(stderr, "usage: %s [BYTES]\n", argv[0]);
    return 2;
  }
  if (argc == 2) {
    char* end = NULL;
    unsigned long long b = strtoull(argv[1], &end, 10);
    if (argv[1][0] < '1' || argv[1][0] > '9' || *end != '\0' || b > ((size_t)1 << 40)) {
      fprintf(stderr, "usage: %s [BYTES]: BYTES is a positive integer\n", argv[0]);
      return 2;
    }
    bytes = (size_t)b;
  }
  size_t copies = ((size_t)1 << 30) / bytes;
  if (copies < 10) copies = 10;
  if (copies > 1000) copies = 1000;
  const size_t reps = bytes < 65536 ? 65536 / bytes : 1;

  char *src = NULL, *dst = NULL;
  double* t = malloc(copies * sizeof(double));
  if (!t || posix_memalign((void**)&src, 4096, bytes) != 0 ||
      posix_memalign((void**)&dst, 4096, bytes) != 0) {
    fprintf(stderr, "memcpy_bw: out of memory for 2 x %zu bytes\n", bytes);
    return 1;
  }
  /* Warm: every page of both buffers written (faulted in), then one untimed copy. */
  for (size_t i = 0; i < bytes; ++i) src[i] = (char)(i * 131 + 7);
  memset(dst, 0, bytes);
  memcpy(dst, src, bytes);

  for (size_t k = 0; k < copies; ++k) {
    double t0 = now_s();
    for (size_t r = 0; r < reps; ++r) {
      memcpy(dst, src, bytes);
      /* The compiler must assume the copy is read, so no copy is dropped as a repeated store. */
      __asm__ __volatile__("" : : "r"(dst), "r"(src) : "memory");
    }
    t[k] = (now_s() - t0) / (double)reps;
  }
  if (memcmp(dst, src, bytes) != 0) {
    fprintf(stderr, "memcpy_bw: the copy differs from its source\n");
    return 1;
  }
  qsort(t, copies, sizeof(double), cmp_double);
  double median = copies % 2 ? t[copies / 2] : (t[copies / 2 - 1] + t[copies / 2]) / 2;
  printf("{\"bytes\": %zu, \"memcpy_gbps\": %.3f, \"copies\": %zu, \"reps\": %zu}\n", bytes,
         (double)bytes / median / 1e9, copies, reps);
  free(t);
  free(src);
  free(dst);
  return 0;
}
