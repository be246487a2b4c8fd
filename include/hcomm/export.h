/* hcomm public API: which declarations libhcomm.so exports.
 *
 * The library is built with hidden visibility: only what a public header marks HCOMM_API (and,
 * through the link's version script, nothing outside namespace hcomm and the hcomm_ C functions)
 * is visible to applications. Usable from C and C++. */
#ifndef HCOMM_EXPORT_H
#define HCOMM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define HCOMM_API __attribute__((visibility("default")))
#else
#define HCOMM_API
#endif

#endif /* HCOMM_EXPORT_H */
