// Stand-in for the Streaming Message Interface (SMI) in the channel emulation (stencilmap, test-only; NOT
// the SMI library, and not checked against it): just the calls the generated kernels make, with SMI's
// names. Every device's kernels run in one process (opencl_emulation.h: every kernel a thread); an SMI
// port is a bounded blocking FIFO of scalars between the two ranks that the emulation's main declares
// with sm_smi_connect before any kernel runs. Opening a port the main did not declare, with other
// ranks, type or count, twice, or pushing / popping more than its count stops the run (exit status 5).
#ifndef STENCILMAP_SMI_EMULATION_H
#define STENCILMAP_SMI_EMULATION_H

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "opencl_emulation.h"

typedef enum { SMI_INT = 1, SMI_FLOAT = 2, SMI_DOUBLE = 3, SMI_CHAR = 4, SMI_SHORT = 5 } SMI_Datatype;

typedef struct {
    int rank;
    int size;
} SMI_Comm;

struct sm_smi_word {
    unsigned char bytes[8];
};

typedef struct {
    sm_channel<sm_smi_word>* fifo;
    int bytes;
    long left;  // elements still to push / pop
} SMI_Channel;

namespace sm_smi {

struct Port {
    int src, dst;
    SMI_Datatype type;
    long count;
    std::unique_ptr<sm_channel<sm_smi_word>> fifo;
    bool opened[2] = {false, false};  // receive, send
};

inline std::map<int, Port>& ports() {
    static std::map<int, Port> p;
    return p;
}

[[noreturn]] inline void fail(const std::string& text) {
    std::fprintf(stderr, "SMI: %s\n", text.c_str());
    std::fflush(stderr);
    std::_Exit(5);
}

inline int bytes_of(SMI_Datatype t) {
    switch (t) {
        case SMI_CHAR: return 1;
        case SMI_SHORT: return 2;
        case SMI_INT: return 4;
        case SMI_FLOAT: return 4;
        case SMI_DOUBLE: return 8;
    }
    fail("unknown SMI_Datatype");
}

inline SMI_Channel open(long count, SMI_Datatype type, int src, int dst, int port, bool send) {
    std::lock_guard<std::mutex> lock(sm_emulation::monitor().mutex);
    auto it = ports().find(port);
    const std::string what = std::string(send ? "send" : "receive") + " channel on port " + std::to_string(port);
    if (it == ports().end()) fail(what + ": no such port");
    Port& p = it->second;
    if (p.src != src || p.dst != dst) fail(what + ": ranks do not match the port's");
    if (p.type != type || p.count != count) fail(what + ": type or count differs from the port's");
    if (p.opened[send]) fail(what + ": opened twice");
    p.opened[send] = true;
    return SMI_Channel{p.fifo.get(), bytes_of(type), count};
}

}  // namespace sm_smi

// Declare port PORT from rank SRC to rank DST: COUNT elements of TYPE through a FIFO of DEPTH elements.
inline void sm_smi_connect(int port, int src, int dst, SMI_Datatype type, long count, const char* name, int depth) {
    sm_smi::Port& p = sm_smi::ports()[port];
    p.src = src;
    p.dst = dst;
    p.type = type;
    p.count = count;
    p.fifo.reset(new sm_channel<sm_smi_word>(name, depth));
}

inline SMI_Channel SMI_Open_send_channel(int count, SMI_Datatype type, int destination, int port, SMI_Comm comm) {
    return sm_smi::open(count, type, comm.rank, destination, port, true);
}

inline SMI_Channel SMI_Open_receive_channel(int count, SMI_Datatype type, int source, int port, SMI_Comm comm) {
    return sm_smi::open(count, type, source, comm.rank, port, false);
}

inline void SMI_Push(SMI_Channel* chan, const void* data) {
    if (chan->left-- <= 0) sm_smi::fail("push beyond the channel's count");
    sm_smi_word w = {};
    std::memcpy(w.bytes, data, chan->bytes);
    chan->fifo->write(w);
}

inline void SMI_Pop(SMI_Channel* chan, void* data) {
    if (chan->left-- <= 0) sm_smi::fail("pop beyond the channel's count");
    const sm_smi_word w = chan->fifo->read();
    std::memcpy(data, w.bytes, chan->bytes);
}

#endif
