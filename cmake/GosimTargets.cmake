# Helpers that give every gosim target the same warnings and sanitizer flags.

add_library(gosim_options INTERFACE)
target_compile_options(gosim_options INTERFACE -Wall -Wextra -Wno-unused-parameter
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)  # GCC 12 false positives in <string>
if(GOSIM_SANITIZE)
  target_compile_options(gosim_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(gosim_options INTERFACE -fsanitize=address,undefined)
endif()

# gosim_module(NAME SOURCES ... DEPS ...): a static library gosim_NAME with the
# alias gosim::NAME, the repository root on its include path.
function(gosim_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(gosim_${name} STATIC ${ARG_SOURCES})
  add_library(gosim::${name} ALIAS gosim_${name})
  target_include_directories(gosim_${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(gosim_${name} PUBLIC ${ARG_DEPS} PRIVATE gosim_options)
endfunction()
