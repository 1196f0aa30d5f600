/* kavka.spark._recordcols: decode the records section of a Kafka v2 record
 * batch straight into Arrow column buffers (see kavka/spark/arrow_records.py,
 * which owns the batch framing, CRC32C, decompression and transaction
 * filtering, and builds pyarrow arrays from what take() returns).
 *
 * Record layout (protocol guide, "Record"; zigzag varints, varint <= 5 bytes
 * and uint32, varlong <= 10 bytes and uint64 before zigzag):
 *   length varint | attributes int8 | timestampDelta varlong |
 *   offsetDelta varint | keyLength varint (-1 null) | key |
 *   valueLength varint (-1 null) | value | headerCount varint |
 *   headers: [keyLength varint, key utf8, valueLength varint (-1 null), value]
 *
 * Checks, the same as kavka.protocol.records (reader.py, record.py): no
 * length is trusted before it is compared with the bytes left; a record's
 * declared length must equal what its fields take; offset deltas rise
 * strictly and stay <= lastOffsetDelta; exactly `count` records fill the
 * section; header keys are non-null UTF-8. Any failure raises ValueError
 * naming the field and byte, and rolls the columns back to where the call
 * started, so a failed add() leaves nothing half-appended.
 *
 * Growth is bounded by the input: every byte appended to a data buffer was
 * read from the section, and the fixed-size columns grow by one entry per
 * record, each record taking >= 7 section bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    size_t hint; /* the size of the last buffer take() handed out: where the next one starts */
} Buf;

/* ---- spare blocks: the memory of handed-over buffers, used again ----
 *
 * take() hands each filled buffer to Arrow, and the next batch needs
 * buffers of about the same sizes. Freed and allocated again, blocks this
 * large go back to the kernel (glibc's mmap threshold, or a trimmed heap
 * top) and come back as fresh pages, each page-faulted in and zeroed on
 * first write: in Spark's Python workers that was ~50,000 page faults per
 * 1M records of 100 B, as much CPU as decoding them. So a block whose last
 * Arrow array went away is kept here (up to SPARE_MAX blocks, SPARE_BYTES
 * in all, each at least SPARE_MIN) and a new buffer starts in the smallest
 * one that fits. Only touched with the GIL held (Owned's dealloc, add and
 * take), which serialises it. */
#define SPARE_MAX 32
#define SPARE_MIN ((size_t)64 * 1024)
#define SPARE_BYTES ((size_t)96 * 1024 * 1024)
static struct { char *p; size_t cap; } spares[SPARE_MAX];
static int n_spares = 0;
static size_t spare_bytes = 0;

/* Keep a block, or free it when it is small or the spares are full. */
static void spare_put(char *p, size_t cap) {
    if (!p) return;
    if (cap >= SPARE_MIN && n_spares < SPARE_MAX && spare_bytes + cap <= SPARE_BYTES) {
        spares[n_spares].p = p;
        spares[n_spares].cap = cap;
        n_spares++;
        spare_bytes += cap;
        return;
    }
    PyMem_Free(p);
}

/* The smallest kept block of at least want bytes (NULL if none). */
static char *spare_take(size_t want, size_t *cap) {
    int best = -1;
    for (int i = 0; i < n_spares; i++)
        if (spares[i].cap >= want && (best < 0 || spares[i].cap < spares[best].cap)) best = i;
    if (best < 0) return NULL;
    char *p = spares[best].p;
    *cap = spares[best].cap;
    spare_bytes -= spares[best].cap;
    spares[best] = spares[--n_spares];
    return p;
}

/* An empty buffer starts in a kept block of at least its last size (hint)
 * or, failing one, in a new block an eighth larger than that: the next
 * batches, a little larger or smaller, then fit the blocks kept. */
