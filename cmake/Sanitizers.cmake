# VRAMTRACE_SANITIZE: a comma-separated list for -fsanitize= (the asan preset sets
# "address,undefined"). Applied to the whole tree except the directories that call
# vramtrace_strip_sanitizers(): code that is loaded into other programs (the shim, the
# simulated CUDA libraries, the samples), because a sanitizer runtime must be the first
# library of the process it runs in.
set(VRAMTRACE_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")

if(VRAMTRACE_SANITIZE)
  set(VRAMTRACE_SANITIZER_FLAGS -fsanitize=${VRAMTRACE_SANITIZE} -fno-omit-frame-pointer
                                -fno-sanitize-recover=all)
  add_compile_options(${VRAMTRACE_SANITIZER_FLAGS})
  add_link_options(-fsanitize=${VRAMTRACE_SANITIZE})
endif()

macro(vramtrace_strip_sanitizers)
  if(VRAMTRACE_SANITIZE)
    get_directory_property(_opts COMPILE_OPTIONS)
    list(REMOVE_ITEM _opts ${VRAMTRACE_SANITIZER_FLAGS})
    set_directory_properties(PROPERTIES COMPILE_OPTIONS "${_opts}")
    get_directory_property(_lopts LINK_OPTIONS)
    list(REMOVE_ITEM _lopts -fsanitize=${VRAMTRACE_SANITIZE})
    set_directory_properties(PROPERTIES LINK_OPTIONS "${_lopts}")
  endif()
endmacro()
