// Declarations standing in for XRT's native C++ API (xrt_bo.h, xrt_device.h, xrt_kernel.h) so that
// generated code can be compiled with -fsyntax-only here: the shapes of the calls, not XRT itself.
#ifndef STENCILMAP_XRT_STANDIN_H
#define STENCILMAP_XRT_STANDIN_H
#include <cstddef>
#include <string>
enum xclBOSyncDirection { XCL_BO_SYNC_BO_TO_DEVICE, XCL_BO_SYNC_BO_FROM_DEVICE };
namespace xrt {
struct uuid {};
struct device {
    explicit device(unsigned int index);
    uuid load_xclbin(const std::string& path);
};
struct run {
    void wait();
};
struct bo {
    bo(const device& d, std::size_t size, int group);
    void write(const void* src);
    void read(void* dst);
    void sync(xclBOSyncDirection dir);
};
struct kernel {
    kernel(const device& d, const uuid& id, const std::string& name);
    int group_id(int argno) const;
    template <typename... Args>
    run operator()(Args&&... args);
};
}  // namespace xrt
#endif
