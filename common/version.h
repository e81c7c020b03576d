#ifndef STOKER_COMMON_VERSION_H_
#define STOKER_COMMON_VERSION_H_

// The project's version; CMakeLists.txt reads it from here.
namespace stoker {

inline constexpr char kVersion[] = "0.2.0";

}  // namespace stoker

#endif  // STOKER_COMMON_VERSION_H_
