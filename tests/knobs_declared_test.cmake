# knobs.declared: the static check that every TERN_ variable is declared in the knobs table, read through it and
# documented as declared (knobs_declared_test.sh). Reads only the source tree: seconds at most.
add_test(NAME knobs.declared COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/knobs_declared_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(knobs.declared PROPERTIES TIMEOUT 60)
