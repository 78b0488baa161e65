// Emulation of Intel FPGA OpenCL channels in C++ (stencilmap, test-only; no vendor code): the generated
// kernel.cl compiles as C++ with SM_EMULATION defined. Every kernel runs as a thread; every channel
// is a bounded blocking FIFO of its declared depth. When every unfinished kernel waits on a channel
// that cannot serve it (reading an empty one or writing a full one) the run is deadlocked: the
// emulation prints who waits on what and exits with status 4 instead of hanging.
#ifndef STENCILMAP_OPENCL_EMULATION_H
#define STENCILMAP_OPENCL_EMULATION_H

#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define __kernel
#define __global
#define restrict __restrict
#define SM_AUTORUN
#define SM_SINGLE_WORK_ITEM

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

namespace sm_emulation {

struct Waiting {
    const void* channel;
    bool reading;
};

struct Monitor {
    std::mutex mutex;  // one lock over every channel: a deadlock check sees a consistent state
    int running = 0;
    std::map<std::thread::id, std::string> names;
    std::map<std::thread::id, Waiting> waiting;
    std::map<const void*, std::function<bool(bool)>> can_serve;  // channel -> can it serve a read/write now
    std::map<const void*, std::string> channel_names;
};

inline Monitor& monitor() {
    static Monitor m;
    return m;
}

// Called with the lock held by a kernel about to wait (or finishing): deadlock when every running kernel waits on a
// channel that cannot serve it now.
inline void check_deadlock(Monitor& m) {
    if (m.running == 0 || (int)m.waiting.size() < m.running) return;
    for (const auto& kv : m.waiting)
        if (m.can_serve[kv.second.channel](kv.second.reading)) return;
    std::vector<std::string> waits;  // by kernel name: the threads' order varies from run to run
    for (const auto& kv : m.waiting)
        waits.push_back(m.names[kv.first] + (kv.second.reading ? " reads empty " : " writes full ") +
                        m.channel_names[kv.second.channel] + ";");
    std::sort(waits.begin(), waits.end());
    std::string text = "deadlock: every running kernel waits on a channel:";
    for (const auto& w : waits) text += " " + w;
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    std::_Exit(4);
}

}  // namespace sm_emulation

template <typename T>
class sm_channel {
  public:
    sm_channel(const char* name, int depth) : depth_(depth < 1 ? 1 : depth) {
        auto& m = sm_emulation::monitor();
        m.channel_names[this] = name;
        m.can_serve[this] = [this](bool reading) { return reading ? !data_.empty() : (int)data_.size() < depth_; };
    }
    void write(const T& value) {
        auto& m = sm_emulation::monitor();
        std::unique_lock<std::mutex> lock(m.mutex);
        wait(m, lock, false);
        data_.push_back(value);
        readable_.notify_one();  // one reader per channel
    }
    T read() {
        auto& m = sm_emulation::monitor();
        std::unique_lock<std::mutex> lock(m.mutex);
        wait(m, lock, true);
        T value = data_.front();
        data_.pop_front();
        writable_.notify_one();  // one writer per channel
        return value;
    }

  private:
    void wait(sm_emulation::Monitor& m, std::unique_lock<std::mutex>& lock, bool reading) {
        if (m.can_serve[this](reading)) return;
        m.waiting[std::this_thread::get_id()] = sm_emulation::Waiting{this, reading};
        while (!m.can_serve[this](reading)) {
            sm_emulation::check_deadlock(m);  // the last kernel to wait sees every wait
            (reading ? readable_ : writable_).wait(lock);
        }
        m.waiting.erase(std::this_thread::get_id());
    }
    int depth_;
    std::deque<T> data_;
    std::condition_variable readable_, writable_;
};

template <typename T>
T read_channel_intel(sm_channel<T>& c) {
    return c.read();
}

template <typename T>
void write_channel_intel(sm_channel<T>& c, T value) {
    c.write(value);
}

// Run every kernel as a thread until all finish (or the emulation reports a deadlock).
inline void sm_run_kernels(const std::vector<std::pair<std::string, std::function<void()>>>& kernels) {
    auto& m = sm_emulation::monitor();
    {
        std::lock_guard<std::mutex> lock(m.mutex);
        m.running = (int)kernels.size();
    }
    std::vector<std::thread> threads;
    for (const auto& k : kernels) {
        threads.emplace_back([&m, k]() {
            {
                std::lock_guard<std::mutex> lock(m.mutex);
                m.names[std::this_thread::get_id()] = k.first;
            }
            k.second();
            std::lock_guard<std::mutex> lock(m.mutex);
            m.running -= 1;
            m.names.erase(std::this_thread::get_id());
            sm_emulation::check_deadlock(m);  // the others may all wait on channels this one fed
        });
    }
    for (auto& t : threads) t.join();
}

#endif
