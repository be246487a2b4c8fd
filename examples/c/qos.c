/* QoS in C: two communicators of one job as two tenants, each with its traffic class, as the
 * articles' hcomm_set_qos(dev_ctx, &qos) sketch has it. Their shares apply to traffic that
 * leaves the host (a job whose ranks share one host is not shaped, but the classes are set,
 * validated and read back all the same).
 * Build (installed hcomm): cc -std=c99 qos.c $(pkg-config --cflags --libs hcomm)
 * Run:                     hcomm-run -n 2 ./a.out */
#include <hcomm/hcomm.h>

#include <stdio.h>
#include <string.h>

static int fail(const char* what, hcomm_status_t st) {
  fprintf(stderr, "%s: %s: %s\n", what, hcomm_status_string(st), hcomm_last_error());
  return 1;
}

int main(void) {
  hcomm_comm_t training, inference;
  hcomm_status_t st = hcomm_comm_create_from_env(&training);
  if (st != HCOMM_SUCCESS) return fail("hcomm_comm_create_from_env", st);
  st = hcomm_comm_create_from_env(&inference); /* a second communicator: another tenant */
  if (st != HCOMM_SUCCESS) return fail("hcomm_comm_create_from_env", st);

  hcomm_ctx_t dev_ctx;
  st = hcomm_ctx_open(training, &dev_ctx);
  if (st != HCOMM_SUCCESS) return fail("hcomm_ctx_open", st);
  hcomm_qos_config_t qos = {
      .min_rate = 30, /* guaranteed share of the link, % */
      .max_rate = 70, /* never more than this, % */
      .priority = 2   /* for what is left over; DSCP CS2 on the wire */
  };
  st = hcomm_set_qos(dev_ctx, &qos);
  if (st != HCOMM_SUCCESS) return fail("hcomm_set_qos", st);

  hcomm_ctx_t serving_ctx;
  hcomm_ctx_open(inference, &serving_ctx);
  hcomm_qos_config_t urgent = {.min_rate = 20, .max_rate = 100, .priority = 6};
  st = hcomm_set_qos(serving_ctx, &urgent);
  if (st != HCOMM_SUCCESS) return fail("hcomm_set_qos", st);

  /* A class out of range is refused, saying which field. */
  hcomm_qos_config_t bad = {.min_rate = 80, .max_rate = 50, .priority = 2};
  st = hcomm_set_qos(dev_ctx, &bad);
  int rank;
  hcomm_comm_rank(training, &rank);
  if (rank == 0) printf("a bad class: %s: %s\n", hcomm_status_string(st), hcomm_last_error());

  hcomm_qos_config_t now;
  hcomm_get_qos(dev_ctx, &now);
  float x = 1.0f, sum = 0.0f;
  st = hcomm_allreduce(training, &x, &sum, 1, HCOMM_FLOAT32, HCOMM_SUM);
  if (st != HCOMM_SUCCESS) return fail("hcomm_allreduce", st);
  if (rank == 0)
    printf("training: min %d%% max %d%% priority %d; an allreduce under it summed %.0f\n",
           now.min_rate, now.max_rate, now.priority, sum);
  hcomm_ctx_close(serving_ctx);
  hcomm_ctx_close(dev_ctx);
  hcomm_comm_destroy(inference);
  hcomm_comm_destroy(training);
  return now.min_rate == 30 && now.max_rate == 70 && now.priority == 2 ? 0 : 1;
}
