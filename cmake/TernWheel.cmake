# `pip install .` (scikit-build-core defines SKBUILD): the wheel holds the package tern with libtern (and
# libtern_train) in tern/lib, the public headers in tern/include, tern.pc and the CMake package under tern/lib, and
# the launcher in the wheel's scripts (pip puts it on PATH as `tern-run`). Set before GNUInstallDirs so every
# install() rule of the project, including those of subdirectories, lands there.
set(TERN_WHEEL ON)
set(CMAKE_INSTALL_LIBDIR tern/lib)
set(CMAKE_INSTALL_INCLUDEDIR tern/include)
set(CMAKE_INSTALL_BINDIR ${SKBUILD_SCRIPTS_DIR})
# Only what the wheel holds is built: no tests, perf binaries, examples or other tools.
set(BUILD_TESTING OFF)
