// coll_themis_agreement.cpp: a set-up's rounds (coll_themis_agreement.h).
#include "coll_themis_agreement.h"

#include <algorithm>
#include <stdexcept>

#include "coll_themis_context.h"
#include "coll_themis_setup_task.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

Agreement::Slot Agreement::add(Kind kind, std::initializer_list<double> values) {
    if (!agreed_.empty()) throw std::logic_error("an agreement takes no values once it ran");
    kinds_.push_back(kind);
    first_.push_back(mine_.size());
    mine_.insert(mine_.end(), values);
    return kinds_.size() - 1;
}

Agreement::Slot Agreement::max(double value) { return add(Kind::Max, {value}); }
Agreement::Slot Agreement::min(double value) { return add(Kind::Min, {-value}); }
Agreement::Slot Agreement::all(bool value) { return add(Kind::All, {value ? 0.0 : 1.0}); }

Agreement::Slot Agreement::same(uint64_t value) {
    // 32-bit halves are exact in a double; the same everywhere when max == min for both.
    const double hi = double(value >> 32), lo = double(value & 0xffffffffu);
    return add(Kind::Same, {hi, lo, -hi, -lo});
}

void Agreement::run(mca_coll_themis_module_t *m) {
    agreed_.assign(mine_.size(), 0.0);
    if (mine_.empty()) return;
    setup_allreduce(m, mine_.data(), agreed_.data(), int(mine_.size()), &ompi_mpi_double.dt,
                    &ompi_mpi_op_max.op);
}

namespace {

// Below the private duplicate's id agreement's tags (coll_themis_setup_task.cpp, setup_tag).
constexpr int kAmongTag = -(1 << 22) - (1 << 16) - 1;

void check(int rc) {
    if (rc != OMPI_SUCCESS) throw std::runtime_error("a set-up agreement's message failed");
}

// Polls until every request completes (inside a set-up, each poll steps aside), frees them.
void wait_all(std::vector<ompi_request_t *> &requests) {
    for (ompi_request_t *&r : requests) {
        while (!REQUEST_COMPLETE(r)) opal_progress();
        const int rc = r->req_status.MPI_ERROR;
        ompi_request_free(&r);
        check(rc);
    }
    requests.clear();
}

void max_into(std::vector<double> &into, const std::vector<double> &from) {
    for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

} // namespace

void Agreement::run_among(ompi_communicator_t *comm) {
    count_setup_round();
    agreed_ = mine_;
    if (mine_.empty()) return;
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const int n = int(agreed_.size());
    std::vector<double> theirs(agreed_.size());
    std::vector<ompi_request_t *> requests;
    auto exchange = [&](int peer, bool send, bool receive) {
        ompi_request_t *r = nullptr;
        if (receive) {
            check(MCA_PML_CALL(
                irecv(theirs.data(), n, &ompi_mpi_double.dt, peer, kAmongTag, comm, &r)));
            requests.push_back(r);
        }
        if (send) {
            check(MCA_PML_CALL(isend(agreed_.data(), n, &ompi_mpi_double.dt, peer, kAmongTag,
                                     MCA_PML_BASE_SEND_STANDARD, comm, &r)));
            requests.push_back(r);
        }
        wait_all(requests);
        if (receive) max_into(agreed_, theirs);
    };
    // The ranks beyond the largest power of two fold into their even neighbours first, and
    // get the result back last.
    int pof2 = 1;
    while (pof2 * 2 <= size) pof2 *= 2;
    const int extra = size - pof2;
    int folded = -1; // this rank among the pof2, -1 if folded away
    if (rank < 2 * extra) {
        if (rank % 2 == 0) {
            exchange(rank + 1, true, false);
        } else {
            exchange(rank - 1, false, true);
            folded = rank / 2;
        }
    } else {
        folded = rank - extra;
    }
    if (folded >= 0)
        for (int mask = 1; mask < pof2; mask <<= 1) {
            const int partner = folded ^ mask;
            exchange(partner < extra ? partner * 2 + 1 : partner + extra, true, true);
        }
    if (rank < 2 * extra) {
        if (rank % 2 == 0)
            exchange(rank + 1, false, true);
        else
            exchange(rank - 1, true, false);
    }
}

double Agreement::value(Slot slot) const {
    const double v = agreed_.at(first_.at(slot));
    return kinds_[slot] == Kind::Min ? -v : v;
}

bool Agreement::holds(Slot slot) const {
    const size_t i = first_.at(slot);
    if (kinds_[slot] == Kind::All) return agreed_.at(i) == 0;
    return agreed_.at(i) == -agreed_.at(i + 2) && agreed_.at(i + 1) == -agreed_.at(i + 3);
}

bool all_agree(mca_coll_themis_module_t *m, bool ok) {
    Agreement agreement;
    const Agreement::Slot all = agreement.all(ok);
    agreement.run(m);
    return agreement.holds(all);
}

void agree_max(mca_coll_themis_module_t *m, std::vector<double> &values) {
    std::vector<double> all(values.size());
    setup_allreduce(m, values.data(), all.data(), int(values.size()), &ompi_mpi_double.dt,
                    &ompi_mpi_op_max.op);
    values = all;
}

void gather_bytes(mca_coll_themis_module_t *m, const void *mine, void *all, int bytes) {
    setup_allgather(m, mine, all, bytes);
}

void setup_wait(ompi_request_t *request, const char *what) {
    count_setup_round();
    while (!REQUEST_COMPLETE(request)) opal_progress();
    const int rc = request->req_status.MPI_ERROR;
    ompi_request_free(&request);
    if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
}

void setup_allreduce(mca_coll_themis_module_t *m, const void *in, void *out, int count,
                     ompi_datatype_t *type, ompi_op_t *op) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(in, out, count, type, op, dup, &request,
                                     dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        throw std::runtime_error("a set-up reduction failed to start");
    setup_wait(request, "a set-up reduction failed");
}

void setup_allgather(mca_coll_themis_module_t *m, const void *mine, void *all, int bytes) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallgather(mine, bytes, &ompi_mpi_byte.dt, all, bytes, &ompi_mpi_byte.dt,
                                     dup, &request,
                                     dup->c_coll->coll_iallgather_module) != OMPI_SUCCESS)
        throw std::runtime_error("a set-up exchange failed to start");
    setup_wait(request, "a set-up exchange failed");
}

} // namespace themis
