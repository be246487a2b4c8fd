/* An allreduce in C, checked, with a non-blocking one beside it.
 * Build (installed hcomm): cc -std=c99 allreduce.c $(pkg-config --cflags --libs hcomm)
 * Run:                     hcomm-run -n 4 ./a.out [COUNT] */
#include <hcomm/hcomm.h>

#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what, hcomm_status_t st) {
  fprintf(stderr, "%s: %s: %s\n", what, hcomm_status_string(st), hcomm_last_error());
  return 1;
}

int main(int argc, char** argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 1 << 20;
  hcomm_comm_t comm;
  hcomm_status_t st = hcomm_comm_create_from_env(&comm); /* HCOMM_RANK, HCOMM_WORLD_SIZE, ... */
  if (st != HCOMM_SUCCESS) return fail("hcomm_comm_create_from_env", st);
  int rank, size;
  hcomm_comm_rank(comm, &rank);
  hcomm_comm_size(comm, &size);

  /* Rank r contributes r + 1 + (i % 7) at element i: the sum is exact in float. */
  float* data = malloc(count * sizeof(float));
  float* result = malloc(count * sizeof(float));
  double* twice = malloc(count * sizeof(double));
  if (data == NULL || result == NULL || twice == NULL) return 1;
  for (size_t i = 0; i < count; ++i) data[i] = (float)(rank + 1 + (int)(i % 7));

  st = hcomm_allreduce(comm, data, result, count, HCOMM_FLOAT32, HCOMM_SUM);
  if (st != HCOMM_SUCCESS) return fail("hcomm_allreduce", st);

  /* The same sum in float64, started, left to run, then waited for. */
  for (size_t i = 0; i < count; ++i) twice[i] = 2.0 * data[i];
  hcomm_work_t work;
  st = hcomm_allreduce_async(comm, twice, twice, count, HCOMM_FLOAT64, HCOMM_SUM, &work);
  if (st != HCOMM_SUCCESS) return fail("hcomm_allreduce_async", st);
  st = hcomm_work_wait(work, 30000);
  hcomm_work_free(work);
  if (st != HCOMM_SUCCESS) return fail("hcomm_work_wait", st);

  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double expected = size * (size + 1) / 2 + size * (double)(i % 7);
    if (result[i] != (float)expected || twice[i] != 2.0 * expected) ++wrong;
  }
  if (rank == 0)
    printf("C allreduce of %zu floats on %d ranks (hcomm %s): %s (%zu wrong)\n", count, size,
           hcomm_version(), wrong == 0 ? "VERIFIED" : "WRONG", wrong);
  free(data);
  free(result);
  free(twice);
  hcomm_comm_destroy(comm);
  return wrong == 0 ? 0 : 1;
}
