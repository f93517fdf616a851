/* pairbw.c -- MPI bandwidth probes for the emulated network (bench/netem/netem.py calibrate).
 *
 *   pairbw [-m MSGBYTES] SRC:DST:BYTES ... [load=D0xD1x...:B0,B1,...]
 *
 * SRC:DST:BYTES  one pair at a time, every other rank idle: SRC sends BYTES to DST in
 *                MSGBYTES messages (MPI_Send) after a warm-up message, DST answers with a
 *                zero-byte message; rate = BYTES / (time from first send to the answer).
 *                Prints "PAIR src dst bytes seconds Mbit/s".
 * load=...       every link busy at once: each rank sends Bk bytes to its +1 neighbour and
 *                receives Bk from its -1 neighbour in every dimension k (Isend/Irecv, all
 *                posted together). Per rank and dimension the rate is Bk over the time until
 *                both directions of that dimension completed. Prints
 *                "LOAD dim k peers bytes min mean max" (Mbit/s over ranks).
 * Ranks are laid out as coll_themis_dims: dimension 0 varies fastest.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 8

static size_t msg = 4u << 20;
static char *buf, *rbuf;

static void pair(int rank, int src, int dst, long long bytes)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != src && rank != dst) return;
    int peer = rank == src ? dst : src;
    size_t warm = bytes < (long long)msg ? (size_t)bytes : msg;
    if (rank == src) {
        MPI_Send(buf, (int)warm, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        for (long long left = bytes; left > 0; left -= (long long)msg) {
            size_t n = left < (long long)msg ? (size_t)left : msg;
            MPI_Send(buf, (int)n, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
        }
        MPI_Recv(NULL, 0, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t = MPI_Wtime() - t0;
        printf("PAIR %d %d %lld %.4f %.2f\n", src, dst, bytes, t, bytes * 8.0 / t / 1e6);
        fflush(stdout);
    } else {
        MPI_Recv(rbuf, (int)warm, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
        for (long long left = bytes; left > 0; left -= (long long)msg) {
            size_t n = left < (long long)msg ? (size_t)left : msg;
            MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Send(NULL, 0, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
    }
}

static void load(int rank, int size, const char *spec)
{
    int dims[MAXD], nd = 0, prodn = 1;
    long long bytes[MAXD];
    const char *p = spec;
    while (nd < MAXD) {
        dims[nd++] = (int)strtol(p, (char **)&p, 10);
        prodn *= dims[nd - 1];
        if (*p == 'x') { p++; continue; }
        break;
    }
    if (*p != ':' || prodn != size) {
        if (rank == 0) fprintf(stderr, "pairbw: bad load spec %s for %d ranks\n", spec, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    p++;
    for (int k = 0; k < nd; k++) {
        bytes[k] = strtoll(p, (char **)&p, 10);
        if (*p == ',') p++;
    }
    int c[MAXD], stride[MAXD], r = rank, s = 1;
    for (int k = 0; k < nd; k++) { c[k] = r % dims[k]; r /= dims[k]; stride[k] = s; s *= dims[k]; }
    int to[MAXD], from[MAXD];
    for (int k = 0; k < nd; k++) {
        to[k] = rank + (((c[k] + 1) % dims[k]) - c[k]) * stride[k];
        from[k] = rank + (((c[k] + dims[k] - 1) % dims[k]) - c[k]) * stride[k];
    }
    /* warm-up: connections on every dimension */
    for (int k = 0; k < nd; k++) {
        if (dims[k] < 2) continue;
        MPI_Sendrecv(buf, 65536, MPI_BYTE, to[k], 50 + k, rbuf, 65536, MPI_BYTE, from[k], 50 + k,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    long long tot = 0;
    for (int k = 0; k < nd; k++) tot += (bytes[k] + (long long)msg - 1) / (long long)msg;
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t)tot);
    int *dimof = malloc(sizeof(int) * 2 * (size_t)tot);
    char **sb = malloc(sizeof(char *) * nd), **rb = malloc(sizeof(char *) * nd);
    int nreq = 0, left[MAXD];
    double done[MAXD];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < nd; k++) {
        left[k] = 0;
        done[k] = 0;
        if (dims[k] < 2) continue;
        sb[k] = malloc(msg);
        rb[k] = malloc(msg);
        memset(sb[k], k, msg);
        for (long long off = 0; off < bytes[k]; off += (long long)msg) {
            int n = (int)(bytes[k] - off < (long long)msg ? bytes[k] - off : (long long)msg);
            MPI_Irecv(rb[k], n, MPI_BYTE, from[k], 100 + k, MPI_COMM_WORLD, &req[nreq]);
            dimof[nreq++] = k;
            MPI_Isend(sb[k], n, MPI_BYTE, to[k], 100 + k, MPI_COMM_WORLD, &req[nreq]);
            dimof[nreq++] = k;
            left[k] += 2;
        }
    }
    for (int i = 0; i < nreq; i++) {
        int idx;
        MPI_Waitany(nreq, req, &idx, MPI_STATUS_IGNORE);
        int k = dimof[idx];
        if (--left[k] == 0) done[k] = MPI_Wtime() - t0;
    }
    for (int k = 0; k < nd; k++) {
        if (dims[k] < 2) continue;
        double rate = bytes[k] * 8.0 / done[k] / 1e6, mn, mx, sum;
        MPI_Reduce(&rate, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rate, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rate, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("LOAD dim %d %d %lld %.2f %.2f %.2f\n", k, dims[k], bytes[k], mn, sum / size, mx);
        free(sb[k]);
        free(rb[k]);
    }
    fflush(stdout);
    free(req);
    free(dimof);
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int i = 1;
    if (i + 1 < argc && 0 == strcmp(argv[i], "-m")) { msg = strtoull(argv[i + 1], NULL, 0); i += 2; }
    buf = malloc(msg);
    rbuf = malloc(msg);
    memset(buf, 1, msg);
    memset(rbuf, 0, msg);
    for (; i < argc; i++) {
        int s, d;
        long long b;
        if (0 == strncmp(argv[i], "load=", 5)) {
            load(rank, size, argv[i] + 5);
        } else if (3 == sscanf(argv[i], "%d:%d:%lld", &s, &d, &b) && s >= 0 && d >= 0 && s < size &&
                   d < size && s != d && b > 0) {
            pair(rank, s, d, b);
        } else {
            if (rank == 0) fprintf(stderr, "pairbw: bad argument %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
