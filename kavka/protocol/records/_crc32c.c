/* kavka.protocol.records._crc32c: CRC32C (Castagnoli, the checksum of a v2
 * record batch, KIP-98) by carry-less multiplication folding on CPUs with
 * AVX-512 and VPCLMULQDQ, the SSE4.2 crc32 instruction elsewhere.
 *
 * crc32c(data, value=0) -> int: the CRC32C of `data` (any contiguous
 * buffer), continuing `value`, the CRC of the bytes before it; the same
 * results as the `crc32c` package (test_crc32c.py checks both on random
 * buffers, lengths and starting values).
 * FOLDING: True where the folding path runs on this CPU.
 * The module refuses to import on a CPU without SSE4.2;
 * kavka.protocol.records.batch then uses the `crc32c` package.
 *
 * Why: the leader checks the CRC of every batch it appends and recovery of
 * every batch it scans; with one crc32 instruction a cycle the check of a
 * 1 MiB batch took a sixth of its write. Folding handles 256 bytes per
 * step in four independent 512-bit accumulators.
 *
 * The arithmetic (polynomials over GF(2), reflected bit order as CRC32C
 * uses it: the first byte's bit 0 is the highest power). A 16-byte lane
 * read little-endian into two 64-bit words lo, hi is L = x^64 LO + HI,
 * where bit i of a word is the coefficient of x^(63-i). A carry-less
 * product of two such words, read as a 128-bit lane the same way, is
 * x*A*B (the product has degree <= 126; the lane's lowest bit is x^0).
 * To carry a lane D bits further (L * x^D mod P, P the CRC32C
 * polynomial) it is enough to multiply lo by x^(D+63) mod P and hi by
 * x^(D-1) mod P and add (xor) the two products: both have degree < 96, so
 * fit a lane, and the sum is congruent to L * x^D. Folding the lanes of
 * the data already seen onto the lanes D bits on and adding those gives a
 * 512-bit value congruent, modulo P, to everything read so far. At the end
 * the lanes fold into one; the crc32 instruction over that lane's 16 bytes
 * (from 0) is then the CRC of all bytes before (its value is M * x^32 mod
 * P, which depends on M only modulo P), and the instruction goes on over
 * the last bytes. A starting CRC is the register value xored into the
 * first 32 bits of the data, as in the CRC's definition.
 *
 * The constants x^n mod P are computed once at import (xpow_mod), not
 * written out.
 *
 * The GIL is released for buffers of 64 KiB and more: a broker's other
 * threads go on while a large batch is checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define POLY 0x1EDC6F41u /* CRC32C, x^32 implied (normal bit order) */
#define FOLD_MIN 512     /* shorter buffers: the crc32 instruction alone */
#define NOGIL_MIN (64 * 1024)

static int folding;
/* per distance: [x^(D+63) mod P, x^(D-1) mod P] as reflected 64-bit words */
static uint64_t k2048[2], k1536[2], k1024[2], k512[2], k384[2], k256[2], k128[2];

/* x^n mod P, bit j the coefficient of x^j */
static uint32_t xpow_mod(unsigned n) {
    uint64_t r = 1;
    while (n--) {
        r <<= 1;
        if (r & 0x100000000ull)
            r ^= 0x100000000ull | POLY;
    }
    return (uint32_t)r;
}

/* the coefficient of x^j at bit 63 - j */
static uint64_t reflected64(uint32_t normal) {
    uint64_t r = 0;
    for (int j = 0; j < 32; j++)
        if (normal & (1u << j))
            r |= 1ull << (63 - j);
    return r;
}

static void fold_constants(uint64_t k[2], unsigned distance) {
    k[0] = reflected64(xpow_mod(distance + 63));
    k[1] = reflected64(xpow_mod(distance - 1));
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}

#define FOLD_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

