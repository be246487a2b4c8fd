/* hcomm public API: the status codes every call returns, in C and C++ alike (C++ names them
 * hcomm::StatusCode, hcomm::HCOMM_SUCCESS, ...). Usable from C99. */
#ifndef HCOMM_STATUS_CODES_H
#define HCOMM_STATUS_CODES_H

typedef enum hcomm_status {
  HCOMM_SUCCESS = 0,
  HCOMM_ERR_INVALID_ARG = 1, /* a caller error: null buffer, bad type/op, rank out of range, ... */
  HCOMM_ERR_NO_DEVICE = 2,   /* the requested transport's device is not present */
  HCOMM_ERR_OUT_OF_MEM = 3,  /* an allocation of communication memory failed */
  HCOMM_ERR_MMAP = 4,        /* mapping or pinning memory failed (check `ulimit -l`) */
  HCOMM_ERR_TIMEOUT = 5,     /* a deadline passed (joining, connecting, waiting) */
  HCOMM_ERR_PEER_LOST = 6,   /* a peer process is gone; operations involving it cannot finish */
  HCOMM_ERR_TRANSPORT = 7,   /* a link failed with an I/O error */
  HCOMM_ERR_ABORTED = 8,     /* the operation was cancelled (communicator destroyed or aborted) */
  HCOMM_ERR_INTERNAL = 9     /* a bug in hcomm; please report it with HCOMM_DEBUG=INFO output */
} hcomm_status_t;

#endif /* HCOMM_STATUS_CODES_H */