static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    if (!b->p && b->hint + extra >= SPARE_MIN) {
        size_t got;
        char *kept = spare_take(b->hint > extra ? b->hint : extra, &got);
        if (kept) {
            b->p = kept;
            b->cap = got;
            if (b->len + extra <= b->cap) return 0;
        }
    }
    size_t cap = b->cap ? b->cap : (b->hint > 256 ? b->hint + b->hint / 8 : 256);
    while (cap < b->len + extra) cap *= 2;
    char *p = PyMem_Realloc(b->p, cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

/* A binary/string column: int32 offsets (n + 1), data, validity bitmap. */
typedef struct {
    Buf offsets, data, validity;
    Py_ssize_t n, nulls;
} VarCol;

typedef struct {
    Py_ssize_t n, nulls;
    size_t offsets_len, data_len;
} VarMark;

/* The leading 0 of an int32 offsets buffer, written before its first entry
 * (take() hands a column's buffers over, so each batch starts empty). */
static inline int offsets_start(Buf *b) {
    int32_t zero = 0;
    return b->len ? 0 : buf_put(b, &zero, 4);
}

static int varcol_add(VarCol *c, const uint8_t *src, int64_t len /* -1: null */) {
    Py_ssize_t i = c->n;
    if (offsets_start(&c->offsets) < 0) return -1;
    if ((size_t)(i / 8) >= c->validity.len) {
        if (buf_reserve(&c->validity, 1) < 0) return -1;
        c->validity.p[c->validity.len++] = 0;
    }
    uint8_t *v = (uint8_t *)c->validity.p + i / 8;
    if (len < 0) {
        *v &= (uint8_t)~(1u << (i % 8));
        c->nulls++;
        len = 0;
    } else {
        *v |= (uint8_t)(1u << (i % 8));
    }
    if (c->data.len + (size_t)len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "a binary column would exceed 2 GiB (Arrow int32 offsets); build record batches more often");
        return -1;
    }
    if (buf_put(&c->data, src, (size_t)len) < 0) return -1;
    int32_t end = (int32_t)c->data.len;
    if (buf_put(&c->offsets, &end, 4) < 0) return -1;
    c->n++;
    return 0;
}

static VarMark varcol_mark(const VarCol *c) {
    VarMark m = {c->n, c->nulls, c->offsets.len, c->data.len};
    return m;
}

static void varcol_rollback(VarCol *c, VarMark m) {
    c->n = m.n;
    c->nulls = m.nulls;
    c->offsets.len = m.offsets_len;
    c->data.len = m.data_len;
    c->validity.len = (size_t)((m.n + 7) / 8);
}

static void varcol_free(VarCol *c) {
    PyMem_Free(c->offsets.p);
    PyMem_Free(c->data.p);
    PyMem_Free(c->validity.p);
}

typedef struct {
    PyObject_HEAD
    int with_headers, initialised;
    Py_ssize_t n;
    Buf offsets, timestamps, ts_types, header_lists;
    VarCol keys, values, header_keys, header_values;
} Columns;

/* ---- decoding helpers: each returns 0, or -1 with a ValueError set ---- */

static int corrupt(Py_ssize_t pos, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    PyOS_vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    PyErr_Format(PyExc_ValueError, "%s (at byte %zd of the records section)", msg, pos);
    return -1;
}

/* Unsigned base-128 run of at most max_bytes, value <= limit. */
static int read_raw(const uint8_t *s, Py_ssize_t end, Py_ssize_t *pos, int max_bytes, uint64_t limit,
                    const char *what, uint64_t *out) {
    Py_ssize_t start = *pos, p = *pos;
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (p - start >= max_bytes) return corrupt(start, "%s longer than %d bytes", what, max_bytes);
        if (p >= end) return corrupt(start, "%s runs past the end of the record", what);
        uint8_t b = s[p++];
        uint64_t bits = (uint64_t)(b & 0x7F);
        if (shift == 63 && bits > 1) return corrupt(start, "%s does not fit %d bits", what, max_bytes == 5 ? 32 : 64);
        result |= bits << shift;
        if (b < 0x80) break;
        shift += 7;
    }
    if (result > limit) return corrupt(start, "%s does not fit %d bits", what, max_bytes == 5 ? 32 : 64);
    *pos = p;
    *out = result;
    return 0;
}

static inline int read_varint(const uint8_t *s, Py_ssize_t end, Py_ssize_t *pos, const char *what, int32_t *out) {
    if (*pos < end && s[*pos] < 0x80) {
        uint8_t b = s[(*pos)++];
        *out = (int32_t)(b >> 1) ^ -(int32_t)(b & 1);
        return 0;
    }
    uint64_t raw;
    if (read_raw(s, end, pos, 5, UINT32_MAX, what, &raw) < 0) return -1;
    uint32_t z = (uint32_t)raw;
    *out = (int32_t)((z >> 1) ^ (uint32_t)-(int32_t)(z & 1));
    return 0;
}

