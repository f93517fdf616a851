# Spack package of coll/themis: `spack repo add packaging/spack`, then `spack install coll-themis`.
from spack.package import *


class CollThemis(AutotoolsPackage):
    """coll/themis: an Open MPI collective component that keeps every dimension of a
    hierarchical network busy at once for MPI_Allreduce, MPI_Reduce_scatter(_block),
    MPI_Allgather, MPI_Bcast and MPI_Reduce (Themis, ISCA 2022)."""

    homepage = "https://github.com/coll-themis/coll-themis"
    # Releases are the tarballs `make dist` makes; the version's one source is configure.ac.
    url = "https://github.com/coll-themis/coll-themis/releases/download/v0.1.0/coll-themis-0.1.0.tar.gz"

    version("0.1.0")

    variant("ucx", default=True, description="Themis's own UCX UCP transport beside the PML")
    variant("cuda", default=False, description="CUDA device buffers (kernels built with nvcc)")

    # An Open MPI component: it builds against one Open MPI's internal headers and loads only
    # into that Open MPI, of the 4.1 or 5.0 series.
    depends_on("mpi")
    conflicts("^mpich", msg="coll/themis is an Open MPI component: Open MPI 4.1 or 5.0 only")
    conflicts("^mvapich2", msg="coll/themis is an Open MPI component: Open MPI 4.1 or 5.0 only")
    conflicts("^intel-oneapi-mpi", msg="coll/themis is an Open MPI component: Open MPI 4.1 or 5.0 only")
    conflicts("^openmpi@:4.0", msg="coll/themis builds against Open MPI 4.1 or 5.0 only")
    conflicts("^openmpi@5.1:", msg="coll/themis builds against Open MPI 4.1 or 5.0 only")

    depends_on("hwloc")
    depends_on("glpk")
    depends_on("ucx", when="+ucx")
    depends_on("cuda", when="+cuda")
    depends_on("pkgconfig", type="build")
    depends_on("googletest", type="build")  # configure requires it (the unit tests)

    def configure_args(self):
        args = [
            # Into this package's own prefix, never into Open MPI's tree.
            "--with-ompi-component-dir={0}".format(self.component_dir),
        ]
        args += self.with_or_without("ucx")
        if self.spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(self.spec["cuda"].prefix))
        else:
            args.append("--without-cuda")
        return args

    @property
    def component_dir(self):
        return join_path(self.prefix.lib, "openmpi")

    def ompi_component_dir(self):
        """Open MPI's own component directory, as its ompi_info reports it."""
        ompi_info = which("ompi_info", path=self.spec["mpi"].prefix.bin)
        if ompi_info:
            out = ompi_info("--path", "pkglibdir", "--parsable", output=str, error=str)
            for line in out.splitlines():
                if line.startswith("path:pkglibdir:"):
                    return line.split(":", 2)[2].strip()
        return join_path(self.spec["mpi"].prefix.lib, "openmpi")

    def setup_run_environment(self, env):
        # mca_base_component_path replaces Open MPI's default: keep its own directory after
        # this one, so that `spack load coll-themis` makes a plain mpirun find both.
        env.prepend_path("OMPI_MCA_mca_base_component_path", self.ompi_component_dir())
        env.prepend_path("OMPI_MCA_mca_base_component_path", self.component_dir)
