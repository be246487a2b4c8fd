/* mpi_bench.c: Open MPI's side of compare_peers.sh. One collective, one size per launch:
 *   mpirun -np N mpi_bench OP BYTES -n ITERS -w WARMUP -J OUT.json
 * OP: allreduce (MPI_Allreduce), broadcast (MPI_Bcast), allgather (MPI_Allgather),
 * reduce_scatter (MPI_Reduce_scatter_block) or alltoall (MPI_Alltoall). Sizes, timing, check and
 * output follow timing.h, as gloo_bench.cpp and hcomm-bench do. All but broadcast run out of
 * place; rank 0 writes the JSON. */
#include <mpi.h>

#include "timing.h"

struct bench {
  enum peer_op op;
  size_t count;
  float *in, *out;
};

static void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "mpi_bench: %s: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void run(void* ctx) {
  struct bench* b = (struct bench*)ctx;
  const int n = (int)b->count;
  switch (b->op) {
    case PEER_ALLREDUCE:
      check(MPI_Allreduce(b->in, b->out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "allreduce");
      break;
    case PEER_BROADCAST:
      check(MPI_Bcast(b->out, n, MPI_FLOAT, PEER_ROOT, MPI_COMM_WORLD), "broadcast");
      break;
    case PEER_ALLGATHER:
      check(MPI_Allgather(b->in, n, MPI_FLOAT, b->out, n, MPI_FLOAT, MPI_COMM_WORLD), "allgather");
      break;
    case PEER_REDUCE_SCATTER:
      check(MPI_Reduce_scatter_block(b->in, b->out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
            "reduce_scatter");
      break;
    case PEER_ALLTOALL:
      check(MPI_Alltoall(b->in, n, MPI_FLOAT, b->out, n, MPI_FLOAT, MPI_COMM_WORLD), "alltoall");
      break;
  }
}

static void barrier(void* ctx) {
  (void)ctx;
  check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  /* Errors come back as codes, so check() can name the failing call before aborting. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const struct peer_args a = peer_parse_args(argc, argv);
  if (a.algo || a.store_dir) peer_usage(argv[0]); /* Gloo's options */
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  struct bench b = {a.op, peer_count(&a, nranks), NULL, NULL};
  b.out = (float*)malloc(peer_out_count(a.op, b.count, nranks) * sizeof(float));
  /* Broadcast is in place: the root's output buffer is its input. */
  b.in = a.op == PEER_BROADCAST
             ? b.out
             : (float*)malloc(peer_in_count(a.op, b.count, nranks) * sizeof(float));
  if (!b.in || !b.out) {
    fprintf(stderr, "mpi_bench: out of memory for %zu bytes\n", a.bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  peer_prepare(a.op, rank, nranks, b.count, b.in, b.out);
  double median_us = peer_time_us(run, barrier, &b, a.warmup, a.iters);
  peer_prepare(a.op, rank, nranks, b.count, b.in, b.out);
  run(&b);
  int64_t wrong = peer_count_wrong(a.op, rank, nranks, b.count, b.out);

  double max_us = 0;
  int64_t wrong_all = 0;
  check(MPI_Reduce(&median_us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "reduce");
  check(MPI_Reduce(&wrong, &wrong_all, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD), "reduce");
  if (rank == 0) {
    FILE* f = fopen(a.json_path, "w");
    if (!f) {
      perror(a.json_path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    peer_json_result(f, 1, &a, b.count, nranks, "default", max_us, wrong_all);
    peer_json_end(f);
    fclose(f);
  }
  if (b.in != b.out) free(b.in);
  free(b.out);
  MPI_Finalize();
  return 0;
}
