// Stand-in for Vitis HLS's hls_stream.h, written for stencilmap's C simulation (test-only; no vendor
// code). hls::stream<T> is an unbounded FIFO, as in Vitis C simulation, where dataflow functions run
// one after another. Reading an empty stream is an error here (Vitis only warns): the simulation stops
// with the stream's name, so a wrongly ordered or under-fed design cannot pass.
#ifndef STENCILMAP_STANDIN_HLS_STREAM_H
#define STENCILMAP_STANDIN_HLS_STREAM_H

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

namespace hls {

template <typename T>
class stream {
  public:
    stream() : name_("stream") {}
    explicit stream(const char* name) : name_(name) {}
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    ~stream() {
        if (!data_.empty()) {
            std::fprintf(stderr, "hls::stream '%s' still holds %zu elements at the end\n", name_.c_str(),
                         data_.size());
        }
    }

    void write(const T& value) { data_.push_back(value); }
    void operator<<(const T& value) { write(value); }
    T read() {
        if (data_.empty()) {
            std::fprintf(stderr, "error: hls::stream '%s' read while empty\n", name_.c_str());
            std::exit(3);
        }
        T value = data_.front();
        data_.pop_front();
        return value;
    }
    void operator>>(T& value) { value = read(); }
    void read(T& value) { value = read(); }
    bool read_nb(T& value) {
        if (data_.empty()) return false;
        value = read();
        return true;
    }
    bool write_nb(const T& value) {
        write(value);
        return true;
    }
    bool empty() const { return data_.empty(); }
    bool full() const { return false; }
    std::size_t size() const { return data_.size(); }

  private:
    std::string name_;
    std::deque<T> data_;
};

}  // namespace hls

#endif
