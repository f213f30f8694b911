# Finds every third-party library gosim uses. All come from Debian packages
# (see the Makefile's DEBIAN_PACKAGES); a missing one fails here with a hint.

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Boost 1.74 REQUIRED)  # header-only parts: Boost.Graph
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(TBB REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Protobuf REQUIRED)
find_package(ONNX QUIET)
find_package(PkgConfig REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)  # Open MPI: gosim run / train over several processes

if(GOSIM_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(GOSIM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
if(GOSIM_WITH_TORCH)
  find_package(Torch REQUIRED)
endif()

# yaml-cpp 0.7 on Debian exports the target as `yaml-cpp` without namespace.
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