static inline int read_varlong(const uint8_t *s, Py_ssize_t end, Py_ssize_t *pos, const char *what, int64_t *out) {
    uint64_t z;
    if (read_raw(s, end, pos, 10, UINT64_MAX, what, &z) < 0) return -1;
    *out = (int64_t)((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
    return 0;
}

/* A length-prefixed byte string inside [pos, end): *len = -1 for null. */
static int read_bytes(const uint8_t *s, Py_ssize_t end, Py_ssize_t *pos, const char *what,
                      const uint8_t **data, int64_t *len) {
    int32_t n;
    Py_ssize_t at = *pos;
    if (read_varint(s, end, pos, what, &n) < 0) return -1;
    if (n < -1) return corrupt(at, "%s %d is negative", what, n);
    if (n == -1) { *len = -1; *data = NULL; return 0; }
    if ((Py_ssize_t)n > end - *pos)
        return corrupt(at, "%s %d exceeds the %zd bytes left in the record", what, n, end - *pos);
    *data = s + *pos;
    *len = n;
    *pos += n;
    return 0;
}

/* Strict UTF-8 as Python decodes it: no overlongs, no surrogates, <= U+10FFFF. */
static int valid_utf8(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        int need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c == 0xE0) { need = 2; lo = 0xA0; }
        else if (c >= 0xE1 && c <= 0xEC) need = 2;
        else if (c == 0xED) { need = 2; hi = 0x9F; }
        else if (c >= 0xEE && c <= 0xEF) need = 2;
        else if (c == 0xF0) { need = 3; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) need = 3;
        else if (c == 0xF4) { need = 3; hi = 0x8F; }
        else return 0;
        if (n - i - 1 < need) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (int k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80) return 0;
        i += need + 1;
    }
    return 1;
}

/* ---- Columns ---- */

static int Columns_init(Columns *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"with_headers", NULL};
    int with_headers = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "p", kwlist, &with_headers)) return -1;
    if (self->initialised) {
        PyErr_SetString(PyExc_RuntimeError, "Columns is already initialised");
        return -1;
    }
    self->with_headers = with_headers;
    self->initialised = 1;
    return 0;
}

