/* hcomm public API in C: communicators, collectives and point-to-point operations, memory
 * registration and QoS, for C99 programs and any language's foreign-function interface.
 *
 * Conventions:
 *   - Every function but the few that return a name or a size returns an hcomm_status_t
 *     (HCOMM_SUCCESS or an error code) and never aborts or lets a C++ exception out.
 *     hcomm_last_error() is the full message of this thread's last failed call: what happened
 *     and what to do about it.
 *   - Handles are opaque. A handle that is NULL, was never returned by hcomm or was freed already
 *     is refused with HCOMM_ERR_INVALID_ARG: handles are looked up, not dereferenced.
 *   - Counts are in elements of the operation's data type. Buffers must stay valid until the
 *     operation completes: the blocking forms return then; a non-blocking form's hcomm_work_t
 *     says when (hcomm_work_wait, hcomm_work_test).
 *   - Every rank calls the same collectives in the same order. Functions may be called from any
 *     thread; operations start in the order their calls were made.
 *
 *   hcomm_comm_t comm;
 *   if (hcomm_comm_create_from_env(&comm) != HCOMM_SUCCESS) {
 *     fprintf(stderr, "%s\n", hcomm_last_error());
 *     return 1;
 *   }
 *   hcomm_allreduce(comm, send, recv, count, HCOMM_FLOAT32, HCOMM_SUM);
 *   hcomm_comm_destroy(comm);
 */
#ifndef HCOMM_H
#define HCOMM_H

#include <stddef.h>
#include <stdint.h>

#include "hcomm/export.h"
#include "hcomm/status_codes.h"
#include "hcomm/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status */

/* The symbolic name of a code, e.g. "HCOMM_ERR_TIMEOUT"; "HCOMM_ERR_UNKNOWN" for another value. */
HCOMM_API const char* hcomm_status_string(hcomm_status_t status);
/* The message of the last call on this thread that failed ("" when none has): valid until the
 * next call on this thread fails. */
HCOMM_API const char* hcomm_last_error(void);

/* ---- types */

typedef enum hcomm_datatype {
  HCOMM_INT8 = 0,
  HCOMM_UINT8 = 1,
  HCOMM_INT32 = 2,
  HCOMM_INT64 = 3,
  HCOMM_FLOAT16 = 4,  /* IEEE 754 binary16 */
  HCOMM_BFLOAT16 = 5, /* the upper half of a binary32 */
  HCOMM_FLOAT32 = 6,
  HCOMM_FLOAT64 = 7
} hcomm_datatype_t;

typedef enum hcomm_redop {
  HCOMM_SUM = 0,
  HCOMM_PROD = 1,
  HCOMM_MIN = 2,
  HCOMM_MAX = 3,
  HCOMM_AVG = 4,  /* integers: the wrapped sum divided, truncating toward zero */
  HCOMM_BAND = 5, /* bitwise and, or, exclusive or: integer types only */
  HCOMM_BOR = 6,
  HCOMM_BXOR = 7
} hcomm_redop_t;

/* Bytes per element; 0 for a value outside the enum. */
HCOMM_API size_t hcomm_datatype_size(hcomm_datatype_t dtype);

/* ---- handles */

typedef struct hcomm_comm_s* hcomm_comm_t; /* a communicator */
typedef struct hcomm_work_s* hcomm_work_t; /* a non-blocking operation */
typedef struct hcomm_ctx_s* hcomm_ctx_t;   /* a device context (the articles' dev_ctx) */
typedef struct hcomm_mr_s* hcomm_mr_t;     /* a memory registration */

/* Payload codecs (README "Compression"): lossy fp16/bf16 for float32 and float64 payloads,
 * lossless delta and zstd for any; AUTO: lossless zstd where the link is slower than the codec,
 * never within a host. Values as hcomm::Compression. */
typedef enum hcomm_compression {
  HCOMM_COMPRESSION_NONE = 0,
  HCOMM_COMPRESSION_FP16 = 1,
  HCOMM_COMPRESSION_BF16 = 2,
  HCOMM_COMPRESSION_DELTA = 3,
  HCOMM_COMPRESSION_ZSTD = 4,
  HCOMM_COMPRESSION_AUTO = 5
} hcomm_compression_t;

/* ---- configuration */

/* What a communicator is created with. hcomm_config_init() fills it with the defaults overridden
 * by the environment (HCOMM_RANK, HCOMM_WORLD_SIZE, HCOMM_ROOT_ADDR or a launcher's variables,
 * and every other HCOMM_* variable, which the fields below do not cover); then change what you
 * want to fix in code. Strings are NUL-terminated within their arrays. */
