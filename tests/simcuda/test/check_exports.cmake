# Checks a simcuda library: its SONAME, and that its dynamic symbol table defines exactly the
# functions in EXPECTED: each at the version VERSION_NODE (the runtimes, as NVIDIA's), or
# without a version when VERSION_NODE is not given (the driver, as NVIDIA's).
# Usage: cmake -DLIBRARY=... -DSONAME=... [-DVERSION_NODE=...] -DNM=... -DREADELF=...
#              -DEXPECTED=... -P check_exports.cmake

execute_process(COMMAND ${READELF} -d ${LIBRARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${READELF} -d ${LIBRARY} failed")
endif()
if(NOT dynamic MATCHES "Library soname: \\[${SONAME}\\]")
  message(FATAL_ERROR "${LIBRARY}: SONAME is not ${SONAME}:\n${dynamic}")
endif()

execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${NM} -D ${LIBRARY} failed")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
set(exported "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@version]"
  if(NOT line MATCHES "^[0-9a-f]+ ([A-Za-z]) (.+)$")
    message(FATAL_ERROR "unexpected nm output: ${line}")
  endif()
  set(name "${CMAKE_MATCH_2}")  # the next MATCHES resets CMAKE_MATCH_*
  if(DEFINED VERSION_NODE)
    # The node itself is an absolute symbol of its own name.
    if(name STREQUAL "${VERSION_NODE}" OR name STREQUAL "${VERSION_NODE}@@${VERSION_NODE}")
      continue()
    endif()
    if(NOT name MATCHES "^(.+)@@(.+)$" OR NOT CMAKE_MATCH_2 STREQUAL VERSION_NODE)
      message(FATAL_ERROR "${LIBRARY}: ${name} is not defined at version ${VERSION_NODE}")
    endif()
    set(name "${CMAKE_MATCH_1}")
  elseif(name MATCHES "@")
    message(FATAL_ERROR "${LIBRARY}: ${name} carries a symbol version")
  endif()
  list(APPEND exported "${name}")
endforeach()
list(SORT exported)

file(STRINGS ${EXPECTED} expected)
list(SORT expected)
if(NOT exported STREQUAL expected)
  set(extra ${exported})
  list(REMOVE_ITEM extra ${expected})
  set(missing ${expected})
  list(REMOVE_ITEM missing ${exported})
  message(FATAL_ERROR "${LIBRARY} exports the wrong symbols.\n"
                      "  not exported: ${missing}\n  unexpected: ${extra}")
endif()
list(LENGTH exported count)
message(STATUS "${LIBRARY}: SONAME ${SONAME}, exactly the ${count} expected symbols")
