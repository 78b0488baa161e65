// Support code of stencilmap's generated HLS C++ (part of the generated design, not a stand-in):
// vector beats of W elements, and elements packed into the burst-wide words of an m_axi port
// (element i of a field lies in word i / (B / bits), little-endian, as the host copies it).
#ifndef STENCILMAP_HLS_SUPPORT_H
#define STENCILMAP_HLS_SUPPORT_H

#include <cstdint>
#include <cstring>

#include "ap_int.h"
#include "hls_stream.h"

// W elements moving together on one channel (StencilFlow's vectorization).
template <typename T, int W>
struct sm_vec {
    T v[W];
};

template <typename T>
struct sm_bits {
    static T from(uint64_t bits) {
        T value;
        std::memcpy(&value, &bits, sizeof(T));  // little-endian: the low bytes
        return value;
    }
    static uint64_t to(T value) {
        uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof(T));
        return bits;
    }
};

template <>
struct sm_bits<bool> {  // stored as one byte, as NumPy stores it
    static bool from(uint64_t bits) { return (bits & 0xffu) != 0; }
    static uint64_t to(bool value) { return value ? 1u : 0u; }
};

// Element `index` (of `BITS` bits) of a field packed into B-bit words.
template <typename T, int BITS, int B>
T sm_load(const ap_uint<B>* mem, long index) {
    const long per_word = B / BITS;
    const int lo = (int)(index % per_word) * BITS;
    ap_uint<B> word = mem[index / per_word];
    return sm_bits<T>::from(word.range(lo + BITS - 1, lo).to_uint64());
}

// Element `lane` of a B-bit word assembled in a register: writers fill whole words and write each one
// once, so an output m_axi port is never read (no read-modify-write of memory).
template <typename T, int BITS, int B>
void sm_put(ap_uint<B>& word, long lane, T value) {
    const int lo = (int)lane * BITS;
    word.range(lo + BITS - 1, lo) = (uint64_t)sm_bits<T>::to(value);
}

#endif
