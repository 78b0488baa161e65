// Stand-in for the OpenCL C++ header (Khronos cl.hpp) that hlslib includes: the types only (stencilmap tests).
#pragma once
#include <cstddef>
#include <cstdint>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef int8_t cl_char;
typedef uint64_t cl_ulong;
typedef uint64_t cl_command_queue_properties;
typedef struct _cl_mem* cl_mem;
typedef union {
  cl_char s[2];
} cl_char2;  // as CL/cl_platform.h under __STRICT_ANSI__

#define CL_SUCCESS 0
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_CHANNEL_1_INTELFPGA (1 << 16)
#define CL_CHANNEL_2_INTELFPGA (2 << 16)
#define CL_CHANNEL_3_INTELFPGA (3 << 16)
#define CL_CHANNEL_4_INTELFPGA (4 << 16)

namespace cl {
class Event {
 public:
  cl_int wait() const;
};
class Buffer {};
class Kernel {
 public:
  template <typename T>
  cl_int setArg(cl_uint index, const T& value);
};
}  // namespace cl
