// Stand-in for Vitis HLS's ap_int.h, written for stencilmap's C simulation (test-only; no vendor code).
// Only what generated code uses: ap_uint<N> as N bits in 64-bit words, bit slices through range(hi, lo)
// (read with to_uint64(), written by assignment), construction from and comparison with integers.
#ifndef STENCILMAP_STANDIN_AP_INT_H
#define STENCILMAP_STANDIN_AP_INT_H

#include <cstdint>

template <int N>
class ap_uint;

template <int N>
class ap_range_ref {
  public:
    ap_range_ref(ap_uint<N>* bits, int hi, int lo) : bits_(bits), hi_(hi), lo_(lo) {}
    uint64_t to_uint64() const { return bits_->get(hi_, lo_); }
    unsigned to_uint() const { return static_cast<unsigned>(to_uint64()); }
    operator uint64_t() const { return to_uint64(); }
    ap_range_ref& operator=(uint64_t value) {
        bits_->set(hi_, lo_, value);
        return *this;
    }
    template <int M>
    ap_range_ref& operator=(const ap_uint<M>& value) {
        bits_->set(hi_, lo_, value.to_uint64());
        return *this;
    }

  private:
    ap_uint<N>* bits_;
    int hi_, lo_;
};

template <int N>
class ap_uint {
  public:
    static const int WORDS = (N + 63) / 64;

    ap_uint() {
        for (int i = 0; i < WORDS; ++i) w_[i] = 0;
    }
    ap_uint(uint64_t value) {  // NOLINT: implicit, as the vendor type
        for (int i = 0; i < WORDS; ++i) w_[i] = 0;
        w_[0] = N < 64 ? value & ((uint64_t(1) << N) - 1) : value;
    }
    uint64_t to_uint64() const { return w_[0]; }
    unsigned to_uint() const { return static_cast<unsigned>(w_[0]); }

    ap_range_ref<N> range(int hi, int lo) { return ap_range_ref<N>(this, hi, lo); }
    uint64_t range(int hi, int lo) const { return get(hi, lo); }

    // bits [lo, hi] (at most 64 of them) as an integer
    uint64_t get(int hi, int lo) const {
        if (lo / 64 == hi / 64) {  // within one word: a shift and a mask
            int n = hi - lo + 1;
            uint64_t word = w_[lo / 64] >> (lo % 64);
            return n == 64 ? word : word & ((uint64_t(1) << n) - 1);
        }
        uint64_t out = 0;
        for (int b = hi; b >= lo; --b) out = (out << 1) | ((w_[b / 64] >> (b % 64)) & 1u);
        return out;
    }
    void set(int hi, int lo, uint64_t value) {
        if (lo / 64 == hi / 64) {
            int n = hi - lo + 1;
            uint64_t mask = (n == 64 ? ~uint64_t(0) : ((uint64_t(1) << n) - 1)) << (lo % 64);
            w_[lo / 64] = (w_[lo / 64] & ~mask) | ((value << (lo % 64)) & mask);
            return;
        }
        for (int b = lo; b <= hi; ++b) {
            uint64_t bit = (value >> (b - lo)) & 1u;
            w_[b / 64] = (w_[b / 64] & ~(uint64_t(1) << (b % 64))) | (bit << (b % 64));
        }
    }
    bool operator==(const ap_uint& o) const {
        for (int i = 0; i < WORDS; ++i)
            if (w_[i] != o.w_[i]) return false;
        return true;
    }

  private:
    uint64_t w_[WORDS];
};

#endif
