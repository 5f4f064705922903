# Fails when a source of one layer includes a header of a layer it may not use (cmake -P; cmake/TernLayers.cmake
# runs it before each layer target compiles, tests/layers runs it on fixtures).
#
#   cmake -DSRC_ROOT=<dir holding one folder per layer> -DLAYER=<folder> -DALLOWED=<comma list> [-DSTAMP=<file>]
#         -P TernLayerCheck.cmake
#
# Every file under SRC_ROOT/LAYER (any depth) is read; an `#include "d/..."` whose first component d is another
# folder of SRC_ROOT must name one of ALLOWED. Includes of anything else (include/tern's "tern/...", a file next to
# the includer) are not layers and pass. Linking cannot catch an include of a header-only part of another layer,
# and every layer sees all of src/ as its include root, so this is what keeps the direction.
cmake_minimum_required(VERSION 3.25)

foreach(var SRC_ROOT LAYER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "TernLayerCheck.cmake: -D${var}=... is required")
  endif()
endforeach()
get_filename_component(SRC_ROOT "${SRC_ROOT}" ABSOLUTE)
if(NOT IS_DIRECTORY "${SRC_ROOT}/${LAYER}")
  message(FATAL_ERROR "TernLayerCheck.cmake: ${SRC_ROOT}/${LAYER} is not a folder")
endif()
string(REPLACE "," ";" allowed "${ALLOWED}")
if(allowed)
  string(REPLACE ";" ", " allowed_text "${allowed}")
else()
  set(allowed_text "no other layer")
endif()

# The layers are the folders of SRC_ROOT.
file(GLOB entries RELATIVE ${SRC_ROOT} ${SRC_ROOT}/*)
set(layers "")
foreach(e ${entries})
  if(IS_DIRECTORY ${SRC_ROOT}/${e})
    list(APPEND layers ${e})
  endif()
endforeach()

file(GLOB_RECURSE files RELATIVE ${SRC_ROOT} ${SRC_ROOT}/${LAYER}/*.cpp ${SRC_ROOT}/${LAYER}/*.hpp
     ${SRC_ROOT}/${LAYER}/*.h ${SRC_ROOT}/${LAYER}/*.cu ${SRC_ROOT}/${LAYER}/*.cuh)
list(SORT files)
set(violations "")
foreach(f ${files})
  file(STRINGS ${SRC_ROOT}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" header "${line}")
    if(header MATCHES "^\\.\\./")
      # A relative path out of the folder would dodge the check below.
      string(APPEND violations "src/${f} includes ${header}: name another layer's header from src/, not by ../\n")
      continue()
    endif()
    if(NOT header MATCHES "/")
      continue()  # a file next to the includer
    endif()
    string(REGEX REPLACE "/.*$" "" target_dir "${header}")
    if(target_dir STREQUAL LAYER OR NOT target_dir IN_LIST layers OR target_dir IN_LIST allowed)
      continue()
    endif()
    string(APPEND violations "src/${f} includes ${header}: layer ${LAYER} may only use ${allowed_text}\n")
  endforeach()
endforeach()

if(violations)
  # One line each, unwrapped (a FATAL_ERROR message is reflowed), then the failure.
  message(NOTICE "${violations}")
  message(FATAL_ERROR "src/${LAYER}: includes against the layer order (the tern_layer declarations of the top-level "
                      "CMakeLists.txt; cmake/TernLayers.cmake): move the code to where it belongs")
endif()
if(DEFINED STAMP)
  get_filename_component(stamp_dir ${STAMP} DIRECTORY)
  file(MAKE_DIRECTORY ${stamp_dir})
  file(TOUCH ${STAMP})
endif()
