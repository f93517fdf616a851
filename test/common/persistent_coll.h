/* persistent_coll.h: the persistent collectives under the names the test programs use.
 * Open MPI 4.1 has them as its pcollreq extension, MPIX_*_init in <mpi-ext.h>; 5.0 has the
 * MPI 4.0 names, MPI_*_init, in <mpi.h> (while its MPI_VERSION still says 3). */
#ifndef THEMIS_TEST_PERSISTENT_COLL_H
#define THEMIS_TEST_PERSISTENT_COLL_H

#include <mpi.h>

/* HAVE_PERSISTENT_COLL: whether this Open MPI has them at all (4.1 built without the
 * pcollreq extension has not). */
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define HAVE_PERSISTENT_COLL 1
#define Persistent_allreduce_init MPI_Allreduce_init
#define Persistent_reduce_scatter_init MPI_Reduce_scatter_init
#define Persistent_reduce_scatter_block_init MPI_Reduce_scatter_block_init
#define Persistent_allgather_init MPI_Allgather_init
#define Persistent_bcast_init MPI_Bcast_init
#define Persistent_reduce_init MPI_Reduce_init
#else
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT_COLL 1
#else
#define HAVE_PERSISTENT_COLL 0
#endif
#define Persistent_allreduce_init MPIX_Allreduce_init
#define Persistent_reduce_scatter_init MPIX_Reduce_scatter_init
#define Persistent_reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define Persistent_allgather_init MPIX_Allgather_init
#define Persistent_bcast_init MPIX_Bcast_init
#define Persistent_reduce_init MPIX_Reduce_init
#endif

#endif
