# Helpers that give every gosim target the same warnings and sanitizer flags.

add_library(gosim_options INTERFACE)
target_compile_options(gosim_options INTERFACE -Wall -Wextra -Wno-unused-parameter
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)  # GCC 12 false positives in <string>
if(GOSIM_SANITIZE)
  target_compile_options(gosim_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(gosim_options INTERFACE -fsanitize=address,undefined)
endif()

# gosim_module(NAME SOURCES ... DEPS ...): a shared library gosim_NAME with the
# alias gosim::NAME, the repository root on its include path. Shared, so that
# the program, the LibTorch plugin and the Python module all use one copy of
# each module (one agent registry, one cost-model registry), and so that
# programs that never touch LibTorch never load it. Libraries go to
# build/lib; the global property GOSIM_MODULES lists them (the Python
# package installs them, python/CMakeLists.txt).
function(gosim_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(gosim_${name} SHARED ${ARG_SOURCES})
  set_property(GLOBAL APPEND PROPERTY GOSIM_MODULES gosim_${name})
  set_target_properties(gosim_${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  add_library(gosim::${name} ALIAS gosim_${name})
  target_include_directories(gosim_${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(gosim_${name} PUBLIC ${ARG_DEPS} PRIVATE gosim_options)
endfunction()

# gosim_torch_module(NAME SOURCES ... DEPS ...): a gosim_module linked to
# LibTorch, for the only two places allowed to include torch headers: the
# learned agents (agents/learned/) and calibration's hardware executor
# (calibration/hardware/). Every source gets cmake/torch_pch.h as a
# precompiled header, so the torch headers are parsed once per target.
# Torch's include directories are SYSTEM so that our warnings stay on for
# our code only. Only defined when GOSIM_WITH_TORCH is ON.
function(gosim_torch_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  gosim_module(${name} SOURCES ${ARG_SOURCES} DEPS ${ARG_DEPS})
  target_include_directories(gosim_${name} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  target_link_libraries(gosim_${name} PUBLIC ${TORCH_LIBRARIES})
  target_compile_definitions(gosim_${name} PUBLIC GOSIM_WITH_TORCH=1)
  target_precompile_headers(gosim_${name} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/torch_pch.h)
endfunction()
