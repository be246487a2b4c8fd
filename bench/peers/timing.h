/* timing.h: what mpi_bench.c and gloo_bench.cpp share, so that both measure and check alike
 * (and alike with hcomm-bench): the command line, the timing rule, the input pattern and its
 * reference, and the JSON result format. Plain C that also compiles as C++.
 *
 * Command line of both programs:
 *   OP BYTES -n ITERS -w WARMUP -J OUT.json [-a ALGO] [-S STORE_DIR]
 * OP is allreduce, broadcast, allgather, reduce_scatter or alltoall; float32, sum, broadcast
 * root 0. BYTES follows nccl-tests and hcomm-bench: the larger of one rank's send and receive
 * buffers. allreduce and broadcast: BYTES / 4 elements. The block ops (allgather,
 * reduce_scatter, alltoall) move nranks blocks of `count` elements, count = BYTES / (4 nranks)
 * rounded down (the program refuses a BYTES that leaves no whole element per block):
 *   allgather       sends one block, receives nranks blocks (BYTES: the receive buffer)
 *   reduce_scatter  sends nranks blocks, receives one: block r of the sum, on rank r (BYTES: the
 *                   send buffer)
 *   alltoall        sends nranks blocks, block q to rank q, and receives nranks, block q from
 *                   rank q (BYTES: either buffer)
 * -a and -S are Gloo's: the algorithm(s) to run and the rendezvous directory.
 *
 * Timing rule (as hcomm-bench): WARMUP untimed iterations, a barrier, then ITERS iterations
 * back to back, each timed on its own with CLOCK_MONOTONIC; a rank's time is the median of its
 * iterations; the reported time is the maximum of the ranks' medians.
 *
 * Check (as nccl-tests -c 1): after timing, the inputs are rewritten, the outputs set to NaN (which
 * equals nothing, so an untouched element counts as wrong), one more iteration runs, and the
 * wrong output elements are counted, summed over ranks. Inputs are small integers, so every sum
 * is exact in float32 whatever the reduction order. */
#ifndef HCOMM_BENCH_PEERS_TIMING_H
#define HCOMM_BENCH_PEERS_TIMING_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum peer_op { PEER_ALLREDUCE, PEER_BROADCAST, PEER_ALLGATHER, PEER_REDUCE_SCATTER, PEER_ALLTOALL };
enum { PEER_OPS = 5 };
static const char* const peer_op_names[PEER_OPS] = {"allreduce", "broadcast", "allgather",
                                                    "reduce_scatter", "alltoall"};
enum { PEER_ROOT = 0 };

struct peer_args {
  enum peer_op op;
  size_t bytes;
  int iters, warmup;
  const char* json_path;
  const char* algo;      /* NULL: the program's default */
  const char* store_dir; /* Gloo's rendezvous directory */
};

static void peer_usage(const char* prog) {
  fprintf(stderr,
          "usage: %s allreduce|broadcast|allgather|reduce_scatter|alltoall BYTES -n ITERS"
          " -w WARMUP -J OUT.json [-a ALGO] [-S STORE_DIR]\n",
          prog);
  exit(2);
}

static struct peer_args peer_parse_args(int argc, char** argv) {
  struct peer_args a;
  memset(&a, 0, sizeof a);
  a.iters = -1;
  a.warmup = -1;
  if (argc < 3) peer_usage(argv[0]);
  int found = 0;
  for (int o = 0; o < PEER_OPS; ++o)
    if (strcmp(argv[1], peer_op_names[o]) == 0) a.op = (enum peer_op)o, found = 1;
  char* end = NULL;
  unsigned long long b = strtoull(argv[2], &end, 10);
  if (!found || *end != '\0' || b < sizeof(float) || b % sizeof(float) != 0 || b > INT32_MAX)
    peer_usage(argv[0]);
  a.bytes = (size_t)b;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0)
      a.iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-w") == 0)
      a.warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-J") == 0)
      a.json_path = argv[i + 1];
    else if (strcmp(argv[i], "-a") == 0)
      a.algo = argv[i + 1];
    else if (strcmp(argv[i], "-S") == 0)
      a.store_dir = argv[i + 1];
    else
      peer_usage(argv[0]);
  }
  if (argc % 2 == 0 || a.iters < 1 || a.warmup < 0 || !a.json_path) peer_usage(argv[0]);
  return a;
}

static int peer_blocked(enum peer_op op) {
  return op == PEER_ALLGATHER || op == PEER_REDUCE_SCATTER || op == PEER_ALLTOALL;
}

/* The count argument of the call: elements per block for the block ops, else all elements.
 * Exits (status 2) when BYTES leaves no whole element per block. */