typedef struct hcomm_config {
  int rank;               /* this process's rank; -1: not set */
  int world_size;         /* ranks in the communicator; -1: not set */
  char root_addr[256];    /* "host:port" of rank 0's rendezvous store */
  char transport[64];     /* "auto", "shm", "rdma", "tcp" or a registered protocol */
  char socket_ifname[64]; /* interface to listen on; "": chosen from the route to the root */
  char algo[256];         /* forced algorithms ("allreduce=ring;broadcast=tree"); "": automatic */
  int64_t connect_timeout_ms; /* joining the rendezvous and connecting every peer */
  int64_t op_timeout_ms;      /* how long the blocking forms wait */
  /* (both in milliseconds, 1 to 2147483647, as HCOMM_CONNECT_TIMEOUT_MS and HCOMM_TIMEOUT_MS) */
  hcomm_compression_t compression; /* HCOMM_COMPRESSION */
  size_t comp_threshold; /* HCOMM_COMP_THRESHOLD: smaller frames travel as they are (up to 1G) */
} hcomm_config_t;

/* HCOMM_ERR_INVALID_ARG naming the variable when one is set to something that does not parse. */
HCOMM_API hcomm_status_t hcomm_config_init(hcomm_config_t* config);

/* ---- communicators (collective: every rank calls them) */

/* A communicator configured from the environment alone (hcomm_config_init, unchanged). */
HCOMM_API hcomm_status_t hcomm_comm_create_from_env(hcomm_comm_t* comm);
HCOMM_API hcomm_status_t hcomm_comm_create(const hcomm_config_t* config, hcomm_comm_t* comm);
/* Ends the communicator: operations still running fail with HCOMM_ERR_ABORTED; works made from
 * it stay valid handles until freed. */
HCOMM_API hcomm_status_t hcomm_comm_destroy(hcomm_comm_t comm);
HCOMM_API hcomm_status_t hcomm_comm_rank(hcomm_comm_t comm, int* rank);
HCOMM_API hcomm_status_t hcomm_comm_size(hcomm_comm_t comm, int* size);
/* Any thread, never blocks: fails what runs and everything later, here and at the peers. */
HCOMM_API hcomm_status_t hcomm_comm_abort(hcomm_comm_t comm, const char* reason);
/* Any thread: the codec of the operations started from now on (hcomm::Communicator::
 * set_compression); ranks may differ, a receiver decodes whatever arrives. */
HCOMM_API hcomm_status_t hcomm_comm_set_compression(hcomm_comm_t comm, hcomm_compression_t mode);
HCOMM_API hcomm_status_t hcomm_comm_get_compression(hcomm_comm_t comm, hcomm_compression_t* mode);

/* ---- non-blocking operations: each _async form returns a work at once */

/* Waits up to `timeout_ms` (negative: the communicator's op_timeout; INT64_MAX: as long as it
 * takes). Returns the operation's status, or
 * HCOMM_ERR_TIMEOUT while it still runs (the work stays valid: wait again or free it; its
 * buffers must stay valid until it completes). */
HCOMM_API hcomm_status_t hcomm_work_wait(hcomm_work_t work, int64_t timeout_ms);
/* *done = 1 once the operation completed (hcomm_work_wait then returns its status at once). */
HCOMM_API hcomm_status_t hcomm_work_test(hcomm_work_t work, int* done);
/* Releases the handle; an operation still running goes on (keep its buffers until it ends). */
HCOMM_API hcomm_status_t hcomm_work_free(hcomm_work_t work);
/* A receive from HCOMM_ANY_SOURCE: *source = the rank whose message it took, once matched;
 * -1 before, and for every other operation. */
HCOMM_API hcomm_status_t hcomm_work_source(hcomm_work_t work, int* source);

/* ---- collectives. In place: allreduce, reduce send == recv; allgather send == recv +
 * rank * count; reduce_scatter recv == send + rank * count; alltoall send == recv. */

HCOMM_API hcomm_status_t hcomm_allreduce(hcomm_comm_t comm, const void* send, void* recv,
                                         size_t count, hcomm_datatype_t dtype, hcomm_redop_t op);
HCOMM_API hcomm_status_t hcomm_allreduce_async(hcomm_comm_t comm, const void* send, void* recv,
                                               size_t count, hcomm_datatype_t dtype,
                                               hcomm_redop_t op, hcomm_work_t* work);
/* `buf` is read on `root` and written on the others. */
HCOMM_API hcomm_status_t hcomm_broadcast(hcomm_comm_t comm, void* buf, size_t count,
                                         hcomm_datatype_t dtype, int root);
HCOMM_API hcomm_status_t hcomm_broadcast_async(hcomm_comm_t comm, void* buf, size_t count,
                                               hcomm_datatype_t dtype, int root,
                                               hcomm_work_t* work);
