# Runs the static-cudart-style program and checks what it printed: exit status 0, every line in
# the documented format (see static_cudart_style.cpp), every call CUDA_SUCCESS, and the five
# allocations it leaves live, one of each kind.
# Usage: cmake -DPROGRAM=... -P check_static_style.cmake

execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE output ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${status}:\n${output}${errors}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${output}")
set(calls 0)
set(live_kinds "")
foreach(line IN LISTS lines)
  if(line MATCHES "^live (device|async|vmm_mapping|vmm_reservation) ptr=0x[0-9a-f]+ size=[0-9]+$")
    list(APPEND live_kinds ${CMAKE_MATCH_1})
  elseif(line MATCHES "^live (vmm_handle) handle=0x[0-9a-f]+ size=[0-9]+$")
    list(APPEND live_kinds ${CMAKE_MATCH_1})
  elseif(line MATCHES "^cu[A-Za-z0-9_]+ CUDA_SUCCESS( [a-z]+=[0-9A-Za-z_]+)*$")
    math(EXPR calls "${calls} + 1")
  else()
    message(FATAL_ERROR "unexpected line: '${line}'\n${output}")
  endif()
endforeach()
list(SORT live_kinds)
if(NOT live_kinds STREQUAL "async;device;vmm_handle;vmm_mapping;vmm_reservation")
  message(FATAL_ERROR "live allocations: '${live_kinds}'\n${output}")
endif()
message(STATUS "${PROGRAM}: ${calls} calls, all CUDA_SUCCESS; live: ${live_kinds}")
