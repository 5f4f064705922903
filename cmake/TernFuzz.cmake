# TERN_FUZZ: libFuzzer targets (tests/fuzz) for every decoder of bytes that come from another process or a file.
# Needs clang (-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang; tools/fuzz.sh configures it). The whole
# library is compiled with coverage instrumentation and ASan + UBSan, so a finding anywhere below a decoder is seen;
# only the fuzz binaries link the libFuzzer driver.
option(TERN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
if(TERN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TERN_FUZZ=ON needs clang: configure with -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  if(TERN_SANITIZE)
    message(FATAL_ERROR "TERN_FUZZ brings its own sanitizers (address,undefined): leave TERN_SANITIZE empty")
  endif()
  set(tern_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${tern_fuzz_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=address,undefined>")
  message(STATUS "tern: fuzz targets on (libFuzzer, ASan, UBSan)")
endif()