/* The result on `root` only (the others may pass recv = NULL). */
HCOMM_API hcomm_status_t hcomm_reduce(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                      hcomm_datatype_t dtype, hcomm_redop_t op, int root);
HCOMM_API hcomm_status_t hcomm_reduce_async(hcomm_comm_t comm, const void* send, void* recv,
                                            size_t count, hcomm_datatype_t dtype, hcomm_redop_t op,
                                            int root, hcomm_work_t* work);
/* recv: size * count elements, block i from rank i. */
HCOMM_API hcomm_status_t hcomm_allgather(hcomm_comm_t comm, const void* send, void* recv,
                                         size_t count, hcomm_datatype_t dtype);
HCOMM_API hcomm_status_t hcomm_allgather_async(hcomm_comm_t comm, const void* send, void* recv,
                                               size_t count, hcomm_datatype_t dtype,
                                               hcomm_work_t* work);
/* Rank i's recv_counts[i] elements at recv + recv_displs[i] (arrays of `size` entries). */
HCOMM_API hcomm_status_t hcomm_allgatherv(hcomm_comm_t comm, const void* send, void* recv,
                                          const size_t* recv_counts, const size_t* recv_displs,
                                          hcomm_datatype_t dtype);
HCOMM_API hcomm_status_t hcomm_allgatherv_async(hcomm_comm_t comm, const void* send, void* recv,
                                                const size_t* recv_counts,
                                                const size_t* recv_displs, hcomm_datatype_t dtype,
                                                hcomm_work_t* work);
/* send: size * recv_count elements; rank i gets block i reduced. */
HCOMM_API hcomm_status_t hcomm_reduce_scatter(hcomm_comm_t comm, const void* send, void* recv,
                                              size_t recv_count, hcomm_datatype_t dtype,
                                              hcomm_redop_t op);
HCOMM_API hcomm_status_t hcomm_reduce_scatter_async(hcomm_comm_t comm, const void* send, void* recv,
                                                    size_t recv_count, hcomm_datatype_t dtype,
                                                    hcomm_redop_t op, hcomm_work_t* work);
/* Block i of send goes to rank i; block i of recv comes from rank i (count elements each). */
HCOMM_API hcomm_status_t hcomm_alltoall(hcomm_comm_t comm, const void* send, void* recv,
                                        size_t count, hcomm_datatype_t dtype);
HCOMM_API hcomm_status_t hcomm_alltoall_async(hcomm_comm_t comm, const void* send, void* recv,
                                              size_t count, hcomm_datatype_t dtype,
                                              hcomm_work_t* work);
/* MPI's alltoallv: counts and displacements in elements, arrays of `size` entries. */
HCOMM_API hcomm_status_t hcomm_alltoallv(hcomm_comm_t comm, const void* send,
                                         const size_t* send_counts, const size_t* send_displs,
                                         void* recv, const size_t* recv_counts,
                                         const size_t* recv_displs, hcomm_datatype_t dtype);
HCOMM_API hcomm_status_t hcomm_alltoallv_async(hcomm_comm_t comm, const void* send,
                                               const size_t* send_counts, const size_t* send_displs,
                                               void* recv, const size_t* recv_counts,
                                               const size_t* recv_displs, hcomm_datatype_t dtype,
                                               hcomm_work_t* work);
/* root's recv: size * count elements, block i from rank i (the others may pass recv = NULL). */
HCOMM_API hcomm_status_t hcomm_gather(hcomm_comm_t comm, const void* send, void* recv, size_t count,
                                      hcomm_datatype_t dtype, int root);
HCOMM_API hcomm_status_t hcomm_gather_async(hcomm_comm_t comm, const void* send, void* recv,
                                            size_t count, hcomm_datatype_t dtype, int root,
                                            hcomm_work_t* work);
/* root's send: size * count elements, block i to rank i (the others may pass send = NULL). */
HCOMM_API hcomm_status_t hcomm_scatter(hcomm_comm_t comm, const void* send, void* recv,
                                       size_t count, hcomm_datatype_t dtype, int root);
HCOMM_API hcomm_status_t hcomm_scatter_async(hcomm_comm_t comm, const void* send, void* recv,
                                             size_t count, hcomm_datatype_t dtype, int root,
                                             hcomm_work_t* work);
HCOMM_API hcomm_status_t hcomm_barrier(hcomm_comm_t comm);
HCOMM_API hcomm_status_t hcomm_barrier_async(hcomm_comm_t comm, hcomm_work_t* work);

/* ---- point to point. Messages between a pair with the same tag (0 <= tag < INT_MAX) arrive in
 * order; a send completes once its bytes are handed to the transport. */