static void Columns_dealloc(Columns *self) {
    PyMem_Free(self->offsets.p);
    PyMem_Free(self->timestamps.p);
    PyMem_Free(self->ts_types.p);
    PyMem_Free(self->header_lists.p);
    varcol_free(&self->keys);
    varcol_free(&self->values);
    varcol_free(&self->header_keys);
    varcol_free(&self->header_values);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t Columns_len(Columns *self) { return self->n; }

static PySequenceMethods Columns_as_sequence = {.sq_length = (lenfunc)Columns_len};

static PyObject *Columns_add(Columns *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp, max_timestamp, start, stop;
    int last_offset_delta, log_append_time;
    if (!self->initialised) {
        PyErr_SetString(PyExc_RuntimeError, "Columns.__init__ was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nLLpLiLL:add", &view, &count, &base_offset, &base_timestamp, &log_append_time,
                          &max_timestamp, &last_offset_delta, &start, &stop))
        return NULL;
    const uint8_t *s = view.buf;
    const Py_ssize_t end = view.len;
    /* Where to roll back to on failure. */
    Py_ssize_t n0 = self->n;
    size_t off0 = self->offsets.len, ts0 = self->timestamps.len, tt0 = self->ts_types.len,
           hl0 = self->header_lists.len;
    VarMark km = varcol_mark(&self->keys), vm = varcol_mark(&self->values), hkm = varcol_mark(&self->header_keys),
            hvm = varcol_mark(&self->header_values);
    Py_ssize_t pos = 0;
    int32_t previous = -1;
    int32_t ts_type = log_append_time ? 1 : 0;

    if (count < 0 || count > end / 7) {
        corrupt(0, "batch declares %zd records but its %zd-byte records section cannot hold them", count, end);
        goto fail;
    }
    for (Py_ssize_t r = 0; r < count; r++) {
        Py_ssize_t rec_start = pos;
        int32_t length;
        if (read_varint(s, end, &pos, "record length", &length) < 0) goto fail;
        if (length < 1) { corrupt(rec_start, "record length %d is too small", length); goto fail; }
        if ((Py_ssize_t)length > end - pos) {
            corrupt(rec_start, "record declares %d bytes but only %zd remain", length, end - pos);
            goto fail;
        }
        const Py_ssize_t rend = pos + length;
        pos++; /* attributes: unused by Kafka */
        int64_t ts_delta;
        int32_t off_delta;
        if (read_varlong(s, rend, &pos, "record timestamp delta", &ts_delta) < 0) goto fail;
        if (read_varint(s, rend, &pos, "record offset delta", &off_delta) < 0) goto fail;
        if (!(previous < off_delta && off_delta <= last_offset_delta)) {
            corrupt(rec_start, "record offset delta %d is not between the previous one (%d) and the batch's "
                    "last offset delta %d", off_delta, previous, last_offset_delta);
            goto fail;
        }
        previous = off_delta;
        const uint8_t *key, *value;
        int64_t key_len, value_len;
        if (read_bytes(s, rend, &pos, "record key length", &key, &key_len) < 0) goto fail;
        if (read_bytes(s, rend, &pos, "record value length", &value, &value_len) < 0) goto fail;
        int32_t hcount;
        Py_ssize_t hpos = pos;
        if (read_varint(s, rend, &pos, "record header count", &hcount) < 0) goto fail;
        if (hcount < 0) { corrupt(hpos, "record header count %d is negative", hcount); goto fail; }
        if ((int64_t)hcount * 2 > (int64_t)(rend - pos)) {
            corrupt(hpos, "record header count %d cannot fit in the %zd bytes left", hcount, rend - pos);
            goto fail;
        }
        int64_t offset;
        if (__builtin_add_overflow((int64_t)base_offset, (int64_t)off_delta, &offset)) {
            corrupt(rec_start, "record offset overflows int64");
            goto fail;
        }
        const int keep = start <= offset && offset < stop;
        const int want_headers = keep && self->with_headers;
        for (int32_t h = 0; h < hcount; h++) {
            const uint8_t *hk, *hv;
            int64_t hk_len, hv_len;
            Py_ssize_t at = pos;
            if (read_bytes(s, rend, &pos, "record header key length", &hk, &hk_len) < 0) goto fail;
            if (hk_len < 0) { corrupt(at, "record header key is null"); goto fail; }
            if (!valid_utf8(hk, hk_len)) { corrupt(at, "record header key is not UTF-8"); goto fail; }
            if (read_bytes(s, rend, &pos, "record header value length", &hv, &hv_len) < 0) goto fail;
            if (want_headers && (varcol_add(&self->header_keys, hk, hk_len) < 0 ||
                                 varcol_add(&self->header_values, hv, hv_len) < 0))
                goto fail;
        }
        if (pos != rend) {
            corrupt(rec_start, "record declares %d bytes but its fields take %zd", length,
                    pos - (rend - length));
            goto fail;
        }
        if (!keep) continue;
        int64_t ts;
        if (log_append_time) {
            ts = (int64_t)max_timestamp;
        } else if (__builtin_add_overflow((int64_t)base_timestamp, ts_delta, &ts)) {
            corrupt(rec_start, "record timestamp overflows int64");
            goto fail;
        }
        if (buf_put(&self->offsets, &offset, 8) < 0 || buf_put(&self->timestamps, &ts, 8) < 0 ||
            buf_put(&self->ts_types, &ts_type, 4) < 0 || varcol_add(&self->keys, key, key_len) < 0 ||
            varcol_add(&self->values, value, value_len) < 0)
            goto fail;
        if (self->with_headers) {
            if (self->header_keys.n > INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "more than 2**31 headers in one column; build batches more often");
                goto fail;
            }
            int32_t hl = (int32_t)self->header_keys.n;
            if (offsets_start(&self->header_lists) < 0 || buf_put(&self->header_lists, &hl, 4) < 0) goto fail;
        }
        self->n++;
    }
    if (pos != end) {
        corrupt(pos, "%zd bytes follow the batch's %zd declared records", end - pos, count);
        goto fail;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(self->n - n0);

fail:
    self->n = n0;
    self->offsets.len = off0;
    self->timestamps.len = ts0;
    self->ts_types.len = tt0;
    self->header_lists.len = hl0;
    varcol_rollback(&self->keys, km);
    varcol_rollback(&self->values, vm);
    varcol_rollback(&self->header_keys, hkm);
    varcol_rollback(&self->header_values, hvm);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---- take(): the filled buffers handed over, not copied ---- */

/* A read-only buffer owning memory the columns filled (PyMem_Malloc'd);
 * pyarrow.py_buffer wraps it without a copy, and the memory is freed when
 * the last Arrow array over it goes. */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len;
    size_t cap; /* the block's allocated size: it may go back to the spares */
} Owned;

static void Owned_dealloc(Owned *self) {
    spare_put(self->p, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Owned_getbuffer(Owned *self, Py_buffer *view, int flags) {
    static char empty[8]; /* an empty buffer still points somewhere (Arrow wants a data pointer) */
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : empty, self->len, 1, flags);
}

static PyBufferProcs Owned_as_buffer = {.bf_getbuffer = (getbufferproc)Owned_getbuffer};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kavka.spark._recordcols.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column buffer handed over by Columns.take() (read-only buffer protocol).",
    .tp_dealloc = (destructor)Owned_dealloc,
    .tp_as_buffer = &Owned_as_buffer,
};

/* The buffers one take() hands over: wrappers made first, so that a failed
 * allocation leaves the columns untouched; then every buffer moves. */
#define MAX_TAKEN 16 /* 3 fixed columns, 3 variable ones of 3 buffers, the header lists */
typedef struct {
    Buf *bufs[MAX_TAKEN];
    Owned *owned[MAX_TAKEN];
    int n;
} Taking;

/* Index of b's wrapper, registered for the hand-over (-1 on failure). */
static int taking_add(Taking *t, Buf *b) {
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) return -1;
    o->p = NULL;
    o->len = 0;
    o->cap = 0;
    t->bufs[t->n] = b;
    t->owned[t->n] = o;
    return t->n++;
}

