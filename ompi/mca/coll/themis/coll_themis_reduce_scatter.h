// coll_themis_reduce_scatter.h: MPI_Reduce_scatter's (and _block's) arguments and their
// preparation on host memory, which the adapters (coll_themis_reduce_scatter.cpp) and their
// device preparation (cuda/collectives.h) share.
#pragma once

#include "coll_themis_prelude.h"

#include <vector>

#include "coll_themis_call.h"
#include "coll_themis_context.h"

namespace themis {

// A call's receive counts, one per communicator rank: the user's array, borrowed while the
// entry point runs (a blocking call copies nothing), or all equal
// (MPI_Reduce_scatter_block). A copy owns its counts: a held call, a nonblocking one or a
// persistent request may outlive the user's array.
class Counts {
  public:
    static Counts of(const int *counts, int n) { return Counts(counts, 0, n); }
    static Counts all(int count, int n) { return Counts(nullptr, count, n); }
    Counts(const Counts &other)
        : user_(nullptr), same_(other.same_), n_(other.n_), own_(other.list()) {}
    Counts &operator=(const Counts &) = delete;

    int operator[](int rank) const {
        return user_ ? user_[rank] : own_.empty() ? same_ : own_[rank];
    }
    int size() const { return n_; }
    // The counts as an array (not of MPI_Reduce_scatter_block's, which has none).
    const int *data() const { return user_ ? user_ : own_.data(); }
    size_t total() const {
        size_t sum = 0;
        for (int r = 0; r < n_; ++r) sum += static_cast<size_t>((*this)[r]);
        return sum;
    }

  private:
    Counts(const int *user, int same, int n) : user_(user), same_(same), n_(n) {}
    std::vector<int> list() const { return user_ ? std::vector<int>(user_, user_ + n_) : own_; }

    const int *user_;
    int same_;
    int n_;
    std::vector<int> own_;
};

struct ReduceScatterArgs {
    const void *sbuf;
    void *rbuf;
    Counts counts;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
};

// The request (sizes in topology position order) and, in call.scratch, where each block
// starts in communicator rank order (elements; n + 1 of them, the last the total).
void plan_reduce_scatter(Context &ctx, const Counts &rcounts, size_t extent, Call &call);

// Prepares the call on host memory: the input copied into a temporary work buffer, this
// rank's block copied out to rbuf at the end.
void prepare_reduce_scatter(Context &ctx, const void *sbuf, void *rbuf, const Counts &rcounts,
                            ompi_datatype_t *dtype, ompi_op_t *op, Call &call);

} // namespace themis
