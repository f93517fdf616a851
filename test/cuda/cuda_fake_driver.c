/* cuda_fake_driver.c: a stand-in libcuda.so.1 for testing coll/themis's CUDA glue on
 * machines without a GPU (test/cuda/cuda_run.sh fake). It is NOT a GPU test: it checks
 * the glue's logic (detection, routing, staging with asynchronous copies, kernel
 * selection and arguments, copies back and forth) against an emulated driver.
 *
 *   device memory  host memory mapped twice: the address handed out is PROT_NONE, so
 *                  any host code that touches "device" memory directly crashes (as it
 *                  would on a GPU); the driver copies through a private read-write
 *                  alias. FAKE_CUDA_HOST_VISIBLE=1 makes the handed-out address
 *                  readable and writable (for a transport that reads device memory).
 *   streams        operations queue up and run later: cuStreamSynchronize runs them
 *                  all, cuEventQuery runs at most one before answering, so copies
 *                  complete well after they were issued.
 *   kernels        the module must be a fat binary (magic 0xba55ed50); the functions
 *                  themis_reduce_<op>_<type> run on the CPU with the same expressions
 *                  as reduce_kernels.cu. FAKE_CUDA_NO_KERNELS=1 refuses the module.
 *   counters       themis_fake_cuda_counters() reports launches and copies, so a test
 *                  can check which path ran, and allocations;
 *                  themis_fake_cuda_host_allocations() those of pinned host memory;
 *                  themis_fake_cuda_ipc_counters() the IPC handles exported and opened.
 *   IPC            every allocation is a memfd kept open: cuIpcGetMemHandle puts the
 *                  owner's pid and descriptor in the handle, cuIpcOpenMemHandle maps
 *                  /proc/<pid>/fd/<fd> into the opener (PROT_NONE alias again), so
 *                  processes of one machine share "device" memory as they would
 *                  through the real driver. A freed allocation's memfd is emptied
 *                  and kept for the next allocation, as the driver reuses freed
 *                  memory: opening a handle whose memory this process already maps
 *                  (the same allocation twice, or a new allocation in the memory of
 *                  a freed one still open here) fails with CUDA_ERROR_ALREADY_MAPPED,
 *                  as it does there.
 *
 * Only what coll/themis and test/cuda/cuda_check.c call is here. Threads may call it at
 * once: every entry point holds one lock (and the current context is per thread). */
#define _GNU_SOURCE
#include <cuda.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* One lock over the whole emulated driver, held for the length of each entry point. */
static pthread_mutex_t fake_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void release_fake_lock(int *held)
{
    (void) held;
    pthread_mutex_unlock(&fake_lock);
}
#define HOLD_FAKE_LOCK \
    int fake_lock_held __attribute__((cleanup(release_fake_lock), unused)) = pthread_mutex_lock(&fake_lock)

/* ------------------------------------------------------------------ state */

struct alloc {
    char *dev;  /* the address handed out */
    char *priv; /* read-write alias */
    size_t size;
    int pinned; /* host memory from cuMemHostAlloc (dev == priv) */
    int fd;     /* device memory: its memfd, kept for IPC; -1 otherwise */
    int opened; /* mapped by cuIpcOpenMemHandle from another process */
    unsigned long long id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    pid_t owner;           /* opened: the exporting process; else this one */
    int owner_fd;          /* opened: the exporter's descriptor */
};

/* What cuIpcGetMemHandle writes into the 64 reserved bytes. */
struct fake_handle {
    unsigned int magic;
    pid_t pid;
    int fd;
    size_t size;
    unsigned long long id;
};
#define FAKE_HANDLE_MAGIC 0xfa4ec0dau

static struct alloc *allocs;
static size_t n_allocs, cap_allocs;
static int initialized;
static int fake_ctx_storage;
static CUcontext fake_ctx = (CUcontext) &fake_ctx_storage;
static __thread CUcontext current;
static unsigned long long counters[4]; /* launches, async copies, sync copies, allocations */
static unsigned long long ipc_counters[3]; /* handles exported, opened, closed */
static unsigned long long refused_frees; /* frees on a thread without a current context */
static unsigned long long host_allocations; /* of allocations: pinned host memory */
static unsigned long long next_id = 1;
static int free_fds[64]; /* memfds of freed allocations, emptied, for the next ones */
static size_t n_free_fds;

