#!/usr/bin/env python3
"""cuda_kernels_check.py: the reduction kernels were compiled for every target.

Reads the fat binary nvcc made from ompi/mca/coll/themis/cuda/reduce_kernels.cu (the
component embeds exactly these bytes) and checks, without a GPU and without cuobjdump
(CUDA 13 toolkits may not ship it): an ELF (SASS) image for each of sm_75, sm_80, sm_86,
sm_89 and sm_90, a PTX image for compute_90 (newer GPUs JIT it), and every kernel
themis_reduce_<op>_<type> in every ELF image. Also that the embedded C array
(reduce_kernels_fatbin.c) holds the same bytes.

usage: cuda_kernels_check.py FATBIN [FATBIN_C]
Fat binary layout (as nvcc writes it): a 16-byte header (magic 0xba55ed50, version,
header size, payload size), then images, each with a header (kind 1 = PTX, 2 = ELF;
header size; payload size; ...; the target architecture at offset 28) and a payload.
"""
import re
import struct
import sys

OPS = ["sum", "prod", "min", "max"]
TYPES = ["f32", "f64", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
WANT_ELF = {75, 80, 86, 89, 90}
WANT_PTX = {90}


def images(data):
    magic, _version, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50:
        raise SystemExit("not a fat binary (magic %#x)" % magic)
    pos, end = header, header + size
    while pos < end:
        kind, _unknown, ihead, isize = struct.unpack_from("<HHIQ", data, pos)
        arch = struct.unpack_from("<I", data, pos + 28)[0]
        yield kind, arch, data[pos + ihead:pos + ihead + isize]
        pos += ihead + isize


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    data = open(sys.argv[1], "rb").read()
    elf, ptx, problems = set(), set(), []
    for kind, arch, payload in images(data):
        if kind == 2:
            elf.add(arch)
            if not payload.startswith(b"\x7fELF"):
                problems.append("sm_%d: image is not an ELF file" % arch)
            for op in OPS:
                for t in TYPES:
                    name = ("themis_reduce_%s_%s" % (op, t)).encode()
                    if name + b"\0" not in payload:
                        problems.append("sm_%d: kernel %s missing" % (arch, name.decode()))
        elif kind == 1:
            ptx.add(arch)
    for a in sorted(WANT_ELF - elf):
        problems.append("no SASS for sm_%d" % a)
    for a in sorted(WANT_PTX - ptx):
        problems.append("no PTX for compute_%d" % a)
    if len(sys.argv) == 3:
        text = open(sys.argv[2]).read()
        body = text[text.index("{") + 1:text.rindex("}")]
        embedded = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body))
        if embedded != data:
            problems.append("the embedded array differs from the fat binary")
    print("fat binary %s: %d bytes, SASS for %s, PTX for %s, %d kernels per image" % (
        sys.argv[1], len(data), ", ".join("sm_%d" % a for a in sorted(elf)),
        ", ".join("compute_%d" % a for a in sorted(ptx)), len(OPS) * len(TYPES)))
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
