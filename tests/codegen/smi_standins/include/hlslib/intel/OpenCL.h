// Stand-in for hlslib's hlslib/intel/OpenCL.h at the commit SMI pins (definelicht/hlslib bb51b20): the
// declarations of the hlslib::ocl API that SMI's generated host and stencilmap's host use (stencilmap tests).
#pragma once
#include <future>
#include <string>
#include <utility>

#include "CL/cl.hpp"

#ifndef HLSLIB_INTEL
#define HLSLIB_INTEL
#endif

namespace hlslib {
namespace ocl {

enum class Access { read, write, readWrite };

template <typename T, Access access>
class Buffer;
class Kernel;
class Program;

class Context {
 public:
  Context(int index);
  Context();
  Context(Context const&) = delete;
  Context(Context&&) = default;
  Program MakeProgram(std::string const& path);
  template <typename T, Access access, typename... Ts>
  Buffer<T, access> MakeBuffer(Ts&&... args);
};

template <typename T, Access access>
class Buffer {
 public:
  Buffer();
  Buffer(Buffer<T, access> const& other) = delete;
  Buffer(Buffer<T, access>&& other);
  template <typename IteratorType>
  Buffer(Context& context, IteratorType begin, IteratorType end);
  Buffer(Context& context, size_t nElements);
  Buffer<T, access>& operator=(Buffer<T, access>&& other);
  template <typename IteratorType>
  void CopyFromHost(IteratorType source);
  template <typename IteratorType>
  void CopyToHost(IteratorType target);
};

class Program {
 public:
  Program() = delete;
  Program(Program const&) = default;
  Program(Program&&) = default;
  template <typename... Ts>
  Kernel MakeKernel(std::string const& kernelName, Ts&&... args);
};

class Kernel {
 public:
  Kernel(Kernel&&) = default;
  std::pair<double, double> ExecuteTask();
  cl::Event ExecuteTaskFork();
  std::future<std::pair<double, double>> ExecuteTaskAsync();
};

}  // namespace ocl
}  // namespace hlslib
