/* alloc_count.c: an LD_PRELOAD library that counts heap allocations between two markers,
 * by who asked for them (bench/hot_path.c uses it; bench/run_hot_path.sh builds it).
 *
 *   cc -shared -fPIC -O2 -o alloc_count.so bench/alloc_count.c
 *   LD_PRELOAD=alloc_count.so mpirun ... themis-hot-path --count-allocs
 *
 * malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc and pvalloc go
 * to glibc's own entry points (__libc_*); while the thread that called alloc_count_start()
 * counts (no other thread: Open MPI's helper threads allocate on their own schedule), each
 * one walks the stack (backtrace) and is charged to the first frame outside the allocator
 * itself (this library, libc, libstdc++, libgcc_s): to themis when that frame lies in the
 * coll/themis component (a file whose name holds "mca_coll_themis"), else to "other" (Open
 * MPI's libraries, the program). So an Open MPI free list that grows inside a PML call
 * themis makes counts as other, a std::vector that grows inside themis's code as themis.
 *
 * The program finds the markers with dlsym (they are absent without the library):
 *   void alloc_count_start(void);
 *   void alloc_count_stop(unsigned long counts[3]);   // all, themis, other */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define MAX_RANGES 64
#define MAX_FRAMES 32

struct range {
    uintptr_t lo, hi;
};
static struct range themis_ranges[MAX_RANGES], allocator_ranges[MAX_RANGES];
static int n_themis, n_allocator;
static __thread int counting; /* this thread counts */
static __thread int inside;   /* an allocation made while counting one */
static unsigned long n_all, n_themis_allocs, n_other;

static int add_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void) size;
    (void) data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    struct range *to = NULL;
    int *n = NULL;
    if (strstr(name, "mca_coll_themis"))
        to = themis_ranges, n = &n_themis;
    else if (strstr(name, "alloc_count") || strstr(name, "libc.so") ||
             strstr(name, "libstdc++") || strstr(name, "libgcc_s"))
        to = allocator_ranges, n = &n_allocator;
    if (!to) return 0;
    for (int i = 0; i < info->dlpi_phnum && *n < MAX_RANGES; ++i) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        to[*n].lo = info->dlpi_addr + p->p_vaddr;
        to[*n].hi = to[*n].lo + p->p_memsz;
        ++*n;
    }
    return 0;
}

static int in(const struct range *r, int n, uintptr_t a)
{
    for (int i = 0; i < n; ++i)
        if (a >= r[i].lo && a < r[i].hi) return 1;
    return 0;
}

static void count(void)
{
    if (!counting || inside) return;
    inside = 1;
    void *frames[MAX_FRAMES];
    const int n = backtrace(frames, MAX_FRAMES);
    ++n_all;
    int charged = 0;
    for (int i = 0; i < n && !charged; ++i) {
        const uintptr_t a = (uintptr_t) frames[i];
        if (in(allocator_ranges, n_allocator, a)) continue;
        if (in(themis_ranges, n_themis, a))
            ++n_themis_allocs;
        else
            ++n_other;
        charged = 1;
    }
    if (!charged) ++n_other;
    inside = 0;
}

void alloc_count_start(void)
{
    inside = 1;
    void *warm[2];
    backtrace(warm, 2); /* loads libgcc_s (which allocates) before counting */
    n_themis = n_allocator = 0;
    dl_iterate_phdr(add_ranges, NULL);
    n_all = n_themis_allocs = n_other = 0;
    inside = 0;
    counting = 1;
}

void alloc_count_stop(unsigned long counts[3])
{
    counting = 0;
    counts[0] = n_all;
    counts[1] = n_themis_allocs;
    counts[2] = n_other;
}

void *malloc(size_t bytes)
{
    count();
    return __libc_malloc(bytes);
}

void *calloc(size_t n, size_t bytes)
{
    count();
    return __libc_calloc(n, bytes);
}

void *realloc(void *p, size_t bytes)
{
    count();
    return __libc_realloc(p, bytes);
}

void *memalign(size_t alignment, size_t bytes)
{
    count();
    return __libc_memalign(alignment, bytes);
}

void *aligned_alloc(size_t alignment, size_t bytes)
{
    count();
    return __libc_memalign(alignment, bytes);
}

int posix_memalign(void **out, size_t alignment, size_t bytes)
{
    count();
    void *p = __libc_memalign(alignment, bytes);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *valloc(size_t bytes)
{
    count();
    return __libc_valloc(bytes);
}

void *pvalloc(size_t bytes)
{
    count();
    return __libc_pvalloc(bytes);
}