static void taking_abort(Taking *t) {
    for (int i = 0; i < t->n; i++) Py_DECREF(t->owned[i]);
    t->n = 0;
}

/* Moves every registered buffer into its wrapper; the Buf starts empty,
 * reserving its last size on first use (fetches are alike in size). An
 * empty buffer hands over nothing: Arrow gets a zero-length buffer. */
static void taking_commit(Taking *t) {
    for (int i = 0; i < t->n; i++) {
        Buf *b = t->bufs[i];
        Owned *o = t->owned[i];
        if (b->len) {
            o->p = b->p;
            o->len = (Py_ssize_t)b->len;
            o->cap = b->cap;
            b->hint = b->len;
            b->p = NULL;
            b->cap = 0;
        }
        b->len = 0;
    }
}

/* (offsets, data, validity or None, null_count, length) of one column, its
 * wrappers taken from t at *i. An empty column still has its leading 0
 * offset (written now if no entry came). */
typedef struct { int offsets, data, validity; } VarTaking;

static int varcol_taking(Taking *t, VarCol *c, VarTaking *vt) {
    if (offsets_start(&c->offsets) < 0) return -1;
    vt->validity = -1;
    if ((vt->offsets = taking_add(t, &c->offsets)) < 0 || (vt->data = taking_add(t, &c->data)) < 0) return -1;
    if (c->nulls && (vt->validity = taking_add(t, &c->validity)) < 0) return -1;
    return 0;
}

static PyObject *varcol_result(Taking *t, VarCol *c, const VarTaking *vt, Py_ssize_t nulls, Py_ssize_t n) {
    PyObject *validity = vt->validity >= 0 ? (PyObject *)t->owned[vt->validity] : Py_None;
    return Py_BuildValue("(OOOnn)", t->owned[vt->offsets], t->owned[vt->data], validity, nulls, n);
}

