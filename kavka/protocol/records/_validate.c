/* kavka.protocol.records._validate: walk every record of one v2 batch's
 * (decompressed) records section, as Kafka's LogValidator does on the
 * leader, without building a Python object per record.
 *
 * kavka/protocol/records/validation.py owns the contract and the pure-Python
 * fallback (same verdicts, same messages: tests/protocol/records/
 * test_validation_parity.py runs both on random and damaged batches); the
 * storage layer (kavka/storage/log_validator.py) chooses the rules.
 *
 * Record layout (protocol guide, "Record"; zigzag varints <= 5 bytes, raw
 * value <= UINT32_MAX; varlong <= 10 bytes, raw <= UINT64_MAX):
 *   length varint | attributes int8 | timestampDelta varlong |
 *   offsetDelta varint | keyLength varint (-1 null) | key |
 *   valueLength varint (-1 null) | value | headerCount varint |
 *   headers: [keyLength varint, key utf8, valueLength varint (-1 null), value]
 *
 * walk_records(section, count, base_offset, base_timestamp, has_fixed_ts,
 *              fixed_ts, key_message, ts_mode, ts_lo, ts_hi, ts_message,
 *              max_errors)
 *   -> (max_timestamp, offset_delta_of_max, n_errors, errors)
 *
 * Structure (the first fault stops the walk): no length runs past its record
 * or the section, every record's length equals what its fields take, offset
 * deltas are exactly 0..count-1, exactly `count` records fill the section,
 * header keys are non-null strict UTF-8. A fault answers (-1, -1, -1,
 * [(index, 87, message)]), index -1 for a batch-level one.
 *
 * Rules (every record checked, as Kafka collects a RecordError per record):
 * key_message (a str, or None) -> a null key is INVALID_RECORD (87) with it;
 * ts_mode 1 -> a timestamp other than -1 outside [ts_lo, ts_hi] is
 * INVALID_TIMESTAMP (32) with Kafka's wording; ts_mode 2 -> every record is
 * INVALID_TIMESTAMP with ts_message. At most max_errors are listed; n_errors
 * counts them all. With none: (max, delta, 0, None).
 *
 * A record's timestamp is fixed_ts when has_fixed_ts (LogAppendTime batches:
 * the batch's max timestamp), else base_timestamp + delta wrapping as Java's
 * long does. The max starts at -1 (NO_TIMESTAMP) with delta -1.
 *
 * Each record is read by fast_record (unrolled varints over pointers,
 * accept or bail out); one it refuses is read again by careful_record,
 * which names the fault. No allocation on the way through valid records;
 * the GIL is kept: the walk runs under the log's lock on the broker's event
 * loop thread (~6 ns a record; bench/validation.py), shorter than the
 * CRC32C and the write around it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define INVALID_RECORD 87
#define INVALID_TIMESTAMP 32
#define MIN_RECORD_BODY 6 /* attributes + five one-byte varints */

typedef struct {
    Py_ssize_t index;
    char msg[240];
} Fault;

static int fault(Fault *f, Py_ssize_t index, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyOS_vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    f->index = index;
    return -1;
}

/* Unsigned base-128 run of at most max_bytes inside [*pos, lim), value <= limit. */
static int read_raw(const uint8_t *s, Py_ssize_t lim, Py_ssize_t *pos, int max_bytes, uint64_t limit,
                    const char *what, const char *where, Fault *f, Py_ssize_t index, uint64_t *out) {
    Py_ssize_t start = *pos, p = *pos;
    uint64_t result = 0;
    int shift = 0;
    const int bits = max_bytes == 5 ? 32 : 64;
    for (;;) {
        if (p - start >= max_bytes) return fault(f, index, "%s is longer than %d bytes", what, max_bytes);
        if (p >= lim) return fault(f, index, "%s runs past the end of the %s", what, where);
        uint8_t b = s[p++];
        uint64_t part = (uint64_t)(b & 0x7F);
        if (shift == 63 && part > 1) return fault(f, index, "%s does not fit in %d bits", what, bits);
        result |= part << shift;
        if (b < 0x80) break;
        shift += 7;
    }
    if (result > limit) return fault(f, index, "%s does not fit in %d bits", what, bits);
    *pos = p;
    *out = result;
    return 0;
}

