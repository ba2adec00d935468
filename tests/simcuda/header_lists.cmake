# Lists of what simcuda's headers declare, read from the headers themselves so that the checks
# built from them (the exports test, abi_check/) cannot drift from the headers. CMake re-runs
# when a header changes.

set(_simcuda_api_header ${CMAKE_CURRENT_LIST_DIR}/include/cuda_runtime_api.h)
set(_simcuda_types_header ${CMAKE_CURRENT_LIST_DIR}/include/driver_types.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_simcuda_api_header} ${_simcuda_types_header})

# Names of the functions a runtime header declares ("CUDARTAPI <prefix>name("), sorted.
function(_simcuda_functions_in header prefix out_var)
  file(READ ${header} text)
  string(REGEX MATCHALL "CUDARTAPI[ \t\n]+${prefix}[A-Za-z0-9_]+\\(" matches "${text}")
  set(names "")
  foreach(match IN LISTS matches)
    string(REGEX REPLACE "^CUDARTAPI[ \t\n]+(${prefix}[A-Za-z0-9_]+)\\($" "\\1" name "${match}")
    list(APPEND names ${name})
  endforeach()
  list(SORT names)
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# Names of the functions declared in cuda_runtime_api.h, sorted.
function(simcuda_declared_functions out_var)
  _simcuda_functions_in(${_simcuda_api_header} cuda names)
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# Names of the registration and launch functions of cuda_kernel_registration.h, which nvcc's
# generated code calls (the toolkit declares them outside cuda_runtime_api.h), sorted.
set(_simcuda_registration_header ${CMAKE_CURRENT_LIST_DIR}/include/cuda_kernel_registration.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_simcuda_registration_header})
function(simcuda_registration_functions out_var)
  _simcuda_functions_in(${_simcuda_registration_header} __cuda names)
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

# The same for the driver: cuda.h, cudaTypedefs.h, and the entry point table.
set(_simcuda_driver_header ${CMAKE_CURRENT_LIST_DIR}/include/cuda.h)
set(_simcuda_typedefs_header ${CMAKE_CURRENT_LIST_DIR}/include/cudaTypedefs.h)
set(_simcuda_entry_points ${CMAKE_CURRENT_LIST_DIR}/src/driver/entry_points.inc)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_simcuda_driver_header} ${_simcuda_typedefs_header} ${_simcuda_entry_points})

# The API names of the functions cuda.h declares for programs ("cuMemAlloc", which its macros
# map to cuMemAlloc_v2), and those it declares only for the driver's own build (the legacy
# entry points, under __CUDA_API_VERSION_INTERNAL), sorted.
function(simcuda_driver_declared_functions public_var internal_var)
  file(READ ${_simcuda_driver_header} text)
  string(FIND "${text}" "#undef cuDeviceTotalMem" internal_start)
  string(SUBSTRING "${text}" 0 ${internal_start} public_text)
  string(SUBSTRING "${text}" ${internal_start} -1 internal_text)
  foreach(part public internal)
    string(REGEX MATCHALL "CUDAAPI[ \t\n]+cu[A-Za-z0-9_]+\\(" matches "${${part}_text}")
    set(names "")
    foreach(match IN LISTS matches)
      string(REGEX REPLACE "^CUDAAPI[ \t\n]+(cu[A-Za-z0-9_]+)\\($" "\\1" name "${match}")
      list(APPEND names ${name})
    endforeach()
    list(SORT names)
    set(${${part}_var} ${names} PARENT_SCOPE)
  endforeach()
endfunction()

# Names of the enumerators defined in cuda.h ("  CUDA_SUCCESS = 0,").
function(simcuda_driver_declared_enumerators out_var)
  file(STRINGS ${_simcuda_driver_header} lines REGEX "^[ \t]*CU[A-Z0-9_]+[ \t]*=")
  set(names "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*(CU[A-Z0-9_]+)[ \t]*=.*$" "\\1" name "${line}")
    list(APPEND names ${name})
  endforeach()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# Names of the function pointer types of cudaTypedefs.h, outside and inside its
# __CUDA_API_VERSION_INTERNAL part.
function(simcuda_driver_pfn_types public_var internal_var)
  file(READ ${_simcuda_typedefs_header} text)
  string(FIND "${text}" "#if defined(__CUDA_API_VERSION_INTERNAL)" internal_start)
  string(SUBSTRING "${text}" 0 ${internal_start} public_text)
  string(SUBSTRING "${text}" ${internal_start} -1 internal_text)
  foreach(part public internal)
    string(REGEX MATCHALL "PFN_cu[A-Za-z0-9_]+" names "${${part}_text}")
    list(REMOVE_DUPLICATES names)
    set(${${part}_var} ${names} PARENT_SCOPE)
  endforeach()
endfunction()

# The symbols libcuda.so.1 exports: the last column of src/driver/entry_points.inc, sorted.
function(simcuda_driver_entry_point_symbols out_var)
  file(STRINGS ${_simcuda_entry_points} lines REGEX "^SIMCUDA_ENTRY_POINT\\(")
  set(names "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^SIMCUDA_ENTRY_POINT\\([^)]*, *([A-Za-z0-9_]+)\\)$" "\\1" name "${line}")
    list(APPEND names ${name})
  endforeach()
  list(SORT names)
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()
