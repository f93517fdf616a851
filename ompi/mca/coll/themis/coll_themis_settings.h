// coll_themis_settings.h: what a communicator's calls are planned with: the MCA parameters in
// force and the communicator's themis info keys (MPI_Comm_set_info, MPI_Comm_dup_with_info),
// resolved at set-up and again after an info key changed, never per call.
#pragma once

#include "coll_themis_prelude.h"

#include <string>

#include "ompi/communicator/communicator.h"
#include "plan.h"

namespace themis {

// The value of the themis info key `key` on `comm` ("" when unset).
std::string info(ompi_communicator_t *comm, const char *key);
// The value of a themis info key on `comm` (mca_coll_themis_info_keys), else `parameter`, the
// value of the MCA parameter it overrides.
int info_choice(ompi_communicator_t *comm, const char *key, int parameter);

// Set by the info keys' subscription callback (coll_themis_module.c) each time Open MPI
// hands it a themis info key's value (MPI_Comm_set_info, a communicator's creation):
// settings resolve again on their next use.
uint64_t info_generation();

class PlanSettings {
  public:
    // Resolves them for `comm`, at position `position` of its layout: before the first fill().
    void resolve(ompi_communicator_t *comm, int position);
    // Fills `req` in for a collective: the settings in force, the collective and the element
    // size; the caller adds the sizes. Resolved again first if an info key changed; `req`'s
    // lists keep their room (cleared).
    void fill(PlanRequest &req, Collective coll, uint64_t element_size);
    // Whether a nonblocking call's unbalanced load passes to the next (coll_themis_carry_load).
    bool carry_load() const { return carry_load_; }
    int verbose() const { return verbose_; }

  private:
    ompi_communicator_t *comm_ = nullptr;
    int position_ = 0;
    PlanRequest request_; // every field but the sizes (its lists empty)
    bool carry_load_ = false;
    int verbose_ = 0;
    uint64_t info_generation_ = 0; // of the info keys it was resolved from
};

} // namespace themis
