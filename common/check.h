// STOKER_CHECK: for broken internal invariants only. Anything a client sent or
// a file contained is an error Status, never a CHECK.
#ifndef STOKER_COMMON_CHECK_H_
#define STOKER_COMMON_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define STOKER_CHECK(cond)                                              \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "<2>%s:%d: internal invariant failed: %s\n", \
                   __FILE__, __LINE__, #cond);                          \
      std::abort();                                                     \
    }                                                                   \
  } while (0)

#endif  // STOKER_COMMON_CHECK_H_
