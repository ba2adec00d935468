// The layout checks every ABI check file here makes: a type of ours (in namespace simcuda_abi,
// where the including file put our header) against the toolkit's type of the same name.
#pragma once

#include <stddef.h>

// Enumeration types, structs and handles: the same size and alignment.
#define SIMCUDA_SAME_SIZE(type)                                    \
  static_assert(sizeof(simcuda_abi::type) == sizeof(::type) &&     \
                    alignof(simcuda_abi::type) == alignof(::type), \
                #type " has another size or alignment than the toolkit's");
// A struct's field: the same offset and size.
#define SIMCUDA_SAME_FIELD(type, field)                                          \
  static_assert(offsetof(simcuda_abi::type, field) == offsetof(::type, field) && \
                    sizeof(simcuda_abi::type::field) == sizeof(::type::field),   \
                #type "::" #field " differs from the toolkit's");
