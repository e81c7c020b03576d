// STOKER_API marks what libstoker.so exports: the classes and functions of
// the public headers. The library is built with hidden visibility, so
// everything else (the gRPC stubs, the protobuf messages, internal helpers)
// stays private to it.
#ifndef STOKER_EXPORT_H_
#define STOKER_EXPORT_H_

// STOKER_LOCAL keeps a private member of an exported class (a constructor
// taking internal types, a nested Impl) out of the library's exports.
#if defined(__GNUC__) || defined(__clang__)
#define STOKER_API __attribute__((visibility("default")))
#define STOKER_LOCAL __attribute__((visibility("hidden")))
#else
#define STOKER_API
#define STOKER_LOCAL
#endif

#endif  // STOKER_EXPORT_H_