static inline int read_varint(const uint8_t *s, Py_ssize_t lim, Py_ssize_t *pos, const char *what,
                              const char *where, Fault *f, Py_ssize_t index, int32_t *out) {
    Py_ssize_t p = *pos;
    if (p < lim && s[p] < 0x80) {
        uint8_t b = s[p];
        *out = (int32_t)(b >> 1) ^ -(int32_t)(b & 1);
        *pos = p + 1;
        return 0;
    }
    if (p + 1 < lim && s[p + 1] < 0x80) {
        uint32_t z = (uint32_t)(s[p] & 0x7F) | ((uint32_t)s[p + 1] << 7);
        *out = (int32_t)((z >> 1) ^ (uint32_t)-(int32_t)(z & 1));
        *pos = p + 2;
        return 0;
    }
    uint64_t raw;
    if (read_raw(s, lim, pos, 5, UINT32_MAX, what, where, f, index, &raw) < 0) return -1;
    uint32_t z = (uint32_t)raw;
    *out = (int32_t)((z >> 1) ^ (uint32_t)-(int32_t)(z & 1));
    return 0;
}

static inline int read_varlong(const uint8_t *s, Py_ssize_t lim, Py_ssize_t *pos, const char *what,
                               Fault *f, Py_ssize_t index, int64_t *out) {
    Py_ssize_t p = *pos;
    if (p < lim && s[p] < 0x80) {
        uint8_t b = s[p];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pos = p + 1;
        return 0;
    }
    uint64_t z;
    if (read_raw(s, lim, pos, 10, UINT64_MAX, what, "record", f, index, &z) < 0) return -1;
    *out = (int64_t)((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
    return 0;
}

/* A length-prefixed field inside [*pos, rend): *len = -1 for null. */
static inline int skip_bytes(const uint8_t *s, Py_ssize_t rend, Py_ssize_t *pos, const char *what, Fault *f,
                             Py_ssize_t index, int32_t *len) {
    int32_t n;
    if (read_varint(s, rend, pos, what, "record", f, index, &n) < 0) return -1;
    if (n < -1) return fault(f, index, "%s %d is negative", what, n);
    if (n > 0) {
        if ((Py_ssize_t)n > rend - *pos)
            return fault(f, index, "%s %d exceeds the %zd bytes left in the record", what, n, rend - *pos);
        *pos += n;
    }
    *len = n;
    return 0;
}

/* Strict UTF-8 as Python decodes it: no overlongs, no surrogates, <= U+10FFFF. */
static int valid_utf8(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
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

/* Append (index, code, message) to *errors (created on first use). Steals nothing. */
static int add_error(PyObject **errors, Py_ssize_t index, int code, PyObject *message) {
    if (*errors == NULL && (*errors = PyList_New(0)) == NULL) return -1;
    PyObject *item = Py_BuildValue("(niO)", index, code, message);
    if (item == NULL) return -1;
    int rc = PyList_Append(*errors, item);
    Py_DECREF(item);
    return rc;
}

/* ---- the fast path: accept a well-formed record or bail out ----------------
 * Every record goes through fast_record first: unrolled varints over
 * pointers, no message formatting. Anything it does not accept goes to
 * careful_record, which re-reads that record with the checks above and names
 * the fault. fast_record accepts exactly what careful_record accepts (the
 * parity tests against the Python walk cover both). */

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Zigzag varint (<= 5 bytes, raw <= UINT32_MAX) in [p, lim); NULL when not. */
static inline const uint8_t *fast_varint(const uint8_t *p, const uint8_t *lim, int32_t *out) {
    uint32_t r, b;
    if (LIKELY(lim - p >= 5)) {
        b = p[0]; r = b & 0x7F; if (b < 0x80) { p += 1; goto done; }
        b = p[1]; r |= (b & 0x7F) << 7; if (b < 0x80) { p += 2; goto done; }
        b = p[2]; r |= (b & 0x7F) << 14; if (b < 0x80) { p += 3; goto done; }
        b = p[3]; r |= (b & 0x7F) << 21; if (b < 0x80) { p += 4; goto done; }
        b = p[4]; if (b > 0x0F) return NULL; /* a continuation, or past 32 bits */
        r |= b << 28; p += 5;
    } else {
        r = 0;
        for (int shift = 0;; shift += 7) {
            if (p >= lim || shift > 28) return NULL;
            b = *p++;
            if (shift == 28 && b > 0x0F) return NULL;
            r |= (b & 0x7F) << shift;
            if (b < 0x80) break;
        }
    }
done:
    *out = (int32_t)((r >> 1) ^ (uint32_t)-(int32_t)(r & 1));
    return p;
}

/* Zigzag varlong (<= 10 bytes, raw <= UINT64_MAX) in [p, lim); NULL when not. */
static inline const uint8_t *fast_varlong(const uint8_t *p, const uint8_t *lim, int64_t *out) {
    uint64_t r, b;
    if (LIKELY(lim - p >= 2)) {
        b = p[0]; r = b & 0x7F; if (b < 0x80) { p += 1; goto done; }
        b = p[1]; r |= (b & 0x7F) << 7; if (b < 0x80) { p += 2; goto done; }
    }
    r = 0; /* the general case, from the first byte */
    for (int shift = 0;; shift += 7) {
        if (p >= lim || shift > 63) return NULL;
        b = *p++;
        if (shift == 63 && b > 1) return NULL; /* a continuation, or past 64 bits */
        r |= (b & 0x7F) << shift;
        if (b < 0x80) break;
    }
done:
    *out = (int64_t)((r >> 1) ^ (uint64_t)-(int64_t)(r & 1));
    return p;
}

/* One record at p (p < end), whose offset delta must be `delta`: the byte
 * after it, its key length and timestamp delta; NULL when it is not
 * well-formed. */
static inline const uint8_t *fast_record(const uint8_t *p, const uint8_t *end, int32_t delta, int32_t *key_len,
                                         int64_t *ts_delta) {
    int32_t length, off, kl, vl, hc;
    if (!(p = fast_varint(p, end, &length)) || length < MIN_RECORD_BODY || length > end - p) return NULL;
    const uint8_t *rend = p + length;
    p++; /* attributes */
    if (!(p = fast_varlong(p, rend, ts_delta))) return NULL;
    if (!(p = fast_varint(p, rend, &off)) || off != delta) return NULL;
    if (!(p = fast_varint(p, rend, &kl)) || kl < -1 || kl > rend - p) return NULL;
    if (kl > 0) p += kl;
    if (!(p = fast_varint(p, rend, &vl)) || vl < -1 || vl > rend - p) return NULL;
    if (vl > 0) p += vl;
    if (!(p = fast_varint(p, rend, &hc)) || hc < 0) return NULL;
    if (hc) {
        if ((int64_t)hc * 2 > rend - p) return NULL;
        for (int32_t h = 0; h < hc; h++) {
            int32_t hk, hv;
            if (!(p = fast_varint(p, rend, &hk)) || hk < 0 || hk > rend - p || !valid_utf8(p, hk)) return NULL;
            p += hk;
            if (!(p = fast_varint(p, rend, &hv)) || hv < -1 || hv > rend - p) return NULL;
            if (hv > 0) p += hv;
        }
    }
    if (p != rend) return NULL;
    *key_len = kl;
    return p;
}

/* ---- the careful path: name what is wrong with record i at *pos ---------- */

static int careful_record(const uint8_t *s, Py_ssize_t end, Py_ssize_t pos, Py_ssize_t i, Py_ssize_t count,
                          Fault *f) {
    int32_t length = 0, off_delta = 0, key_len = 0, value_len = 0, hcount = 0;
    int64_t ts_delta;
    if (read_varint(s, end, &pos, "record length", "records section", f, i, &length) < 0) return -1;
    if (length < MIN_RECORD_BODY)
        return fault(f, i, "record length %d is smaller than the %d bytes of a record's fixed fields", length,
                     MIN_RECORD_BODY);
    if ((Py_ssize_t)length > end - pos)
        return fault(f, i, "record length %d exceeds the %zd bytes left in the records section", length, end - pos);
    const Py_ssize_t rend = pos + length;
    pos++; /* attributes: unused in v2 (Kafka ignores them) */
    if (read_varlong(s, rend, &pos, "record timestamp delta", f, i, &ts_delta) < 0) return -1;
    if (read_varint(s, rend, &pos, "record offset delta", "record", f, i, &off_delta) < 0) return -1;
    if ((Py_ssize_t)off_delta != i)
        return fault(f, i, "record offset delta %d should be %zd: a producer's batch numbers its records 0 to %zd",
                     off_delta, i, count - 1);
    if (skip_bytes(s, rend, &pos, "record key length", f, i, &key_len) < 0) return -1;
    if (skip_bytes(s, rend, &pos, "record value length", f, i, &value_len) < 0) return -1;
    if (read_varint(s, rend, &pos, "record header count", "record", f, i, &hcount) < 0) return -1;
    if (hcount != 0) {
        if (hcount < 0) return fault(f, i, "record header count %d is negative", hcount);
        /* Each header takes at least two bytes (two one-byte lengths). */
        if ((int64_t)hcount * 2 > (int64_t)(rend - pos))
            return fault(f, i, "record header count %d cannot fit in the %zd bytes left in the record", hcount,
                         rend - pos);
        for (int32_t h = 0; h < hcount; h++) {
            int32_t hk, hv;
            if (read_varint(s, rend, &pos, "record header key length", "record", f, i, &hk) < 0) return -1;
            if (hk < 0) {
                if (hk == -1) return fault(f, i, "record header key is null");
                return fault(f, i, "record header key length %d is negative", hk);
            }
            if ((Py_ssize_t)hk > rend - pos)
                return fault(f, i, "record header key length %d exceeds the %zd bytes left in the record", hk,
                             rend - pos);
            if (!valid_utf8(s + pos, hk)) return fault(f, i, "record header key is not valid UTF-8");
            pos += hk;
            if (skip_bytes(s, rend, &pos, "record header value length", f, i, &hv) < 0) return -1;
        }
    }
    if (pos != rend)
        return fault(f, i, "record length %d does not match the %zd bytes its fields take", length,
                     pos - (rend - length));
    /* The fast path refused what this path accepts: a bug, said as such. */
    return fault(f, i, "record refused by the fast path of kavka.protocol.records._validate (a bug)");
}

static PyObject *walk_records(PyObject *module, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count, max_errors;
    long long base_offset, base_timestamp, fixed_ts, ts_lo, ts_hi;
    int has_fixed_ts, ts_mode;
    PyObject *key_message, *ts_message;
    if (!PyArg_ParseTuple(args, "y*nLLpLOiLLOn:walk_records", &view, &count, &base_offset, &base_timestamp,
                          &has_fixed_ts, &fixed_ts, &key_message, &ts_mode, &ts_lo, &ts_hi, &ts_message,
                          &max_errors))
        return NULL;
    PyObject *errors = NULL, *result = NULL;
    if ((key_message != Py_None && !PyUnicode_Check(key_message)) ||
        (ts_message != Py_None && !PyUnicode_Check(ts_message))) {
        PyErr_SetString(PyExc_TypeError, "key_message and ts_message must be str or None");
        goto done;
    }
    if (ts_mode < 0 || ts_mode > 2 || (ts_mode == 2 && ts_message == Py_None)) {
        PyErr_Format(PyExc_ValueError, "ts_mode %d needs 0, 1, or 2 with a ts_message", ts_mode);
        goto done;
    }
    const int check_keys = key_message != Py_None;
    const uint8_t *s = view.buf;
    const uint8_t *const end = s + view.len;
    const uint8_t *p = s;
    Py_ssize_t n_errors = 0;
    int64_t max_ts = -1;
    Py_ssize_t max_delta = -1;
    Fault f;

    for (Py_ssize_t i = 0; i < count; i++) {
        if (UNLIKELY(p >= end)) {
            fault(&f, i, "the records section ends after %zd of the %zd records the batch declares", i, count);
            goto structural;
        }
        int32_t key_len;
        int64_t ts_delta;
        const uint8_t *next = i <= INT32_MAX ? fast_record(p, end, (int32_t)i, &key_len, &ts_delta) : NULL;
        if (UNLIKELY(next == NULL)) {
            careful_record(s, view.len, p - s, i, count, &f);
            goto structural;
        }
        p = next;
        const int64_t ts =
            has_fixed_ts ? (int64_t)fixed_ts : (int64_t)((uint64_t)base_timestamp + (uint64_t)ts_delta);
        if (ts > max_ts) {
            max_ts = ts;
            max_delta = i;
        }
        /* Kafka's validateRecord: the key first, then the timestamp; one error per record. */
        if (check_keys && key_len == -1) {
            if (n_errors++ < max_errors && add_error(&errors, i, INVALID_RECORD, key_message) < 0) goto done;
        } else if (ts_mode == 1 && ts != -1 && (ts < ts_lo || ts > ts_hi)) {
            if (n_errors++ < max_errors) {
                int64_t offset = (int64_t)((uint64_t)base_offset + (uint64_t)i);
                PyObject *msg = PyUnicode_FromFormat(
                    "Timestamp %lld of message with offset %lld is out of range. The timestamp should be within "
                    "[%lld, %lld]", (long long)ts, (long long)offset, ts_lo, ts_hi);
                if (msg == NULL) goto done;
                int rc = add_error(&errors, i, INVALID_TIMESTAMP, msg);
                Py_DECREF(msg);
                if (rc < 0) goto done;
            }
        } else if (ts_mode == 2) {
            if (n_errors++ < max_errors && add_error(&errors, i, INVALID_TIMESTAMP, ts_message) < 0) goto done;
        }
    }
    if (p != end) {
        fault(&f, -1, "%zd bytes follow the batch's %zd records", (Py_ssize_t)(end - p), count);
        goto structural;
    }
    if (errors == NULL) {
        Py_INCREF(Py_None);
        errors = Py_None;
    }
    result = Py_BuildValue("(LnnO)", (long long)max_ts, max_delta, n_errors, errors);
    goto done;

structural:
    Py_CLEAR(errors);
    {
        PyObject *msg = PyUnicode_FromString(f.msg);
        if (msg == NULL) goto done;
        result = Py_BuildValue("(iii[(niN)])", -1, -1, -1, f.index, INVALID_RECORD, msg);
    }

done:
    Py_XDECREF(errors);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(section, count, base_offset, base_timestamp, has_fixed_ts, fixed_ts, key_message, ts_mode, "
     "ts_lo, ts_hi, ts_message, max_errors) -> (max_timestamp, offset_delta_of_max, n_errors, errors); see "
     "kavka.protocol.records.validation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kavka.protocol.records._validate",
    "Record walk of Kafka's LogValidator (magic v2) in C; see kavka.protocol.records.validation.", -1, methods,
};

PyMODINIT_FUNC PyInit__validate(void) { return PyModule_Create(&module); }