static void varcol_clear(VarCol *c) {
    c->n = c->nulls = 0;
    c->data.len = c->validity.len = c->offsets.len = 0;
}

static PyObject *Columns_take(Columns *self, PyObject *Py_UNUSED(ignored)) {
    Taking t = {.n = 0};
    VarTaking keys, values, hkeys, hvalues;
    int offsets, timestamps, ts_types, lists = -1;
    if ((offsets = taking_add(&t, &self->offsets)) < 0 || (timestamps = taking_add(&t, &self->timestamps)) < 0 ||
        (ts_types = taking_add(&t, &self->ts_types)) < 0 || varcol_taking(&t, &self->keys, &keys) < 0 ||
        varcol_taking(&t, &self->values, &values) < 0)
        goto fail;
    if (self->with_headers &&
        (offsets_start(&self->header_lists) < 0 || (lists = taking_add(&t, &self->header_lists)) < 0 ||
         varcol_taking(&t, &self->header_keys, &hkeys) < 0 || varcol_taking(&t, &self->header_values, &hvalues) < 0))
        goto fail;
    /* From here nothing fails before the columns are emptied: the tuples
     * below only reference the wrappers, which then own the memory. */
    Py_ssize_t n = self->n, kn = self->keys.nulls, vn = self->values.nulls;
    Py_ssize_t hkn = self->header_keys.nulls, hkc = self->header_keys.n;
    Py_ssize_t hvn = self->header_values.nulls, hvc = self->header_values.n;
    taking_commit(&t);
    self->n = 0;
    varcol_clear(&self->keys);
    varcol_clear(&self->values);
    varcol_clear(&self->header_keys);
    varcol_clear(&self->header_values);
    PyObject *headers = Py_None;
    Py_INCREF(headers);
    if (lists >= 0) {
        Py_DECREF(headers);
        headers = Py_BuildValue("(ONN)", t.owned[lists], varcol_result(&t, &self->header_keys, &hkeys, hkn, hkc),
                                varcol_result(&t, &self->header_values, &hvalues, hvn, hvc));
    }
    PyObject *out = headers == NULL ? NULL
        : Py_BuildValue("(nOOONNN)", n, t.owned[offsets], t.owned[timestamps], t.owned[ts_types],
                        varcol_result(&t, &self->keys, &keys, kn, n), varcol_result(&t, &self->values, &values, vn, n),
                        headers);
    taking_abort(&t); /* the tuples hold their own references now */
    return out;

fail:
    taking_abort(&t);
    return NULL;
}

static PyMethodDef Columns_methods[] = {
    {"add", (PyCFunction)Columns_add, METH_VARARGS,
     "add(section, count, base_offset, base_timestamp, log_append_time, max_timestamp, last_offset_delta, "
     "start, end) -> records kept\n\nDecode the `count` records of an uncompressed records section and append "
     "those with start <= offset < end. ValueError (columns unchanged) if the bytes do not hold exactly "
     "`count` well-formed records."},
    {"take", (PyCFunction)Columns_take, METH_NOARGS,
     "take() -> (n, offsets, timestamps_ms, ts_types, keys, values, headers) and start over; keys/values are "
     "(int32 offsets, data, validity bitmap or None, null_count, length); headers None or "
     "(int32 list offsets, header keys, header values). Each buffer is handed over, not copied: a read-only "
     "buffer object owning the memory."},
    {NULL}};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kavka.spark._recordcols.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Arrow column buffers (little-endian int64 offsets and millisecond timestamps, int32 timestamp "
              "types, binary keys/values, optional headers) filled from v2 records sections.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Columns_init,
    .tp_dealloc = (destructor)Columns_dealloc,
    .tp_methods = Columns_methods,
    .tp_as_sequence = &Columns_as_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kavka.spark._recordcols",
    .m_doc = "Kafka v2 records sections decoded into Arrow column buffers.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__recordcols(void) {
#if PY_BIG_ENDIAN
    /* Arrow buffers are little-endian; the module copies native integers. */
    PyErr_SetString(PyExc_ImportError, "kavka.spark._recordcols needs a little-endian machine");
    return NULL;
#endif
    if (PyType_Ready(&ColumnsType) < 0 || PyType_Ready(&OwnedType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
