# Compiles through ccache when it is installed and the user chose no launcher of their own (-D or the
# CMAKE_<LANG>_COMPILER_LAUNCHER environment variable). The main build, `pip install .` (build-wheel-*) and every
# build-* folder use the same build type and flags, so one build's objects serve the others from the cache.
option(TERN_USE_CCACHE "Compile through ccache when it is installed" ON)
if(TERN_USE_CCACHE)
  find_program(TERN_CCACHE ccache)
  if(TERN_CCACHE)
    get_property(tern_enabled_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    foreach(lang IN LISTS tern_enabled_languages)
      if(lang MATCHES "^(C|CXX|CUDA)$" AND NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER
         AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${TERN_CCACHE})
      endif()
    endforeach()
  endif()
endif()
