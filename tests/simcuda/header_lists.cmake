# Lists of what simcuda's headers declare, read from the headers themselves so that the checks
# built from them (the exports test, abi_check/) cannot drift from the headers. CMake re-runs
# when a header changes.

set(_simcuda_api_header ${CMAKE_CURRENT_LIST_DIR}/include/cuda_runtime_api.h)
set(_simcuda_types_header ${CMAKE_CURRENT_LIST_DIR}/include/driver_types.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_simcuda_api_header} ${_simcuda_types_header})

# Names of the functions declared in cuda_runtime_api.h, sorted.
function(simcuda_declared_functions out_var)
  file(READ ${_simcuda_api_header} text)
  string(REGEX MATCHALL "CUDARTAPI[ \t\n]+cuda[A-Za-z0-9_]+\\(" matches "${text}")
  set(names "")
  foreach(match IN LISTS matches)
    string(REGEX REPLACE "^CUDARTAPI[ \t\n]+(cuda[A-Za-z0-9_]+)\\($" "\\1" name "${match}")
    list(APPEND names ${name})
  endforeach()
  list(SORT names)
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# Names of the enumerators defined in driver_types.h ("  cudaSuccess = 0,").
function(simcuda_declared_enumerators out_var)
  file(STRINGS ${_simcuda_types_header} lines REGEX "^[ \t]*cuda[A-Za-z0-9_]+[ \t]*=")
  set(names "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*(cuda[A-Za-z0-9_]+)[ \t]*=.*$" "\\1" name "${line}")
    list(APPEND names ${name})
  endforeach()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()