EXPORT void themis_fake_cuda_counters(unsigned long long out[4])
{
    HOLD_FAKE_LOCK;
    memcpy(out, counters, sizeof counters);
}

EXPORT unsigned long long themis_fake_cuda_host_allocations(void)
{
    HOLD_FAKE_LOCK;
    return host_allocations;
}

EXPORT void themis_fake_cuda_ipc_counters(unsigned long long out[3])
{
    HOLD_FAKE_LOCK;
    memcpy(out, ipc_counters, sizeof ipc_counters);
}

/* A real driver refuses (CUDA_ERROR_INVALID_CONTEXT) to free memory on a thread without a
 * current context, and the memory stays allocated: a leak where the error is ignored. */
EXPORT unsigned long long themis_fake_cuda_refused_frees(void)
{
    HOLD_FAKE_LOCK;
    return refused_frees;
}

static struct alloc *find(const void *p)
{
    const char *c = (const char *) p;
    for (size_t i = 0; i < n_allocs; ++i)
        if (c >= allocs[i].dev && c < allocs[i].dev + allocs[i].size) return &allocs[i];
    return NULL;
}

/* Where the driver reads or writes the bytes at `p`. */
static char *real(const void *p)
{
    struct alloc *a = find(p);
    return a ? a->priv + ((const char *) p - a->dev) : (char *) p;
}

static void add(struct alloc a)
{
    if (n_allocs == cap_allocs) {
        cap_allocs = cap_allocs ? 2 * cap_allocs : 64;
        allocs = realloc(allocs, cap_allocs * sizeof *allocs);
    }
    allocs[n_allocs++] = a;
}

static void drop(struct alloc *a)
{
    *a = allocs[--n_allocs];
}

/* ------------------------------------------------------------------ kernels */

struct function {
    int op;   /* 0 sum, 1 prod, 2 min, 3 max */
    int type; /* index into type_names */
};
static const char *const op_names[] = {"sum", "prod", "min", "max"};
static const char *const type_names[] = {"f32", "f64", "i8",  "u8",  "i16", "u16",
                                         "i32", "u32", "i64", "u64", "f16", "bf16"};
static struct function functions[4][12];
static int module_storage;

#define APPLY(T)                                                                                 \
    {                                                                                            \
        T *d = (T *) dst;                                                                        \
        const T *s = (const T *) src;                                                            \
        for (unsigned long long i = 0; i < n; ++i) {                                             \
            T a = d[i], b = s[i];                                                                \
            d[i] = op == 0 ? (T)(a + b) : op == 1 ? (T)(a * b) : op == 2 ? (a < b ? a : b)       \
                                                                          : (a > b ? a : b);     \
        }                                                                                        \
    }

