/* Times an out-of-place float32 sum allreduce with MPI: the reference for allreduce_hcomm.cpp,
 * which it mirrors step for step so that compare_mpi.sh compares like with like.
 *
 * Usage: mpirun -n RANKS allreduce_mpi [-w WARMUP] [-n ITERS] BYTES...
 * Prints on rank 0, per size: "mpi allreduce bytes=<B> median_us=<t> wrong=<k>", where t is the
 * median over ITERS separately timed iterations (rank 0's clock; a barrier precedes each one) and
 * k counts wrong elements over all timed iterations and all ranks. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "allreduce_mpi: %s: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void usage(void) {
  fprintf(stderr, "usage: allreduce_mpi [-w WARMUP] [-n ITERS] BYTES...\n"
                  "BYTES: positive multiples of 4 (float32 elements)\n");
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Runs one size and prints its line on rank 0. */
static void run_size(size_t bytes, int warmup, int iters) {
  const size_t count = bytes / sizeof(float);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float* send = malloc(count * sizeof(float));
  float* recv = malloc(count * sizeof(float));
  double* us = malloc((size_t)iters * sizeof(double));
  if (!send || !recv || !us) {
    fprintf(stderr, "allreduce_mpi: out of memory for %zu bytes\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* Small integers, so every partial sum is exact in float32 whatever the reduction order. */
  for (size_t i = 0; i < count; ++i) send[i] = (float)(rank + 1 + i % 5);

  for (int it = 0; it < warmup; ++it)
    check(MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce");

  int64_t wrong = 0;
  for (int it = 0; it < iters; ++it) {
    /* NaN never equals an expected value, so an allreduce that leaves recv untouched is caught. */
    for (size_t i = 0; i < count; ++i) recv[i] = nanf("");
    check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
    double t0 = MPI_Wtime();
    check(MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce");
    us[it] = (MPI_Wtime() - t0) * 1e6;
    for (size_t i = 0; i < count; ++i) {
      const float expected = (float)(size * (size + 1) / 2 + size * (int)(i % 5));
      if (recv[i] != expected) ++wrong;
    }
  }

  int64_t wrong_all = 0;
  check(MPI_Reduce(&wrong, &wrong_all, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD),
        "reduce of the wrong counts");

  qsort(us, (size_t)iters, sizeof(double), by_value);
  if (rank == 0)
    printf("mpi allreduce bytes=%zu median_us=%.2f wrong=%lld\n", bytes, us[iters / 2],
           (long long)wrong_all);
  fflush(stdout);
  free(us);
  free(recv);
  free(send);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  /* Errors come back as codes, so check() can name the failing call before aborting. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int warmup = 5, iters = 20, nsizes = 0;
  size_t* sizes = malloc((size_t)argc * sizeof(size_t));
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "-w") == 0 && a + 1 < argc) {
      warmup = atoi(argv[++a]);
    } else if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
      iters = atoi(argv[++a]);
    } else {
      char* end = NULL;
      unsigned long long b = strtoull(argv[a], &end, 10);
      if (*end != '\0' || b == 0 || b % sizeof(float) != 0 || b / sizeof(float) > INT32_MAX)
        usage();
      sizes[nsizes++] = (size_t)b;
    }
  }
  if (nsizes == 0 || warmup < 0 || iters < 1) usage();

  for (int s = 0; s < nsizes; ++s) run_size(sizes[s], warmup, iters);
  free(sizes);
  MPI_Finalize();
  return 0;
}