static size_t peer_count(const struct peer_args* a, int nranks) {
  const size_t n = a->bytes / sizeof(float);
  const size_t count = peer_blocked(a->op) ? n / (size_t)nranks : n;
  if (count == 0) {
    fprintf(stderr, "%s of %zu bytes on %d ranks: no whole float per rank block\n",
            peer_op_names[a->op], a->bytes, nranks);
    exit(2);
  }
  return count;
}
/* Elements of one rank's input and of its output. */
static size_t peer_in_count(enum peer_op op, size_t count, int nranks) {
  return op == PEER_REDUCE_SCATTER || op == PEER_ALLTOALL ? count * (size_t)nranks : count;
}
static size_t peer_out_count(enum peer_op op, size_t count, int nranks) {
  return op == PEER_ALLGATHER || op == PEER_ALLTOALL ? count * (size_t)nranks : count;
}

static float peer_input(int rank, size_t i) {
  return (float)(rank + 1 + (int)(i % 5));
}

/* The sum over ranks of input element i. */
static float peer_sum(int nranks, size_t i) {
  return (float)(nranks * (nranks + 1) / 2 + nranks * (int)(i % 5));
}

/* Output element i of rank `rank`, computed from the inputs alone. */
static float peer_expected(enum peer_op op, int rank, int nranks, size_t count, size_t i) {
  switch (op) {
    case PEER_ALLREDUCE:
      return peer_sum(nranks, i);
    case PEER_BROADCAST:
      return peer_input(PEER_ROOT, i);
    case PEER_ALLGATHER: /* block q: rank q's input */
      return peer_input((int)(i / count), i % count);
    case PEER_REDUCE_SCATTER: /* block `rank` of the sum */
      return peer_sum(nranks, (size_t)rank * count + i);
    default: /* alltoall: block q is block `rank` of rank q's input */
      return peer_input((int)(i / count), (size_t)rank * count + i % count);
  }
}

/* Writes the inputs and poisons the outputs. `in` and `out` may be one buffer (in-place
 * allreduce, broadcast, reduce_scatter: the output is then the input's start); a broadcast's
 * non-root ranks have no input. */
static void peer_prepare(enum peer_op op, int rank, int nranks, size_t count, float* in,
                         float* out) {
  const size_t out_count = peer_out_count(op, count, nranks);
  for (size_t i = 0; i < out_count; ++i) out[i] = nanf("");
  if (op == PEER_BROADCAST && rank != PEER_ROOT) return;
  const size_t in_count = peer_in_count(op, count, nranks);
  for (size_t i = 0; i < in_count; ++i) in[i] = peer_input(rank, i);
}

static int64_t peer_count_wrong(enum peer_op op, int rank, int nranks, size_t count,
                                const float* out) {
  int64_t wrong = 0;
  const size_t out_count = peer_out_count(op, count, nranks);
  for (size_t i = 0; i < out_count; ++i)
    wrong += out[i] != peer_expected(op, rank, nranks, count, i);
  return wrong;
}

static double peer_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int peer_by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The timing rule above, for one rank: returns its median iteration time in microseconds
 * (the upper median for an even count). */
static double peer_time_us(void (*run)(void*), void (*barrier)(void*), void* ctx, int warmup,
                           int iters) {
  double* us = (double*)malloc((size_t)iters * sizeof(double));
  if (!us) abort();
  for (int i = 0; i < warmup; ++i) run(ctx);
  barrier(ctx);
  for (int i = 0; i < iters; ++i) {
    const double t0 = peer_now_us();
    run(ctx);
    us[i] = peer_now_us() - t0;
  }
  qsort(us, (size_t)iters, sizeof(double), peer_by_value);
  const double median = us[iters / 2];
  free(us);
  return median;
}

/* Writes hcomm-bench's JSON shape: {"results":[{...}, ...]}, "bytes" the larger of one rank's
 * buffers and "count" the count argument (per block for the block ops). Call with first=1, then
 * 0 for each further result, then peer_json_end. */
static void peer_json_result(FILE* f, int first, const struct peer_args* a, size_t count,
                             int nranks, const char* algo, double time_us, int64_t wrong) {
  const size_t in = peer_in_count(a->op, count, nranks), out = peer_out_count(a->op, count, nranks);
  const size_t bytes = (in > out ? in : out) * sizeof(float);
  fprintf(f,
          "%s{\"op\":\"%s\",\"dtype\":\"float32\",\"bytes\":%zu,\"count\":%zu,\"algo\":\"%s\","
          "\"time_us\":%.3f,\"wrong\":%lld}",
          first ? "{\"results\":[\n" : ",\n", peer_op_names[a->op], bytes, count, algo, time_us,
          (long long)wrong);
}
static void peer_json_end(FILE* f) {
  fprintf(f, "\n]}\n");
}

#endif
