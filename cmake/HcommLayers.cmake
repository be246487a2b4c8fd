# The library's layers (layers.txt): hcomm_layer(NAME SOURCES ... [LIBS ...]) makes the object
# library hcomm_NAME from NAME/'s sources and links it to every layer listed before NAME, and to
# LIBS (privately: what the layer alone uses). libhcomm.a and libhcomm.so are made of all of them.

file(STRINGS "${PROJECT_SOURCE_DIR}/layers.txt" HCOMM_LAYERS REGEX "^[a-z]")
# The layers that make up the library: all but the programs on top.
set(HCOMM_LIBRARY_LAYERS ${HCOMM_LAYERS})
list(REMOVE_ITEM HCOMM_LIBRARY_LAYERS tools)

function(hcomm_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;LIBS" ${ARGN})
  list(FIND HCOMM_LAYERS ${name} index)
  if(index LESS 0)
    message(FATAL_ERROR "hcomm_layer(${name}): ${name} is not in layers.txt")
  endif()
  add_library(hcomm_${name} OBJECT ${L_SOURCES})
  target_include_directories(hcomm_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  list(SUBLIST HCOMM_LAYERS 0 ${index} below)
  foreach(lower IN LISTS below)
    target_link_libraries(hcomm_${name} PUBLIC hcomm_${lower})
  endforeach()
  if(L_LIBS)
    target_link_libraries(hcomm_${name} PRIVATE ${L_LIBS})
  endif()
  # Nothing compiles before the includes were checked against the layer order.
  add_dependencies(hcomm_${name} hcomm_layering)
endfunction()

# Runs at every build (and as the test `layering`): an include that points up the layer order
# fails the build.
add_custom_target(hcomm_layering
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
  COMMENT "Checking includes against layers.txt"
  VERBATIM)
