// coll_themis_op.h: reductions through Open MPI's op framework, and which
// datatypes and ops themis can run itself.
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/op/op.h"

#include "transport.h"

namespace themis {

// dst = src op dst with ompi_op_reduce, over whole elements of the datatype. It holds a
// reference to the op while set: a nonblocking call's user op may be freed before it
// completes. A call kept for reuse (coll_themis_call.h) sets it again for its next op.
class OpReducer : public Reducer {
  public:
    OpReducer() = default;
    OpReducer(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent) { set(op, dtype, extent); }
    ~OpReducer() override { clear(); }
    OpReducer(const OpReducer &) = delete;
    OpReducer &operator=(const OpReducer &) = delete;
    void set(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent) {
        OBJ_RETAIN(op);
        clear();
        op_ = op;
        dtype_ = dtype;
        extent_ = extent;
    }
    // Lets go of the op.
    void clear() {
        ompi_op_t *op = op_;
        op_ = nullptr;
        if (op) OBJ_RELEASE(op);
    }
    void reduce(void *dst, const void *src, size_t bytes) override {
        ompi_op_reduce(op_, const_cast<void *>(src), dst, bytes / extent_, dtype_);
    }
    size_t element_bytes() const override { return extent_; }

  private:
    ompi_op_t *op_ = nullptr;
    ompi_datatype_t *dtype_ = nullptr;
    size_t extent_ = 1;
};

// For collectives that move data without reducing it.
class NoReducer : public Reducer {
  public:
    void reduce(void *, const void *, size_t) override {}
    size_t element_bytes() const override { return 1; }
};

// Why themis leaves a reduction to the previous module, or nullptr if it runs it:
// the op must be commutative (chunks are reduced in a schedule-dependent order) and
// the datatype predefined (its elements then sit every `extent` bytes from the start).
const char *reduction_unsupported(ompi_datatype_t *dtype, ompi_op_t *op);

// Bytes of `count` elements laid out every extent (the work buffer's layout).
size_t element_extent(ompi_datatype_t *dtype);

} // namespace themis
