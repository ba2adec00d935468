# Checks that FILE links no CUDA library (the driver is dlopened, as by the real runtime and a
# static libcudart) and that its RUNPATH, not an RPATH, is RUNPATH: the dynamic loader then
# searches LD_LIBRARY_PATH first, so a real driver can stand in for the simulated one.
# Usage: cmake -DFILE=... -DREADELF=... -DRUNPATH=... -P check_links.cmake

execute_process(COMMAND ${READELF} -d ${FILE} OUTPUT_VARIABLE dynamic RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${READELF} -d ${FILE} failed")
endif()
if(dynamic MATCHES "Shared library: \\[(libcuda\\.so[^]]*|libcudart[^]]*)\\]")
  message(FATAL_ERROR "${FILE} links ${CMAKE_MATCH_1}:\n${dynamic}")
endif()
if(dynamic MATCHES "\\(RPATH\\)")
  message(FATAL_ERROR "${FILE} has an RPATH, which would outrank LD_LIBRARY_PATH:\n${dynamic}")
endif()
if(NOT dynamic MATCHES "Library runpath: \\[([^]]*)\\]")
  message(FATAL_ERROR "${FILE} has no RUNPATH:\n${dynamic}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL RUNPATH)
  message(FATAL_ERROR "${FILE}: RUNPATH is '${CMAKE_MATCH_1}', not '${RUNPATH}'")
endif()
message(STATUS "${FILE}: no CUDA library linked, RUNPATH ${RUNPATH}")
