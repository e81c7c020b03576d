# What the daemon's libraries need, and how each folder declares its
# library: included by the main build and by the fuzzers' own project
# (tests/fuzz), which builds some of the same folders with sanitizers.

find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(libjpeg-turbo CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_library(YUV_LIBRARY yuv REQUIRED)
find_path(YUV_INCLUDE_DIR libyuv.h REQUIRED)
find_library(SPNG_LIBRARY spng REQUIRED)
find_package(TIFF 4.5 REQUIRED)  # TIFFOpenOptions: per-handle error handlers
find_package(simdjson CONFIG REQUIRED)  # manifests and WebDataset json labels
find_package(PkgConfig REQUIRED)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)

# stoker_library(NAME SOURCES source... LINK target...): the static library
# stoker_NAME, also known as stoker::NAME, linking its targets PUBLIC.
function(stoker_library name)
  cmake_parse_arguments(PARSE_ARGV 1 LIB "" "" "SOURCES;LINK")
  add_library(stoker_${name} STATIC ${LIB_SOURCES})
  add_library(stoker::${name} ALIAS stoker_${name})
  target_link_libraries(stoker_${name} PUBLIC ${LIB_LINK})
endfunction()
