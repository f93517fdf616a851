// transport: the three small interfaces the engine runs on.
//
//   Transport  nonblocking send/receive of bytes to the peer with a given coordinate
//              in a given dimension (Open MPI's PML, UCX UCP, or in-process for tests)
//   Reducer    dst = src op dst over whole elements (ompi_op_reduce, or GPU kernels)
//   Memory     copies and temporary buffers (host memory, or device memory and staging)
//
// Tags: the engine hands out tags below kTagLimit per dimension; a transport maps
// (dimension, tag) into its own tag space so that dimensions never collide.
#pragma once

#include <cstddef>
#include <cstdint>

namespace themis {

constexpr int kTagBits = 20;
constexpr int kTagLimit = 1 << kTagBits;

class Transport {
  public:
    using Request = void *;
    virtual ~Transport() = default;
    virtual Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) = 0;
    virtual Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) = 0;
    // True once the request has completed; a completed request is released.
    virtual bool test(Request req) = 0;
    // Lets the transport make progress while nothing completes.
    virtual void progress() = 0;
};

class Reducer {
  public:
    virtual ~Reducer() = default;
    // dst[i] = src[i] op dst[i] for the elements in `bytes` (a whole number of them).
    virtual void reduce(void *dst, const void *src, size_t bytes) = 0;
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