static CUresult run_kernel(const struct function *f, char *dst, const char *src, unsigned long long n)
{
    const int op = f->op;
    switch (f->type) {
    case 0: APPLY(float) break;
    case 1: APPLY(double) break;
    case 2: APPLY(int8_t) break;
    case 3: APPLY(uint8_t) break;
    case 4: APPLY(int16_t) break;
    case 5: APPLY(uint16_t) break;
    case 6: APPLY(int32_t) break;
    case 7: APPLY(uint32_t) break;
    case 8: APPLY(int64_t) break;
    case 9: APPLY(uint64_t) break;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* 16-bit floats: not emulated */
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ streams */

struct op {
    int kind; /* 0 copy, 1 kernel */
    void *dst;
    const void *src;
    size_t bytes;
    const struct function *fn;
    unsigned long long n;
};

struct stream {
    struct op *ops;
    size_t head, tail, cap; /* ops[head..tail) pending; `tail` counts all ever queued */
    size_t base;            /* ops index 0 corresponds to this sequence number */
};

struct event {
    struct stream *stream;
    size_t seq; /* complete once the stream has run this many ops */
};

static CUresult execute(struct op *o)
{
    if (o->kind == 0) {
        memmove(real(o->dst), real(o->src), o->bytes);
        return CUDA_SUCCESS;
    }
    counters[0]++;
    return run_kernel(o->fn, real(o->dst), real(o->src), o->n);
}

static size_t done_of(struct stream *s) { return s->base + s->head; }

static CUresult run_one(struct stream *s)
{
    if (s->head == s->tail) return CUDA_SUCCESS;
    CUresult r = execute(&s->ops[s->head++]);
    if (s->head == s->tail) { /* drained: reuse the array from the start */
        s->base += s->head;
        s->head = s->tail = 0;
    }
    return r;
}

static CUresult run_all(struct stream *s)
{
    CUresult r = CUDA_SUCCESS;
    while (s->head != s->tail)
        if ((r = run_one(s)) != CUDA_SUCCESS) return r;
    return r;
}

static CUresult enqueue(CUstream hs, struct op o)
{
    struct stream *s = (struct stream *) hs;
    if (!s) return execute(&o); /* the null stream: at once */
    if (s->tail == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->ops = realloc(s->ops, s->cap * sizeof *s->ops);
    }
    s->ops[s->tail++] = o;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ the API */

EXPORT CUresult cuInit(unsigned int flags)
{
    HOLD_FAKE_LOCK;
    (void) flags;
    initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    HOLD_FAKE_LOCK;
    *s = e == CUDA_SUCCESS ? "no error" : e == CUDA_ERROR_NOT_READY ? "not ready" : "fake driver error";
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    HOLD_FAKE_LOCK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *n = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    HOLD_FAKE_LOCK;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    HOLD_FAKE_LOCK;
    (void) d;
    *ctx = fake_ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    HOLD_FAKE_LOCK;
    (void) d;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    HOLD_FAKE_LOCK;
    current = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    HOLD_FAKE_LOCK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *ctx = current;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                       CUdeviceptr ptr)
{
    HOLD_FAKE_LOCK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    struct alloc *a = find((const void *) ptr);
    for (unsigned int i = 0; i < n; ++i) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(CUmemorytype *) data[i] = !a ? (CUmemorytype) 0 : a->pinned ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *) data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *) data[i] = a ? fake_ctx : NULL; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *) data[i] = a ? a->id : 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    HOLD_FAKE_LOCK;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    const size_t size = (bytes + page - 1) / page * page;
    int fd = n_free_fds ? free_fds[--n_free_fds] : memfd_create("fake-cuda", 0);
    if (fd < 0 || ftruncate(fd, (off_t) size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    const char *visible = getenv("FAKE_CUDA_HOST_VISIBLE");
    const int prot = visible && *visible == '1' ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *dev = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
    void *priv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (dev == MAP_FAILED || priv == MAP_FAILED) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(priv, 0xd5, size); /* device memory is never zeroed for you */
    add((struct alloc){dev, priv, size, 0, fd, 0, next_id++, getpid(), fd});
    counters[3]++;
    *p = (CUdeviceptr) dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    HOLD_FAKE_LOCK;
    if (!current) {
        ++refused_frees;
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    struct alloc *a = find((const void *) p);
    if (!a || a->pinned || a->opened || a->dev != (char *) p) return CUDA_ERROR_INVALID_VALUE;
    munmap(a->dev, a->size);
    munmap(a->priv, a->size);
    if (n_free_fds < sizeof free_fds / sizeof free_fds[0] && ftruncate(a->fd, 0) == 0)
        free_fds[n_free_fds++] = a->fd;
    else
        close(a->fd);
    drop(a);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    HOLD_FAKE_LOCK;
    (void) flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    char *h = malloc(bytes ? bytes : 1);
    if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
    add((struct alloc){h, h, bytes ? bytes : 1, 1, -1, 0, next_id++, getpid(), -1});
    counters[3]++;
    host_allocations++;
    *p = h;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    HOLD_FAKE_LOCK;
    if (!current) {
        ++refused_frees;
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    struct alloc *a = find(p);
    if (!a || !a->pinned) return CUDA_ERROR_INVALID_VALUE;
    free(a->dev);
    drop(a);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    HOLD_FAKE_LOCK;
    counters[2]++;
    memmove(real((void *) dst), src, bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    HOLD_FAKE_LOCK;
    counters[2]++;
    memmove(dst, real((void *) src), bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    HOLD_FAKE_LOCK;
    counters[1]++;
    struct op o = {0, (void *) dst, (const void *) src, bytes, NULL, 0};
    return enqueue(s, o);
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    HOLD_FAKE_LOCK;
    (void) flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *s = (CUstream) calloc(1, sizeof(struct stream));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hs)
{
    HOLD_FAKE_LOCK;
    struct stream *s = (struct stream *) hs;
    run_all(s);
    free(s->ops);
    free(s);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    HOLD_FAKE_LOCK;
    return s ? run_all((struct stream *) s) : CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    HOLD_FAKE_LOCK;
    (void) flags;
    *e = (CUevent) calloc(1, sizeof(struct event));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent he, CUstream hs)
{
    HOLD_FAKE_LOCK;
    struct event *e = (struct event *) he;
    struct stream *s = (struct stream *) hs;
    e->stream = s;
    e->seq = s ? s->base + s->tail : 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(CUevent he)
{
    HOLD_FAKE_LOCK;
    struct event *e = (struct event *) he;
    if (!e->stream || done_of(e->stream) >= e->seq) return CUDA_SUCCESS;
    CUresult r = run_one(e->stream); /* some progress per poll, not all at once */
    if (r != CUDA_SUCCESS) return r;
    return done_of(e->stream) >= e->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    HOLD_FAKE_LOCK;
    free(e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    HOLD_FAKE_LOCK;
    const char *no = getenv("FAKE_CUDA_NO_KERNELS");
    if (no && *no == '1') return CUDA_ERROR_NO_BINARY_FOR_GPU;
    uint32_t magic = 0;
    memcpy(&magic, image, sizeof magic);
    if (magic != 0xba55ed50u) return CUDA_ERROR_INVALID_IMAGE;
    for (int o = 0; o < 4; ++o)
        for (int t = 0; t < 12; ++t) functions[o][t] = (struct function){o, t};
    *m = (CUmodule) &module_storage;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
    HOLD_FAKE_LOCK;
    (void) m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    HOLD_FAKE_LOCK;
    (void) m;
    const char *prefix = "themis_reduce_";
    if (strncmp(name, prefix, strlen(prefix)) != 0) return CUDA_ERROR_NOT_FOUND;
    name += strlen(prefix);
    for (int o = 0; o < 4; ++o) {
        size_t l = strlen(op_names[o]);
        if (strncmp(name, op_names[o], l) != 0 || name[l] != '_') continue;
        for (int t = 0; t < 12; ++t)
            if (strcmp(name + l + 1, type_names[t]) == 0) {
                *f = (CUfunction) &functions[o][t];
                return CUDA_SUCCESS;
            }
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                               CUstream s, void **params, void **extra)
{
    HOLD_FAKE_LOCK;
    (void) shared;
    if (!f || !params || extra || gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1)
        return CUDA_ERROR_INVALID_VALUE;
    struct op o = {1, *(void **) params[0], *(void **) params[1], 0, (const struct function *) f,
                   *(unsigned long long *) params[2]};
    return enqueue(s, o);
}

/* ------------------------------------------------------------------ IPC */

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    HOLD_FAKE_LOCK;
    struct alloc *a = find((const void *) p);
    if (!a || a->pinned) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = (CUdeviceptr) a->dev;
    if (size) *size = a->size;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    HOLD_FAKE_LOCK;
    struct alloc *a = find((const void *) p);
    if (!a || a->pinned || a->opened) return CUDA_ERROR_INVALID_VALUE;
    struct fake_handle f = {FAKE_HANDLE_MAGIC, getpid(), a->fd, a->size, a->id};
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &f, sizeof f);
    ipc_counters[0]++;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    HOLD_FAKE_LOCK;
    (void) flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_handle f;
    memcpy(&f, h.reserved, sizeof f);
    if (f.magic != FAKE_HANDLE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    if (f.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT; /* as the real driver */
    for (size_t i = 0; i < n_allocs; ++i)
        if (allocs[i].opened && allocs[i].owner == f.pid && allocs[i].owner_fd == f.fd)
            return CUDA_ERROR_ALREADY_MAPPED;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int) f.pid, f.fd);
    int fd = open(path, O_RDWR);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    const char *visible = getenv("FAKE_CUDA_HOST_VISIBLE");
    const int prot = visible && *visible == '1' ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *dev = mmap(NULL, f.size, prot, MAP_SHARED, fd, 0);
    void *priv = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || priv == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    add((struct alloc){dev, priv, f.size, 0, -1, 1, f.id, f.pid, f.fd});
    ipc_counters[1]++;
    *p = (CUdeviceptr) dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    HOLD_FAKE_LOCK;
    struct alloc *a = find((const void *) p);
    if (!a || !a->opened || a->dev != (char *) p) return CUDA_ERROR_INVALID_VALUE;
    munmap(a->dev, a->size);
    munmap(a->priv, a->size);
    drop(a);
    ipc_counters[2]++;
    return CUDA_SUCCESS;
}