/* every lane of v carried by the distance of k, plus `next` */
FOLD_TARGET static inline __m512i fold512(__m512i v, __m512i k, __m512i next) {
    __m512i lo = _mm512_clmulepi64_epi128(v, k, 0x00);
    __m512i hi = _mm512_clmulepi64_epi128(v, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

FOLD_TARGET static inline __m128i fold128(__m128i v, const uint64_t k[2], __m128i next) {
    __m128i kk = _mm_set_epi64x((long long)k[1], (long long)k[0]);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(v, kk, 0x00), _mm_clmulepi64_si128(v, kk, 0x11)),
                         next);
}

FOLD_TARGET static inline __m512i broadcast(const uint64_t k[2]) {
    return _mm512_set_epi64((long long)k[1], (long long)k[0], (long long)k[1], (long long)k[0], (long long)k[1],
                            (long long)k[0], (long long)k[1], (long long)k[0]);
}

/* n >= FOLD_MIN */
FOLD_TARGET static uint32_t crc_fold(uint32_t crc, const uint8_t *p, size_t n) {
    __m512i a0 = _mm512_loadu_si512((const void *)p);
    __m512i a1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i a2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i a3 = _mm512_loadu_si512((const void *)(p + 192));
    a0 = _mm512_xor_si512(a0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)crc));
    p += 256;
    n -= 256;
    __m512i k = broadcast(k2048);
    while (n >= 256) {
        a0 = fold512(a0, k, _mm512_loadu_si512((const void *)p));
        a1 = fold512(a1, k, _mm512_loadu_si512((const void *)(p + 64)));
        a2 = fold512(a2, k, _mm512_loadu_si512((const void *)(p + 128)));
        a3 = fold512(a3, k, _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        n -= 256;
    }
    /* a0..a3 into one: each lane of a0 is 1536 bits before its lane in a3 */
    a3 = fold512(a0, broadcast(k1536), a3);
    a3 = fold512(a1, broadcast(k1024), a3);
    a3 = fold512(a2, broadcast(k512), a3);
    k = broadcast(k512);
    while (n >= 64) {
        a3 = fold512(a3, k, _mm512_loadu_si512((const void *)p));
        p += 64;
        n -= 64;
    }
    /* its four lanes into one */
    __m128i v = _mm512_extracti32x4_epi32(a3, 3);
    v = fold128(_mm512_extracti32x4_epi32(a3, 0), k384, v);
    v = fold128(_mm512_extracti32x4_epi32(a3, 1), k256, v);
    v = fold128(_mm512_extracti32x4_epi32(a3, 2), k128, v);
    while (n >= 16) {
        v = fold128(v, k128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(v, 1));
    return crc_hw((uint32_t)c, p, n);
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n) {
    if (folding && n >= FOLD_MIN)
        return crc_fold(crc, p, n);
    return crc_hw(crc, p, n);
}

static PyObject *py_crc32c(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32c(data, value=0) takes one or two arguments");
        return NULL;
    }
    uint32_t value = 0;
    if (nargs == 2) {
        unsigned long long v = PyLong_AsUnsignedLongLong(args[1]);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
        if (v > 0xFFFFFFFFull) {
            PyErr_SetString(PyExc_ValueError, "crc32c: value must be a CRC32C, 0..2**32-1");
            return NULL;
        }
        value = (uint32_t)v;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc = ~value;
    if (view.len >= NOGIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc_update(crc, (const uint8_t *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc_update(crc, (const uint8_t *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(~crc);
}

static PyMethodDef methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_FASTCALL,
     "crc32c(data, value=0): the CRC32C of data, continuing value (the CRC of the bytes before it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crc32c", NULL, -1, methods};

PyMODINIT_FUNC PyInit__crc32c(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("sse4.2")) {
        PyErr_SetString(PyExc_ImportError, "kavka.protocol.records._crc32c needs SSE4.2");
        return NULL;
    }
    folding = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
              __builtin_cpu_supports("pclmul");
    fold_constants(k2048, 2048);
    fold_constants(k1536, 1536);
    fold_constants(k1024, 1024);
    fold_constants(k512, 512);
    fold_constants(k384, 384);
    fold_constants(k256, 256);
    fold_constants(k128, 128);
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "FOLDING", folding) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
