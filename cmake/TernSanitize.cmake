# TERN_SANITIZE: build everything (library, tests, tools) under a sanitizer, for `make test-sanitize`.
#   -DTERN_SANITIZE=address,undefined   ASan + UBSan
#   -DTERN_SANITIZE=thread              TSan
# Every report is fatal (UBSan does not recover), so a test that triggers one fails instead of printing and passing.
# Included before any target is defined: the flags must reach every object, including the ones shared through
# the layer targets (cmake/TernLayers.cmake).
set(TERN_SANITIZE "" CACHE STRING "Sanitizers for the whole build: address,undefined | thread | empty (none)")
set_property(CACHE TERN_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
if(TERN_SANITIZE)
  if(NOT TERN_SANITIZE MATCHES "^(address|undefined|address,undefined|undefined,address|thread)$")
    message(FATAL_ERROR "TERN_SANITIZE=${TERN_SANITIZE}: use address,undefined or thread")
  endif()
  set(tern_san_flags -fsanitize=${TERN_SANITIZE} -fno-omit-frame-pointer)
  if(TERN_SANITIZE MATCHES "undefined")
    # Not -fsanitize=enum: the C API takes its dtype and op enums from C callers, who may pass any int, and the
    # library checks them (ternInvalidArgument) before using them; reading such a value through the C++ enum type is
    # what that check reports, on the very path that rejects it.
    list(APPEND tern_san_flags -fno-sanitize-recover=undefined -fno-sanitize=enum)
  endif()
  # -O1 with line tables, as the sanitizers' own documentation recommends: reports keep their file:line stacks, and
  # the instrumented build compiles in far less time than at -O2 with full debug information (UBSan's checks
  # multiply the optimiser's work), which is what decides whether the sanitizer runs fit in CI.
  # Compile options come after the build type's flags, and the last -O and -g given win.
  if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
    list(APPEND tern_san_flags -O1 -g1)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${tern_san_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${tern_san_flags}>")
  # Sanitized objects must never be served to (or from) the plain builds by ccache under the same key: the flags
  # differ, so they cannot, but keep the sanitizer visible in the configure log.
  message(STATUS "tern: sanitizers ${TERN_SANITIZE}")
endif()

# How much longer the multi-process test matrices may take in this build: instrumented code runs several times
# slower (TSan most: every memory access goes through its shadow state), and on a small machine the ranks of one
# test share its cores. tern_matrix_test (tests/CMakeLists.txt: the tests/mp and tests/shm matrices) scales
# tern-run's deadline, ctest's timeout and TERN_TIMEOUT by it, and runs their 2^20+3-element calls lean (one datatype per element size, every collective and op still covered): at that size a
# sanitizer re-checks the same code paths over millions of elements, which costs time and finds nothing the
# smaller sizes do not.
if(TERN_SANITIZE MATCHES "thread")
  set(TERN_TEST_TIME_SCALE 4)
elseif(TERN_SANITIZE)
  set(TERN_TEST_TIME_SCALE 2)
else()
  set(TERN_TEST_TIME_SCALE 1)
endif()