HCOMM_API hcomm_status_t hcomm_send(hcomm_comm_t comm, const void* buf, size_t count,
                                    hcomm_datatype_t dtype, int peer, int tag);
HCOMM_API hcomm_status_t hcomm_send_async(hcomm_comm_t comm, const void* buf, size_t count,
                                          hcomm_datatype_t dtype, int peer, int tag,
                                          hcomm_work_t* work);
/* peer = HCOMM_ANY_SOURCE (MPI_ANY_SOURCE): the first message with `tag` from any rank that no
 * receive naming its source took (hcomm_work_source says whose). */
#define HCOMM_ANY_SOURCE (-1)
HCOMM_API hcomm_status_t hcomm_recv(hcomm_comm_t comm, void* buf, size_t count,
                                    hcomm_datatype_t dtype, int peer, int tag);
HCOMM_API hcomm_status_t hcomm_recv_async(hcomm_comm_t comm, void* buf, size_t count,
                                          hcomm_datatype_t dtype, int peer, int tag,
                                          hcomm_work_t* work);

typedef enum hcomm_p2p_kind { HCOMM_P2P_SEND = 0, HCOMM_P2P_RECV = 1 } hcomm_p2p_kind_t;
typedef struct hcomm_p2p_op {
  hcomm_p2p_kind_t kind;
  void* buf; /* read for a send, written for a receive */
  size_t count;
  hcomm_datatype_t dtype;
  int peer; /* this rank too: matched with the batch's receive from itself of the same tag */
  int tag;
} hcomm_p2p_op_t;
/* Sends and receives to any peers started together (NCCL's group); one status for all. */
HCOMM_API hcomm_status_t hcomm_batch(hcomm_comm_t comm, const hcomm_p2p_op_t* ops, size_t n);
HCOMM_API hcomm_status_t hcomm_batch_async(hcomm_comm_t comm, const hcomm_p2p_op_t* ops, size_t n,
                                           hcomm_work_t* work);

/* ---- device context, memory registration and QoS (the articles' dev_ctx calls) */

/* The context of the devices `comm` uses; `comm` NULL: of this process's devices before any
 * communicator exists (memory registration only). Close it with hcomm_ctx_close(). */
HCOMM_API hcomm_status_t hcomm_ctx_open(hcomm_comm_t comm, hcomm_ctx_t* ctx);
HCOMM_API hcomm_status_t hcomm_ctx_close(hcomm_ctx_t ctx);

/* Access flags of a registration (ibverbs' IBV_ACCESS_*): hcomm's transports need local write,
 * and remote read and write for one-sided transfers. HCOMM_ACCESS_LOCAL_WRITE is required; any
 * other bit is refused. */
enum { HCOMM_ACCESS_LOCAL_WRITE = 1, HCOMM_ACCESS_REMOTE_WRITE = 2, HCOMM_ACCESS_REMOTE_READ = 4 };
/* Registers [addr, addr + size) with every RDMA device of this process, now and later: sends from
 * it go to the NIC in place whatever its alignment. The memory must stay mapped until
 * hcomm_dereg_mem(). HCOMM_ERR_MMAP names `ulimit -l` when the locked-memory limit refuses it.
 * The same range registered again gets a handle of its own on the same registration (which ends
 * with the last handle's hcomm_dereg_mem); another size at an address registered already is
 * refused (HCOMM_ERR_INVALID_ARG). */
HCOMM_API hcomm_status_t hcomm_reg_mem(hcomm_ctx_t ctx, void* addr, size_t size, int access,
                                       hcomm_mr_t* mr);
/* Ends the registration and frees the handle. */
HCOMM_API hcomm_status_t hcomm_dereg_mem(hcomm_mr_t mr);

/* A communicator's traffic class: a minimum share of the host's bottleneck link it is guaranteed
 * while it has traffic, a maximum it never exceeds (percent), and a priority (0..7, higher first
 * for what is left; the DSCP class selector of its packets). */
typedef struct hcomm_qos_config {
  int min_rate; /* 0..100 */
  int max_rate; /* 1..100, >= min_rate */
  int priority; /* 0..7 */
} hcomm_qos_config_t;
/* Sets the class of the communicator the context was opened on (HCOMM_ERR_INVALID_ARG for a
 * context without one, or a class out of range, saying which field). */
HCOMM_API hcomm_status_t hcomm_set_qos(hcomm_ctx_t ctx, const hcomm_qos_config_t* qos);
HCOMM_API hcomm_status_t hcomm_get_qos(hcomm_ctx_t ctx, hcomm_qos_config_t* qos);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HCOMM_H */
