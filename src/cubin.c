/*
 * cubin.c -- resource usage read from a compiled cubin (an ELF64 file), and
 * whether a cubin is a whole ELF image (qg__cubin_check, for the disk cache).
 *
 * Why: ptxas's verbose report reaches NVRTC's log only when ptxas actually
 * runs. On a machine with a driver, a repeated compile of the same program can
 * be served from a cache and the log comes back empty, while the spill check
 * must never be skipped. The cubin always says what the kernel uses:
 *   - `.nv.info` holds attribute records {u8 format, u8 attribute, ...};
 *     format 0x04 (EIFMT_SVAL) is followed by a u16 size and that many bytes.
 *     EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x11) carry
 *     {u32 function symbol, u32 value}.
 *   - a spill needs local memory, which is the stack frame: frame 0 means
 *     no spills.
 * Invariant: any malformed input returns false; nothing is read out of bounds.
 */
#include "internal.h"

#include <string.h>

#define EIFMT_NVAL 0x01
#define EIFMT_BVAL 0x02
#define EIFMT_HVAL 0x03
#define EIFMT_SVAL 0x04
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f

static uint64_t rd(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Scan one .nv.info section; keep the largest value of each attribute. */
static void scan_nv_info(const uint8_t *p, size_t size, int *regs, int *frame) {
    size_t i = 0;
    while (i + 2 <= size) {
        const uint8_t format = p[i], attribute = p[i + 1];
        i += 2;
        if (format == EIFMT_NVAL) continue;
        if (format == EIFMT_BVAL || format == EIFMT_HVAL) {
            i += format == EIFMT_BVAL ? 1 : 2;
            continue;
        }
        if (format != EIFMT_SVAL || i + 2 > size) return;
        const size_t len = (size_t)rd(p + i, 2);
        i += 2;
        if (i + len > size) return;
        if (len >= 8 && (attribute == EIATTR_REGCOUNT || attribute == EIATTR_FRAME_SIZE)) {
            const int v = (int)rd(p + i + 4, 4);
            int *dst = attribute == EIATTR_REGCOUNT ? regs : frame;
            if (v > *dst) *dst = v;
        }
        i += len;
    }
}

bool qg__cubin_resources(const void *cubin, size_t size, int *registers, int *frame_bytes) {
    const uint8_t *e = cubin;
    if (size < 64 || memcmp(e, "\177ELF", 4) || e[4] != 2 /* ELFCLASS64 */ || e[5] != 1 /* LE */)
        return false;
    const uint64_t shoff = rd(e + 0x28, 8);
    const uint64_t shentsize = rd(e + 0x3a, 2), shnum = rd(e + 0x3c, 2), shstrndx = rd(e + 0x3e, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size || shnum > (size - shoff) / shentsize)
        return false;
    const uint8_t *strtab_hdr = e + shoff + shstrndx * shentsize;
    const uint64_t str_off = rd(strtab_hdr + 0x18, 8), str_size = rd(strtab_hdr + 0x20, 8);
    if (str_off > size || str_size > size - str_off) return false;
    int regs = -1, frame = -1, text_regs = -1;
    for (uint64_t s = 0; s < shnum; s++) {
        const uint8_t *h = e + shoff + s * shentsize;
        const uint64_t name = rd(h, 4), off = rd(h + 0x18, 8), sz = rd(h + 0x20, 8);
        const uint64_t info = rd(h + 0x2c, 4);
        if (name >= str_size || off > size || sz > size - off) continue;
        const char *nm = (const char *)e + str_off + name;
        const size_t max_len = (size_t)(str_size - name);
        if (strnlen(nm, max_len) == max_len) continue;
        if (!strncmp(nm, ".nv.info", 8)) scan_nv_info(e + off, (size_t)sz, &regs, &frame);
        /* A kernel's .text section keeps its register count in sh_info[31:24]. */
        if (!strncmp(nm, ".text.", 6) && (int)(info >> 24) > text_regs) text_regs = (int)(info >> 24);
    }
    if (regs < 0) regs = text_regs;
    if (regs <= 0 || frame < 0) return false;
    *registers = regs;
    *frame_bytes = frame;
    return true;
}

/* The ELF structure of a cubin: every table and section the driver will
 * read lies inside the image. A cache entry is checked with this before it
 * is handed out (src/cache.c): its SHA-256 proves the file is what was
 * written, not that what was written is a whole image (a forged entry with
 * a recomputed hash, a truncated cubin), and a truncated image must not be
 * the driver's problem. What the sections hold is not checked: the driver
 * refuses a well-formed image it cannot load (src/launch.c then recompiles). */
#define ELF_MACHINE_CUDA 190
#define SHT_NOBITS 8

const char *qg__cubin_check(const void *cubin, size_t size) {
    const uint8_t *e = cubin;
    if (!cubin || size < 64) return "cubin shorter than an ELF header";
    if (memcmp(e, "\177ELF", 4)) return "cubin is not an ELF image (bad magic)";
    if (e[4] != 2 || e[5] != 1) return "cubin is not a 64-bit little-endian ELF image";
    if (rd(e + 0x12, 2) != ELF_MACHINE_CUDA) return "cubin is an ELF image for another machine than CUDA";
    const uint64_t phoff = rd(e + 0x20, 8), shoff = rd(e + 0x28, 8);
    const uint64_t ehsize = rd(e + 0x34, 2), phentsize = rd(e + 0x36, 2), phnum = rd(e + 0x38, 2);
    const uint64_t shentsize = rd(e + 0x3a, 2), shnum = rd(e + 0x3c, 2), shstrndx = rd(e + 0x3e, 2);
    if (ehsize < 64 || ehsize > size) return "cubin: bad ELF header size";
    if (shnum == 0 || shentsize < 64 || shstrndx >= shnum)
        return "cubin: no section header table";
    /* the tables: shnum * shentsize <= 65535 * 65535, no overflow below */
    if (shoff > size || shnum * shentsize > size - shoff)
        return "cubin: section header table past the end of the image (truncated?)";
    if (phnum && (phentsize < 56 || phoff > size || phnum * phentsize > size - phoff))
        return "cubin: program header table past the end of the image (truncated?)";
    for (uint64_t s = 0; s < shnum; s++) {
        const uint8_t *h = e + shoff + s * shentsize;
        const uint64_t type = rd(h + 4, 4), off = rd(h + 0x18, 8), sz = rd(h + 0x20, 8);
        if (type != SHT_NOBITS && (off > size || sz > size - off))
            return "cubin: a section lies past the end of the image (truncated?)";
    }
    for (uint64_t i = 0; i < phnum; i++) {
        const uint8_t *h = e + phoff + i * phentsize;
        const uint64_t off = rd(h + 0x08, 8), filesz = rd(h + 0x20, 8);
        if (off > size || filesz > size - off)
            return "cubin: a segment lies past the end of the image (truncated?)";
    }
    return NULL;
}
