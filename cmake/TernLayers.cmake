# One CMake target per directory of src/ (docs/DESIGN.md, "Layers"), each linking only the layers below it.
#
#   tern_layer(<dir> [USES <dir>...] [EXCLUDE <subdir>...])
#
# makes the OBJECT library tern_<dir> from src/<dir>/**.cpp (less the subfolders EXCLUDE names, which add their own
# sources when their optional dependency is found) and links it to tern_<u> for each USES entry. Those link
# declarations are the one source of truth: a layer may include the headers of what it links, directly or through
# the layers it links (tern_layer_checks turns them into each layer's list), and nothing above or beside it.
# libtern.so and tern_internal are made of every layer's objects (tern_layer_objects()).

# Usage requirements every layer shares: the include roots, the third-party libraries, hidden visibility.
add_library(tern_layer_settings INTERFACE)
target_include_directories(tern_layer_settings
  INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
target_link_libraries(tern_layer_settings INTERFACE Threads::Threads nlohmann_json::nlohmann_json pugixml::pugixml
                                                    OpenSSL::Crypto)
target_compile_definitions(tern_layer_settings INTERFACE TERN_BUILDING_LIBRARY=1)
# Thread-local state (call groups, recycled operations) is read on every call. In a shared library the default
# access goes through __tls_get_addr; TLS descriptors cost a load once the loader placed the block, and still work
# when libtern is dlopen()ed (the PyTorch extension). GCC on x86-64 only; tools/lint.sh drops the flag for
# clang-tidy, whose clang may not know it.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-mtls-dialect=gnu2 TERN_HAVE_TLS_DESCRIPTORS)
if(TERN_HAVE_TLS_DESCRIPTORS AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(tern_layer_settings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-mtls-dialect=gnu2>)
endif()
if(HWLOC_FOUND)
  target_link_libraries(tern_layer_settings INTERFACE PkgConfig::HWLOC)
  target_compile_definitions(tern_layer_settings INTERFACE TERN_HAVE_HWLOC=1)
endif()

function(tern_layer dir)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "USES;EXCLUDE")
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${dir}/*.cpp)
  foreach(sub ${L_EXCLUDE})
    list(FILTER sources EXCLUDE REGEX "/src/${dir}/${sub}/")
  endforeach()
  add_library(tern_${dir} OBJECT ${sources})
  target_link_libraries(tern_${dir} PUBLIC tern_layer_settings)
  foreach(u ${L_USES})
    if(NOT TARGET tern_${u})
      message(FATAL_ERROR "tern_layer(${dir}): layer ${u} is declared after it; declare the layers bottom up")
    endif()
    target_link_libraries(tern_${dir} PUBLIC tern_${u})
  endforeach()
  set_target_properties(tern_${dir} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                                               TERN_LAYER ${dir})
  set_property(GLOBAL APPEND PROPERTY TERN_LAYERS ${dir})
  set_property(GLOBAL APPEND PROPERTY TERN_CHECKED_DIRS ${dir})
endfunction()

# A directory of src/ above the layers (src/train: libtern_train, on the public C API only) may include none of
# them; the check runs before <target> compiles.
function(tern_face_of_layers dir target)
  set_property(GLOBAL APPEND PROPERTY TERN_CHECKED_DIRS ${dir})
  set_property(GLOBAL PROPERTY TERN_FACE_${dir}_TARGET ${target})
endfunction()

# The layers a layer's target links, directly or through another layer: what its sources may include.
function(tern_layer_closure dir out)
  set(result "")
  set(todo tern_${dir})
  while(todo)
    list(POP_FRONT todo t)
    get_target_property(links ${t} LINK_LIBRARIES)
    get_target_property(interface_links ${t} INTERFACE_LINK_LIBRARIES)
    foreach(l ${links} ${interface_links})
      if(TARGET ${l})
        get_target_property(layer ${l} TERN_LAYER)
        if(layer AND NOT layer IN_LIST result)
          list(APPEND result ${layer})
          list(APPEND todo ${l})
        endif()
      endif()
    endforeach()
  endwhile()
  list(SORT result)
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# After every layer (and its optional parts) is declared: each layer's list, and a build step before each layer
# compiles that fails on an include outside it (cmake/TernLayerCheck.cmake).
function(tern_layer_checks)
  get_property(dirs GLOBAL PROPERTY TERN_CHECKED_DIRS)
  foreach(dir ${dirs})
    get_property(target GLOBAL PROPERTY TERN_FACE_${dir}_TARGET)
    if(target)
      set(uses "")
    else()
      set(target tern_${dir})
      tern_layer_closure(${dir} uses)
    endif()
    set_property(GLOBAL PROPERTY TERN_LAYER_${dir}_USES ${uses})
    string(REPLACE ";" "," uses_arg "${uses}")
    if(uses)
      string(REPLACE ";" ", " uses_text "${uses}")
    else()
      set(uses_text "no other layer")
    endif()
    file(GLOB_RECURSE checked CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${dir}/*.cpp
         ${PROJECT_SOURCE_DIR}/src/${dir}/*.hpp ${PROJECT_SOURCE_DIR}/src/${dir}/*.h
         ${PROJECT_SOURCE_DIR}/src/${dir}/*.cu ${PROJECT_SOURCE_DIR}/src/${dir}/*.cuh)
    set(stamp ${CMAKE_BINARY_DIR}/layer_check/${dir}.stamp)
    add_custom_command(
      OUTPUT ${stamp}
      COMMAND ${CMAKE_COMMAND} -DSRC_ROOT=${PROJECT_SOURCE_DIR}/src -DLAYER=${dir} -DALLOWED=${uses_arg}
              -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/TernLayerCheck.cmake
      DEPENDS ${checked} ${PROJECT_SOURCE_DIR}/cmake/TernLayerCheck.cmake
      COMMENT "Checking the includes of src/${dir}: it may use ${uses_text}"
      VERBATIM)
    add_custom_target(tern_${dir}_layer_check DEPENDS ${stamp})
    add_dependencies(${target} tern_${dir}_layer_check)
  endforeach()
endfunction()

# Every layer's objects, for add_library(... $<TARGET_OBJECTS:...>) of libtern.so and tern_internal.
function(tern_layer_objects out)
  get_property(layers GLOBAL PROPERTY TERN_LAYERS)
  set(objects "")
  foreach(dir ${layers})
    list(APPEND objects $<TARGET_OBJECTS:tern_${dir}>)
  endforeach()
  set(${out} ${objects} PARENT_SCOPE)
endfunction()
