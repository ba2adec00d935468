# A shared library that runs inside someone else's process (the shim, the CUPTI library; the
# rules are docs/architecture.md, "Rules for code inside someone else's process"): libstdc++
# and libgcc linked in statically, only the names of its version script exported, every
# reference resolved at link time and bound at load, built into lib/vramtrace/ and installed
# there.
function(vramtrace_guest_library target exports_map)
  target_link_options(${target} PRIVATE
    -static-libstdc++ -static-libgcc
    -Wl,--version-script=${exports_map}
    -Wl,-z,defs -Wl,--exclude-libs,ALL -Wl,-z,now)
  set_target_properties(${target} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${VRAMTRACE_LIB_OUTPUT_DIR}
    LINK_DEPENDS ${exports_map})
  install(TARGETS ${target} LIBRARY DESTINATION ${VRAMTRACE_INSTALL_LIBDIR})
endfunction()
