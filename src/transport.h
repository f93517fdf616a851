// transport: the three small interfaces the engine runs on.
//
//   Transport  nonblocking send/receive of bytes to the peer with a given coordinate
//              in a given dimension (Open MPI's PML, UCX UCP, or in-process for tests)
//   Reducer    dst = src op dst over whole elements (ompi_op_reduce, or GPU kernels)
//   Memory     copies and temporary buffers (host memory, or device memory and staging)
//
// A transport may also move a list of segments as one message, and reduce received data
// straight into its destination (isendv / irecvv, up to max_segments(dim) segments): the
// node-local single-copy transport does (cma_transport.h); elsewhere the stage packs the
// segments into a temporary buffer and unpacks or reduces from one.
//
// Tags: the engine hands out tags below kTagLimit per dimension; a transport maps
// (dimension, tag) into its own tag space so that dimensions never collide.
#pragma once

#include <cstddef>
#include <cstdint>

namespace themis {

constexpr int kTagBits = 20;
constexpr int kTagLimit = 1 << kTagBits;

class Reducer;

// Bytes at `data`, one piece of a message made of several.
struct Segment {
    char *data;
    size_t bytes;
};

class Transport {
  public:
    using Request = void *;
    virtual ~Transport() = default;
    virtual Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) = 0;
    virtual Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) = 0;
    // The most segments isendv / irecvv take on dimension `dim`; 0: neither is offered
    // there. Sender and receiver may cut the same bytes into different segments.
    virtual size_t max_segments(int dim) const;
    // The segments' bytes, in order, as one message.
    virtual Request isendv(int dim, int peer, const Segment *segments, size_t count, int tag);
    // Receives one message into the segments, in order; with a reducer, each segment
    // becomes received op segment instead (segments of whole elements).
    virtual Request irecvv(int dim, int peer, const Segment *segments, size_t count, int tag,
                           Reducer *reducer);
    // True once the request has completed; a completed request is released. Throws when
    // the request failed, and releases it too.
    virtual bool test(Request req) = 0;
    // Lets the transport make progress while nothing completes.
    virtual void progress() = 0;
    // What it is, for messages and the calibration caches' keys ("pml", "ucx", ...).
    virtual const char *name() const = 0;
    // Whether isend/irecv take device memory as they take host memory.
    virtual bool moves_device_memory() const { return false; }
};

class Reducer {
  public:
    virtual ~Reducer() = default;
    // dst[i] = src[i] op dst[i] for the elements in `bytes` (a whole number of them).
    virtual void reduce(void *dst, const void *src, size_t bytes) = 0;
    // Bytes of one element: reduce() takes multiples of it.
    virtual size_t element_bytes() const = 0;
};

class Memory {
  public:
    virtual ~Memory() = default;
    virtual void copy(void *dst, const void *src, size_t bytes) = 0;
    // Temporary buffers for packing and receiving; release gives them back.
    virtual void *acquire(size_t bytes) = 0;
    virtual void release(void *buf, size_t bytes) = 0;
};

} // namespace themis
