# Runs cmake/TernLayerCheck.cmake on one layer and checks how it ends (tests/layers/CMakeLists.txt):
#   -DCHECK=<script> -DSRC_ROOT=... -DLAYER=... -DALLOWED=... -DEXPECT=pass|fail [-DMESSAGES=<msg>|<msg>...]
# With EXPECT=fail the check must exit non-zero and print every message of MESSAGES (a |-separated list); with
# EXPECT=pass it must exit 0.
execute_process(COMMAND ${CMAKE_COMMAND} -DSRC_ROOT=${SRC_ROOT} -DLAYER=${LAYER} -DALLOWED=${ALLOWED} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "layer ${LAYER} should pass the check, it failed (${rc}):\n${all}")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "layer ${LAYER} should fail the check, it passed:\n${all}")
endif()
string(REPLACE "|" ";" messages "${MESSAGES}")
foreach(m ${messages})
  string(FIND "${all}" "${m}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check's output lacks \"${m}\":\n${all}")
  endif()
endforeach()
