/* Columnar decoding of serialized tf.train.Example records, without building messages.
 *
 * Two passes over the same records with the same parser: `scan` counts, per parsing spec, the
 * values and bytes a batch holds (so the caller can allocate the output arrays once), `fill`
 * writes the values into those arrays. Both release the GIL.
 *
 * The parser accepts and rejects exactly what protobuf's parser (upb) does for Example:
 * unknown fields of any valid wire type (groups included) are skipped; repeated message fields
 * merge (parsing their concatenation); a oneof keeps its last case, and consecutive
 * occurrences of the same case merge; packed and unpacked encodings of repeated scalars mix;
 * a map keeps the last entry of a key; a map key must be valid UTF-8 (proto3 string). A map
 * entry holding any field other than its key and value is refused (protobuf drops such an
 * entry from the map, TensorFlow rejects the record).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_constants.h"

enum { KIND_NONE = 0, KIND_BYTES = 1, KIND_FLOAT = 2, KIND_INT64 = 3 };
enum { MODE_SCAN = 0, MODE_FILL = 1 };
#define MAX_DEPTH 99 /* upb's limit: 100 levels of nesting, messages and groups alike */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Span;

typedef struct {
    const char *key;
    Py_ssize_t key_len;
    int kind;          /* KIND_BYTES / KIND_FLOAT / KIND_INT64 */
    Py_ssize_t count;  /* values per record when fixed, -1 when variable */
    int has_default;
    /* scan results */
    int64_t total_values;
    int64_t total_bytes;
    /* fill outputs (borrowed buffers) */
    char *values;        /* int64 / float32 values, or the bytes of bytes values */
    int64_t *row_counts; /* values per record */
    int64_t *value_lens; /* bytes: the length of every value */
    uint8_t *missing;    /* per record: 1 when the key was absent */
    int64_t values_cap, lens_cap; /* bytes in `values`, entries in `value_lens` */
    int64_t value_pos, byte_pos;
} Spec;

typedef struct {
    int record;
    int spec;
    char message[200];
} Error;

/* ---------------------------------------------------------------- wire primitives */

static inline int read_varint(Span *s, uint64_t *out) {
    if (s->p < s->end && !(*s->p & 0x80)) { /* the common case: one byte */
        *out = *s->p++;
        return 1;
    }
    uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (s->p >= s->end) return 0;
        uint8_t byte = *s->p++;
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 1;
        }
    }
    return 0;
}

/* A tag, as protobuf and TensorFlow both read it: a minimal varint (TensorFlow's parser
 * matches known tags byte for byte, so a padded one means something else to it) of at most
 * 32 bits. */
static inline int read_tag_varint(Span *s, uint64_t *out) {
    const uint8_t *start = s->p;
    if (!read_varint(s, out) || *out > 0xFFFFFFFFu) return 0;
    Py_ssize_t used = s->p - start;
    /* a longer varint must not end in a zero, nor run past 5 bytes (32 bits) */
    return used == 1 || (used <= 5 && start[used - 1] != 0);
}

/* A length: at most 5 bytes (protobuf's limit), at most 2 GiB. */
static inline int read_size(Span *s, uint64_t *out) {
    const uint8_t *start = s->p;
    if (!read_varint(s, out)) return 0;
    return s->p - start <= 5 && *out <= 0x7FFFFFFF;
}

static int skip_field(Span *s, uint32_t wire, uint32_t field, int depth);

/* Skips the rest of a group opened with `field`; 0 on malformed input. */
static int skip_group(Span *s, uint32_t field, int depth) {
    if (depth > MAX_DEPTH) return 0;
    while (s->p < s->end) {
        uint64_t tag;
        if (!read_tag_varint(s, &tag)) return 0;
        uint32_t wire = (uint32_t)tag & 7, number = (uint32_t)(tag >> 3);
        if (number == 0) return 0;
        if (wire == 4) return number == field;
        if (!skip_field(s, wire, number, depth + 1)) return 0;
    }
    return 0;
}

static int skip_field(Span *s, uint32_t wire, uint32_t field, int depth) {
    uint64_t n;
    switch (wire) {
    case 0: return read_varint(s, &n);
    case 1:
        if (s->end - s->p < 8) return 0;
        s->p += 8;
        return 1;
    case 2:
        if (!read_size(s, &n) || n > (uint64_t)(s->end - s->p)) return 0;
        s->p += n;
        return 1;
    case 3: return skip_group(s, field, depth);
    case 5:
        if (s->end - s->p < 4) return 0;
        s->p += 4;
        return 1;
    default: return 0; /* 4 (an unmatched end group), 6, 7 */
    }
}

/* Reads a tag; returns 0 at a clean end, -1 on malformed input, 1 with a tag. */
static inline int read_tag(Span *s, uint32_t *number, uint32_t *wire) {
    if (s->p >= s->end) return 0;
    uint64_t tag;
    if (!read_tag_varint(s, &tag)) return -1;
    *wire = (uint32_t)tag & 7;
    *number = (uint32_t)(tag >> 3);
    if (*number == 0 || *number > 536870911u) return -1;
    return 1;
}

static inline int read_length(Span *s, Span *inner) {
    uint64_t n;
    if (!read_size(s, &n) || n > (uint64_t)(s->end - s->p)) return 0;
    inner->p = s->p;
    inner->end = s->p + n;
    s->p += n;
    return 1;
}

static int valid_utf8(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        uint8_t c = *p;
        if (c < 0x80) { p++; continue; }
        int n;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return 0;
        if (end - p <= n) return 0;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        p += n + 1;
    }
    return 1;
}

/* ---------------------------------------------------------------- one record */

/* Where a key's Feature lies: up to MAX_SEGMENTS serialized pieces, parsed as their
 * concatenation (a map entry's value field may repeat: the pieces merge). */
#define MAX_SEGMENTS 8
typedef struct {
    int found;
    int segments;
    int overflow; /* more pieces than we keep: fall back to an error the caller can retry */
    Span piece[MAX_SEGMENTS];
} Located;

/* A Feature's list: the last run of one oneof case, as a list of list-message spans. */
#define MAX_RUN 16
typedef struct {
    int kind;
    int pieces;
    Span piece[MAX_RUN];
} Run;

static int walk_values(const Run *run, Spec *spec, int mode, int64_t *count, int64_t *bytes,
                       Error *err);

static int collect_run(const Located *where, Run *run, Error *err) {
    run->kind = KIND_NONE;
    run->pieces = 0;
    for (int i = 0; i < where->segments; i++) {
        Span s = where->piece[i];
        uint32_t number, wire;
        int r;
        while ((r = read_tag(&s, &number, &wire)) == 1) {
            if (number >= 1 && number <= 3 && wire == 2) {
                Span list;
                if (!read_length(&s, &list)) goto bad;
                int kind = (int)number; /* 1 bytes, 2 float, 3 int64 */
                if (run->pieces) {
                    /* protobuf merges a repeated list or keeps the last kind; TensorFlow
                     * reads the first or rejects: no one answer, so refuse it */
                    snprintf(err->message, sizeof err->message,
                             "a Feature holds more than one value list "
                             "(TensorFlow reads such a record otherwise than protobuf)");
                    return 0;
                }
                run->kind = kind;
                if (run->pieces == MAX_RUN) {
                    snprintf(err->message, sizeof err->message,
                             "a feature list split in more than %d pieces", MAX_RUN);
                    return 0;
                }
                run->piece[run->pieces++] = list;
            } else if (run->pieces && number > 3) {
                /* after its list, TensorFlow ignores the rest of a Feature and protobuf skips
                 * an unknown field: both read the list alone */
                if (!skip_field(&s, wire, number, 0)) goto bad;
            } else {
                /* another field before the list, or a list of another wire type: TensorFlow
                 * rejects some of these and reads others otherwise than protobuf */
                snprintf(err->message, sizeof err->message,
                         "a Feature holds a field other than its value list "
                         "(TensorFlow rejects or misreads such a record)");
                return 0;
            }
        }
        if (r < 0) goto bad;
    }
    return 1;
bad:
    snprintf(err->message, sizeof err->message, "not a valid tf.train.Example (a Feature)");
    return 0;
}

/* Counts (and, in fill mode, writes) the values of a run. The list messages are validated in
 * both modes, so scan and fill agree on everything. */
static int walk_values(const Run *run, Spec *spec, int mode, int64_t *count, int64_t *bytes,
                       Error *err) {
    int64_t n = 0, b = 0;
    for (int i = 0; i < run->pieces; i++) {
        Span s = run->piece[i];
        uint32_t number, wire;
        int r, fields = 0, packed = 0;
        while ((r = read_tag(&s, &number, &wire)) == 1) {
            /* TensorFlow rejects (or misreads) a list with another field, or a packed run
             * beside other values: only a list both parsers read alike is accepted. After a
             * packed run that opens the list, TensorFlow ignores the rest of it and protobuf
             * skips unknown fields: both read the run alone. */
            fields++;
            if (number != 1) {
                if (packed == 1 && fields > 1 && number > 1) {
                    if (!skip_field(&s, wire, number, 0)) goto bad;
                    continue;
                }
                goto other;
            }
            if (run->kind != KIND_BYTES && wire == 2) packed++;
            if (packed && fields > 1) goto other;
            if (run->kind == KIND_BYTES && wire == 2) {
                Span v;
                if (!read_length(&s, &v)) goto bad;
                Py_ssize_t len = v.end - v.p;
                if (mode == MODE_FILL) {
                    if (spec->byte_pos + b + len > spec->values_cap ||
                        spec->value_pos + n >= spec->lens_cap) goto full;
                    memcpy(spec->values + spec->byte_pos + b, v.p, (size_t)len);
                    spec->value_lens[spec->value_pos + n] = len;
                }
                n++;
                b += len;
            } else if (run->kind == KIND_FLOAT && wire == 2) {
                Span v;
                if (!read_length(&s, &v) || (v.end - v.p) % 4) goto bad;
                int64_t m = (v.end - v.p) / 4;
                if (mode == MODE_FILL) {
                    if (4 * (spec->value_pos + n + m) > spec->values_cap) goto full;
                    memcpy(spec->values + 4 * (spec->value_pos + n), v.p, (size_t)(4 * m));
                }
                n += m;
            } else if (run->kind == KIND_FLOAT && wire == 5) {
                if (s.end - s.p < 4) goto bad;
                if (mode == MODE_FILL) {
                    if (4 * (spec->value_pos + n + 1) > spec->values_cap) goto full;
                    memcpy(spec->values + 4 * (spec->value_pos + n), s.p, 4);
                }
                s.p += 4;
                n++;
            } else if (run->kind == KIND_INT64 && wire == 2) {
                Span v;
                if (!read_length(&s, &v)) goto bad;
                while (v.p < v.end) {
                    uint64_t x;
                    if (!read_varint(&v, &x)) goto bad;
                    if (mode == MODE_FILL) {
                        if (8 * (spec->value_pos + n + 1) > spec->values_cap) goto full;
                        int64_t sx = (int64_t)x;
                        memcpy(spec->values + 8 * (spec->value_pos + n), &sx, 8);
                    }
                    n++;
                }
            } else if (run->kind == KIND_INT64 && wire == 0) {
                uint64_t x;
                if (!read_varint(&s, &x)) goto bad;
                if (mode == MODE_FILL) {
                    if (8 * (spec->value_pos + n + 1) > spec->values_cap) goto full;
                    int64_t sx = (int64_t)x;
                    memcpy(spec->values + 8 * (spec->value_pos + n), &sx, 8);
                }
                n++;
            } else {
                goto other; /* a value of another wire type */
            }
        }
        if (r < 0) goto bad;
    }
    *count = n;
    *bytes = b;
    return 1;
other:
    snprintf(err->message, sizeof err->message,
             "a value list holds another field, a value of another wire type, or a packed "
             "run beside other values (TensorFlow rejects or misreads such a record)");
    return 0;
bad:
    snprintf(err->message, sizeof err->message, "not a valid tf.train.Example (a value list)");
    return 0;
full:
    snprintf(err->message, sizeof err->message, "an output buffer is too small");
    return 0;
}

static const char *kind_name(int kind) {
    switch (kind) {
    case KIND_BYTES: return "string";
    case KIND_FLOAT: return "float32";
    case KIND_INT64: return "int64";
    default: return "none";
    }
}

/* Spec lookup by key: open addressing over FNV-1a hashes, built once per call. */
typedef struct {
    const Spec *specs;
    int *slot; /* spec index + 1, or 0 */
    uint32_t mask;
    int strict; /* a key no spec names is an error (records someone else wrote, read by a
                 * schema inferred from a sample) */
} Table;

static uint32_t fnv1a(const uint8_t *p, Py_ssize_t n) {
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static int table_init(Table *t, const Spec *specs, int nspecs) {
    uint32_t size = 4;
    while (size < 2u * (uint32_t)nspecs) size <<= 1;
    t->slot = PyMem_RawCalloc(size, sizeof(int));
    if (t->slot == NULL) return 0;
    t->specs = specs;
    t->mask = size - 1;
    for (int k = 0; k < nspecs; k++) {
        uint32_t h = fnv1a((const uint8_t *)specs[k].key, specs[k].key_len) & t->mask;
        while (t->slot[h]) h = (h + 1) & t->mask;
        t->slot[h] = k + 1;
    }
    return 1;
}

/* Feature names are short: a loop here beats a call to memcmp. */
static inline int same_bytes(const char *a, const uint8_t *b, Py_ssize_t len) {
    for (Py_ssize_t i = 0; i < len; i++)
        if ((uint8_t)a[i] != b[i]) return 0;
    return 1;
}

static int find_spec(const Table *t, const uint8_t *key, Py_ssize_t len) {
    uint32_t h = fnv1a(key, len) & t->mask;
    while (t->slot[h]) {
        const Spec *spec = &t->specs[t->slot[h] - 1];
        if (spec->key_len == len && same_bytes(spec->key, key, len))
            return t->slot[h] - 1;
        h = (h + 1) & t->mask;
    }
    return -1;
}

static int validate(const Located *value, Error *err) {
    Run run;
    int64_t n, b;
    return collect_run(value, &run, err) && walk_values(&run, NULL, MODE_SCAN, &n, &b, err);
}

/* Finds every spec's last map entry in one record; validates the whole record. */
/* `trusted`: the record passed a scan already (fill mode), so values need no second check. */
static int locate(Span record, const Table *table, int nspecs, int trusted, Located *where,
                  Error *err) {
    for (int k = 0; k < nspecs; k++) where[k].found = 0;
    Span ex = record;
    uint32_t number, wire;
    int r;
    while ((r = read_tag(&ex, &number, &wire)) == 1) {
        if (!(number == 1 && wire == 2)) {
            if (!skip_field(&ex, wire, number, 0)) goto bad;
            continue;
        }
        Span features;
        if (!read_length(&ex, &features)) goto bad;
        uint32_t fn, fw;
        int fr;
        while ((fr = read_tag(&features, &fn, &fw)) == 1) {
            if (fn == 1 && fw != 2) {
                /* protobuf keeps it as an unknown field: a feature would be lost silently */
                snprintf(err->message, sizeof err->message,
                         "a Features map entry holds fields a map entry cannot have "
                         "(TensorFlow rejects such a record)");
                return 0;
            }
            if (fn != 1) {
                /* protobuf skips it; TensorFlow rejects the record */
                snprintf(err->message, sizeof err->message,
                         "a Features message holds a field other than its map "
                         "(TensorFlow rejects such a record)");
                return 0;
            }
            Span entry;
            if (!read_length(&features, &entry)) goto bad;
            Span key = {NULL, NULL};
            Located value; /* only the pieces in use are ever read */
            value.found = 0;
            value.segments = 0;
            value.overflow = 0;
            uint32_t en, ew;
            int er;
            while ((er = read_tag(&entry, &en, &ew)) == 1) {
                if ((en == 1 && key.p != NULL) || (en == 2 && value.segments)) {
                    /* protobuf keeps the last key or merges the values; TensorFlow rejects */
                    snprintf(err->message, sizeof err->message,
                             "a Features map entry gives its %s twice "
                             "(TensorFlow rejects such a record)", en == 1 ? "key" : "value");
                    return 0;
                }
                if (en == 1 && ew == 2) {
                    if (!read_length(&entry, &key)) goto bad;
                } else if (en == 2 && ew == 2) {
                    Span v;
                    if (!read_length(&entry, &v)) goto bad;
                    value.piece[value.segments++] = v;
                } else {
                    snprintf(err->message, sizeof err->message,
                             "a Features map entry holds fields a map entry cannot have "
                             "(TensorFlow rejects such a record)");
                    return 0;
                }
            }
            if (er < 0) goto bad;
            if (key.p == NULL || !value.segments) {
                snprintf(err->message, sizeof err->message,
                         "a Features map entry has no %s (TensorFlow rejects such a record)",
                         key.p == NULL ? "key" : "value");
                return 0;
            }
            if (!valid_utf8(key.p, key.end)) {
                snprintf(err->message, sizeof err->message,
                         "not a valid tf.train.Example (a feature name is not UTF-8)");
                return 0;
            }
            Py_ssize_t key_len = key.p ? key.end - key.p : 0;
            if (value.overflow) {
                snprintf(err->message, sizeof err->message,
                         "a map entry repeats its value more than %d times", MAX_SEGMENTS);
                return 0;
            }
            /* protobuf parses every value, wanted or not: so do we, to refuse what it refuses.
             * A wanted value is checked when it is read (or here, when a later entry of its
             * key replaces it). */
            int k = find_spec(table, key.p, key_len);
            if (k < 0 && table->strict) {
                int shown = key_len > 80 ? 80 : (int)key_len;
                snprintf(err->message, sizeof err->message,
                         "holds key '%.*s%s', which the schema does not describe", shown,
                         (const char *)key.p, shown < key_len ? "..." : "");
                return 0;
            }
            Located *unread = k < 0 ? &value : where[k].found ? &where[k] : NULL;
            if (!trusted && unread != NULL && !validate(unread, err)) return 0;
            if (k >= 0) {
                Located *slot = &where[k];
                slot->found = 1;
                slot->overflow = value.overflow;
                slot->segments = value.segments;
                for (int i = 0; i < value.segments; i++) slot->piece[i] = value.piece[i];
            }
        }
        if (fr < 0) goto bad;
    }
    if (r < 0) goto bad;
    return 1;
bad:
    snprintf(err->message, sizeof err->message, "not a valid tf.train.Example");
    return 0;
}

/* One record: checks every spec's key and counts (scan) or writes (fill) its values. */
static int parse_record(Span record, int index, Spec *specs, int nspecs, const Table *table,
                        int mode, Located *where, Run *runs, int64_t *sizes, int prelocated,
                        Error *err) {
    err->record = index;
    err->spec = -1;
    /* `prelocated` (fill mode): `where[k].found` and `runs` hold what the scan found. */
    if (!prelocated && !locate(record, table, nspecs, mode == MODE_FILL, where, err)) return 0;
    /* Every wanted value well formed first: protobuf refuses a malformed record as a whole.
     * (In fill mode the scan has checked these very records: only the runs are needed.) */
    for (int k = 0; k < nspecs && !prelocated; k++) {
        if (!where[k].found) continue;
        if (mode == MODE_FILL) {
            if (!collect_run(&where[k], &runs[k], err)) return 0;
            continue;
        }
        if (where[k].overflow) {
            snprintf(err->message, sizeof err->message,
                     "a map entry repeats its value more than %d times", MAX_SEGMENTS);
            return 0;
        }
        if (!collect_run(&where[k], &runs[k], err)) return 0;
        if (!walk_values(&runs[k], NULL, MODE_SCAN, &sizes[2 * k], &sizes[2 * k + 1], err))
            return 0;
    }
    for (int k = 0; k < nspecs; k++) {
        Spec *spec = &specs[k];
        err->spec = k;
        int key_len = (int)(spec->key_len > 100 ? 100 : spec->key_len);
        /* A Feature with no list set: TensorFlow reads the key as absent. */
        if (!where[k].found || runs[k].kind == KIND_NONE) {
            if (spec->count >= 0 && !spec->has_default) {
                snprintf(err->message, sizeof err->message,
                         "key '%.*s' is missing from the record", key_len, spec->key);
                return 0;
            }
            if (mode == MODE_FILL) {
                spec->missing[index] = 1;
                spec->row_counts[index] = 0;
            }
            continue;
        }
        int64_t n = 0, b = 0;
        if (mode == MODE_FILL) {
            if (!walk_values(&runs[k], spec, MODE_FILL, &n, &b, err)) return 0;
        } else {
            n = sizes[2 * k];
            b = sizes[2 * k + 1];
        }
        if (runs[k].kind != spec->kind) {
            snprintf(err->message, sizeof err->message,
                     "key '%.*s' holds a %s list; the schema expects %s", key_len, spec->key,
                     kind_name(runs[k].kind), kind_name(spec->kind));
            return 0;
        }
        if (spec->count >= 0 && n != spec->count) {
            snprintf(err->message, sizeof err->message,
                     "key '%.*s' holds %lld value(s); the schema expects %lld", key_len,
                     spec->key, (long long)n, (long long)spec->count);
            return 0;
        }
        if (mode == MODE_SCAN) {
            spec->total_values += n;
            spec->total_bytes += b;
        } else {
            spec->row_counts[index] = n;
            spec->missing[index] = 0;
            spec->value_pos += n;
            spec->byte_pos += b;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- Python glue */

typedef struct {
    Py_ssize_t n;
    const uint8_t **data;
    Py_ssize_t *len;
    PyObject *keep; /* what keeps the bytes alive while the GIL is released */
    Py_buffer view;
    int has_view;
} Records;

static void records_release(Records *r) {
    PyMem_Free(r->data);
    PyMem_Free(r->len);
    if (r->has_view) PyBuffer_Release(&r->view);
    Py_XDECREF(r->keep);
}

/* `records`: a list/tuple of bytes, or (buffer, offsets, lengths) with int64 arrays. */
static int records_get(PyObject *records, Records *out) {
    memset(out, 0, sizeof *out);
    if (PyTuple_Check(records) && PyTuple_GET_SIZE(records) == 3 &&
        PyObject_CheckBuffer(PyTuple_GET_ITEM(records, 0))) {
        Py_buffer offsets, lengths;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 0), &out->view, PyBUF_SIMPLE) < 0)
            return 0;
        out->has_view = 1;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 1), &offsets, PyBUF_SIMPLE) < 0)
            return 0;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 2), &lengths, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&offsets);
            return 0;
        }
        Py_ssize_t n = offsets.len / 8;
        if (lengths.len / 8 != n || offsets.len % 8 || lengths.len % 8) {
            PyBuffer_Release(&offsets);
            PyBuffer_Release(&lengths);
            PyErr_SetString(PyExc_ValueError, "offsets and lengths must be int64 of one size");
            return 0;
        }
        out->n = n;
        out->data = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(n ? n : 1));
        out->len = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
        const int64_t *off = offsets.buf, *len = lengths.buf;
        int ok = out->data && out->len;
        for (Py_ssize_t i = 0; ok && i < n; i++) {
            if (off[i] < 0 || len[i] < 0 || off[i] > out->view.len ||
                len[i] > out->view.len - off[i]) {
                PyErr_Format(PyExc_ValueError, "record %zd lies outside the buffer", i);
                ok = 0;
                break;
            }
            out->data[i] = (const uint8_t *)out->view.buf + off[i];
            out->len[i] = (Py_ssize_t)len[i];
        }
        PyBuffer_Release(&offsets);
        PyBuffer_Release(&lengths);
        if (!ok && !PyErr_Occurred()) PyErr_NoMemory();
        return ok;
    }
    PyObject *seq = PySequence_Fast(records, "records must be a sequence of bytes");
    if (seq == NULL) return 0;
    out->keep = seq; /* the list (or tuple) holds references to every item */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    out->n = n;
    out->data = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(n ? n : 1));
    out->len = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (!out->data || !out->len) {
        PyErr_NoMemory();
        return 0;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyBytes_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "record %zd is %s, not bytes", i,
                         Py_TYPE(items[i])->tp_name);
            return 0;
        }
        out->data[i] = (const uint8_t *)PyBytes_AS_STRING(items[i]);
        out->len[i] = PyBytes_GET_SIZE(items[i]);
    }
    if (!PyList_Check(records) || seq != records) return 1;
    /* A list can change while the GIL is released: work on a private tuple copy. */
    PyObject *copy = PyList_AsTuple(records);
    if (copy == NULL) return 0;
    Py_DECREF(out->keep);
    out->keep = copy;
    return 1;
}

/* specs: a sequence of (key: bytes, kind: int, count: int, has_default: bool). */
static Spec *specs_get(PyObject *arg, int *nspecs) {
    PyObject *seq = PySequence_Fast(arg, "specs must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Spec *specs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Spec));
    if (specs == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        const char *key;
        Py_ssize_t key_len, count;
        int kind, has_default;
        if (!PyArg_ParseTuple(item, "y#inp", &key, &key_len, &kind, &count, &has_default)) {
            PyMem_Free(specs);
            Py_DECREF(seq);
            return NULL;
        }
        specs[k].key = key; /* kept alive by the caller's specs object */
        specs[k].key_len = key_len;
        specs[k].kind = kind;
        specs[k].count = count;
        specs[k].has_default = has_default;
    }
    Py_DECREF(seq);
    *nspecs = (int)n;
    return specs;
}

static PyObject *raise_parse_error(const Error *err) {
    PyObject *args = Py_BuildValue("(iis)", err->record, err->spec, err->message);
    if (args != NULL) {
        PyErr_SetObject(PyExc_ValueError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* What a scan found, kept for the fill of the same records so that it need not locate
 * every key again: per record and spec, whether the key is there and its one value list
 * (records where a list came in several pieces are located again). */
typedef struct {
    const uint8_t *p, *end;
    int32_t kind;  /* KIND_NONE when absent or no list set */
    int32_t found;
} SavedRun;

typedef struct {
    Py_ssize_t n;
    int nspecs;
    uint64_t specs_sig;   /* the specs scanned for: a fill for other specs ignores this */
    const uint8_t **data; /* the records scanned: a fill of other records ignores this */
    Py_ssize_t *len;
    SavedRun *runs;       /* n * nspecs */
    uint8_t *whole;       /* per record: every run saved */
} Saved;

static void saved_free(Saved *saved) {
    if (saved == NULL) return;
    PyMem_RawFree(saved->data);
    PyMem_RawFree(saved->len);
    PyMem_RawFree(saved->runs);
    PyMem_RawFree(saved->whole);
    PyMem_RawFree(saved);
}

/* FNV-1a over every spec's key, kind, count and default flag. */
static uint64_t specs_signature(const Spec *specs, int nspecs) {
    uint64_t h = 14695981039346656037ull;
    for (int k = 0; k < nspecs; k++) {
        int64_t fields[3] = {specs[k].kind, (int64_t)specs[k].count, specs[k].has_default};
        const uint8_t *parts[2] = {(const uint8_t *)specs[k].key, (const uint8_t *)fields};
        Py_ssize_t sizes[2] = {specs[k].key_len, (Py_ssize_t)sizeof fields};
        for (int j = 0; j < 2; j++)
            for (Py_ssize_t i = 0; i < sizes[j]; i++) h = (h ^ parts[j][i]) * 1099511628211ull;
        h = (h ^ 0xFF) * 1099511628211ull; /* a separator: ("ab", "c") differs from ("a", "bc") */
    }
    return h;
}

static Saved *saved_new(const Records *records, const Spec *specs, int nspecs) {
    Saved *saved = PyMem_RawCalloc(1, sizeof(Saved));
    if (saved == NULL) return NULL;
    size_t n = (size_t)(records->n ? records->n : 1);
    saved->n = records->n;
    saved->nspecs = nspecs;
    saved->specs_sig = specs_signature(specs, nspecs);
    saved->data = PyMem_RawMalloc(n * sizeof(uint8_t *));
    saved->len = PyMem_RawMalloc(n * sizeof(Py_ssize_t));
    saved->runs = PyMem_RawCalloc(n * (size_t)(nspecs ? nspecs : 1), sizeof(SavedRun));
    saved->whole = PyMem_RawCalloc(n, 1);
    if (!saved->data || !saved->len || !saved->runs || !saved->whole) {
        saved_free(saved);
        return NULL;
    }
    if (records->n) {
        memcpy(saved->data, records->data, (size_t)records->n * sizeof(uint8_t *));
        memcpy(saved->len, records->len, (size_t)records->n * sizeof(Py_ssize_t));
    }
    return saved;
}

static int saved_matches(const Saved *saved, const Records *records, const Spec *specs,
                         int nspecs) {
    return saved->n == records->n && saved->nspecs == nspecs &&
           saved->specs_sig == specs_signature(specs, nspecs) &&
           (records->n == 0 ||
            (memcmp(saved->data, records->data, (size_t)records->n * sizeof(uint8_t *)) == 0 &&
             memcmp(saved->len, records->len, (size_t)records->n * sizeof(Py_ssize_t)) == 0));
}

static int run_pass(Records *records, Spec *specs, int nspecs, int mode, Saved *saved,
                    int strict, Error *err) {
    size_t slots = (size_t)(nspecs ? nspecs : 1);
    Located *where = PyMem_RawMalloc(sizeof(Located) * slots);
    Run *runs = PyMem_RawMalloc(sizeof(Run) * slots);
    int64_t *sizes = PyMem_RawMalloc(2 * sizeof(int64_t) * slots);
    Table table = {NULL, NULL, 0, strict};
    if (where == NULL || runs == NULL || sizes == NULL || !table_init(&table, specs, nspecs)) {
        PyMem_RawFree(where);
        PyMem_RawFree(runs);
        PyMem_RawFree(sizes);
        snprintf(err->message, sizeof err->message, "out of memory");
        err->record = -1;
        return 0;
    }
    int ok = 1;
    for (Py_ssize_t i = 0; i < records->n && ok; i++) {
        Span record = {records->data[i], records->data[i] + records->len[i]};
        SavedRun *kept = saved ? &saved->runs[i * nspecs] : NULL;
        int prelocated = mode == MODE_FILL && saved && saved->whole[i];
        if (prelocated) {
            for (int k = 0; k < nspecs; k++) {
                where[k].found = kept[k].found;
                runs[k].kind = kept[k].kind;
                runs[k].pieces = kept[k].kind != KIND_NONE;
                runs[k].piece[0].p = kept[k].p;
                runs[k].piece[0].end = kept[k].end;
            }
        }
        ok = parse_record(record, (int)i, specs, nspecs, &table, mode, where, runs, sizes,
                          prelocated, err);
        if (ok && mode == MODE_SCAN && saved) {
            int whole = 1;
            for (int k = 0; k < nspecs; k++) {
                kept[k].found = where[k].found;
                kept[k].kind = where[k].found ? runs[k].kind : KIND_NONE;
                if (where[k].found && runs[k].pieces > 1) whole = 0;
                if (where[k].found && runs[k].pieces == 1) {
                    kept[k].p = runs[k].piece[0].p;
                    kept[k].end = runs[k].piece[0].end;
                } else {
                    kept[k].kind = KIND_NONE;
                }
            }
            saved->whole[i] = (uint8_t)whole;
        }
    }
    PyMem_RawFree(table.slot);
    PyMem_RawFree(where);
    PyMem_RawFree(runs);
    PyMem_RawFree(sizes);
    return ok;
}

#define SAVED_CAPSULE "tfrecordkit._codec.saved"

static void saved_capsule_free(PyObject *capsule) {
    saved_free((Saved *)PyCapsule_GetPointer(capsule, SAVED_CAPSULE));
}

static PyObject *codec_scan(PyObject *self, PyObject *args) {
    PyObject *records_arg, *specs_arg;
    int keep = 0, strict = 0;
    if (!PyArg_ParseTuple(args, "OO|pp", &records_arg, &specs_arg, &keep, &strict)) return NULL;
    int nspecs = 0;
    Spec *specs = specs_get(specs_arg, &nspecs);
    if (specs == NULL) return NULL;
    Records records;
    if (!records_get(records_arg, &records)) {
        records_release(&records);
        PyMem_Free(specs);
        return NULL;
    }
    Saved *saved = keep ? saved_new(&records, specs, nspecs) : NULL;  /* none: fill locates again */
    Error err = {0, -1, {0}};
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = run_pass(&records, specs, nspecs, MODE_SCAN, saved, strict, &err);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (ok) {
        result = PyList_New(nspecs);
        for (int k = 0; result && k < nspecs; k++) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)specs[k].total_values,
                                           (long long)specs[k].total_bytes);
            if (pair == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, k, pair);
        }
    } else {
        raise_parse_error(&err);
    }
    if (result != NULL && keep) {
        PyObject *capsule = saved ? PyCapsule_New(saved, SAVED_CAPSULE, saved_capsule_free)
                                  : Py_NewRef(Py_None);
        if (capsule == NULL) {
            saved_free(saved);
            Py_CLEAR(result);
        } else {
            saved = NULL;
            PyObject *pair = PyTuple_Pack(2, result, capsule);
            Py_DECREF(capsule);
            Py_SETREF(result, pair);
        }
    }
    saved_free(saved);
    records_release(&records);
    PyMem_Free(specs);
    return result;
}

/* outs: per spec (values, row_counts, value_lens or None, missing), writable buffers sized
 * from `scan`. */
static PyObject *codec_fill(PyObject *self, PyObject *args) {
    PyObject *records_arg, *specs_arg, *outs_arg, *saved_arg = Py_None;
    if (!PyArg_ParseTuple(args, "OOO|O", &records_arg, &specs_arg, &outs_arg, &saved_arg))
        return NULL;
    Saved *saved = NULL;
    if (saved_arg != Py_None) {
        saved = (Saved *)PyCapsule_GetPointer(saved_arg, SAVED_CAPSULE);
        if (saved == NULL) return NULL;
    }
    int nspecs = 0;
    Spec *specs = specs_get(specs_arg, &nspecs);
    if (specs == NULL) return NULL;
    Records records;
    Py_buffer *views = PyMem_Calloc((size_t)(4 * (nspecs ? nspecs : 1)), sizeof(Py_buffer));
    int nviews = 0, ok = views != NULL;
    if (!records_get(records_arg, &records)) ok = 0;
    PyObject *outs = ok ? PySequence_Fast(outs_arg, "outs must be a sequence") : NULL;
    if (outs == NULL || PySequence_Fast_GET_SIZE(outs) != nspecs) {
        if (outs != NULL) PyErr_SetString(PyExc_ValueError, "one output tuple per spec");
        ok = 0;
    }
    for (int k = 0; ok && k < nspecs; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(outs, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
            PyErr_SetString(PyExc_ValueError, "outputs are (values, row_counts, lens, missing)");
            ok = 0;
            break;
        }
        void **slots[4] = {(void **)&specs[k].values, (void **)&specs[k].row_counts,
                           (void **)&specs[k].value_lens, (void **)&specs[k].missing};
        Py_ssize_t need[4] = {0, 8 * records.n, 0, records.n};
        for (int j = 0; j < 4; j++) {
            PyObject *buf = PyTuple_GET_ITEM(item, j);
            if (buf == Py_None) {
                *slots[j] = NULL;
                continue;
            }
            if (PyObject_GetBuffer(buf, &views[nviews], PyBUF_WRITABLE) < 0) {
                ok = 0;
                break;
            }
            if (views[nviews].len < need[j]) {
                PyErr_SetString(PyExc_ValueError, "an output buffer is too small");
                PyBuffer_Release(&views[nviews]);
                ok = 0;
                break;
            }
            *slots[j] = views[nviews].buf;
            nviews++;
        }
        if (ok && (specs[k].row_counts == NULL || specs[k].missing == NULL ||
                   (specs[k].kind == KIND_BYTES && specs[k].value_lens == NULL))) {
            PyErr_SetString(PyExc_ValueError, "missing output buffers");
            ok = 0;
        }
    }
    /* Every write is checked against these, so buffers sized for other records fail cleanly. */
    for (int k = 0; ok && k < nspecs; k++) {
        for (int j = 0; j < nviews; j++) {
            if (views[j].buf == specs[k].values) specs[k].values_cap = views[j].len;
            if (views[j].buf == specs[k].value_lens) specs[k].lens_cap = views[j].len / 8;
        }
    }
    Error err = {0, -1, {0}};
    if (ok) {
        int filled;
        Py_BEGIN_ALLOW_THREADS
        if (saved && !saved_matches(saved, &records, specs, nspecs)) saved = NULL;  /* others' */
        filled = run_pass(&records, specs, nspecs, MODE_FILL, saved, 0, &err);
        Py_END_ALLOW_THREADS
        if (!filled) {
            raise_parse_error(&err);
            ok = 0;
        }
    }
    for (int j = 0; j < nviews; j++) PyBuffer_Release(&views[j]);
    PyMem_Free(views);
    Py_XDECREF(outs);
    records_release(&records);
    PyMem_Free(specs);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}


/* One record's values for every spec, as Python objects: per spec None (the key is absent;
 * the caller puts its default), a list of bytes (string), or a bytearray of the values'
 * little-endian float32 / int64s. Checks exactly what scan and fill check. */
static PyObject *one_value(const Run *run, Spec *spec, Error *err) {
    int64_t n = spec->total_values, b = spec->total_bytes, filled_n = 0, filled_b = 0;
    int64_t row_count = 0;
    uint8_t missing = 0;
    spec->row_counts = &row_count;
    spec->missing = &missing;
    spec->value_pos = 0;
    spec->byte_pos = 0;
    if (spec->kind != KIND_BYTES) {
        int64_t width = spec->kind == KIND_FLOAT ? 4 : 8;
        PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(width * n));
        if (out == NULL) return NULL;
        spec->values = PyByteArray_AS_STRING(out);
        spec->values_cap = width * n;
        if (!walk_values(run, spec, MODE_FILL, &filled_n, &filled_b, err)) {
            Py_DECREF(out);
            return raise_parse_error(err);
        }
        return out;
    }
    char *values = PyMem_Malloc((size_t)(b ? b : 1));
    int64_t *lens = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    PyObject *out = NULL;
    if (values == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    spec->values = values;
    spec->values_cap = b;
    spec->value_lens = lens;
    spec->lens_cap = n;
    if (!walk_values(run, spec, MODE_FILL, &filled_n, &filled_b, err)) {
        raise_parse_error(err);
        goto done;
    }
    out = PyList_New((Py_ssize_t)n);
    int64_t at = 0;
    for (int64_t i = 0; out != NULL && i < n; i++) {
        PyObject *item = PyBytes_FromStringAndSize(values + at, (Py_ssize_t)lens[i]);
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
        at += lens[i];
    }
done:
    PyMem_Free(values);
    PyMem_Free(lens);
    return out;
}

static PyObject *codec_parse_one(PyObject *self, PyObject *args) {
    Py_buffer record;
    PyObject *specs_arg;
    int strict = 0;
    if (!PyArg_ParseTuple(args, "y*O|p", &record, &specs_arg, &strict)) return NULL;
    int nspecs = 0;
    Spec *specs = specs_get(specs_arg, &nspecs);
    if (specs == NULL) {
        PyBuffer_Release(&record);
        return NULL;
    }
    size_t slots = (size_t)(nspecs ? nspecs : 1);
    Located *where = PyMem_Malloc(sizeof(Located) * slots);
    Run *runs = PyMem_Malloc(sizeof(Run) * slots);
    int64_t *sizes = PyMem_Malloc(2 * sizeof(int64_t) * slots);
    Table table = {NULL, NULL, 0, strict};
    PyObject *result = NULL;
    Error err = {0, -1, {0}};
    if (where == NULL || runs == NULL || sizes == NULL || !table_init(&table, specs, nspecs)) {
        PyErr_NoMemory();
        goto done;
    }
    Span span = {(const uint8_t *)record.buf, (const uint8_t *)record.buf + record.len};
    if (!parse_record(span, 0, specs, nspecs, &table, MODE_SCAN, where, runs, sizes, 0, &err)) {
        raise_parse_error(&err);
        goto done;
    }
    result = PyList_New(nspecs);
    for (int k = 0; result != NULL && k < nspecs; k++) {
        PyObject *value;
        err.spec = k;
        if (!where[k].found || runs[k].kind == KIND_NONE) {
            value = Py_NewRef(Py_None);
        } else {
            value = one_value(&runs[k], &specs[k], &err);
        }
        if (value == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, k, value);
    }
done:
    PyMem_RawFree(table.slot);
    PyMem_Free(where);
    PyMem_Free(runs);
    PyMem_Free(sizes);
    PyMem_Free(specs);
    PyBuffer_Release(&record);
    return result;
}


/* split_bytes(values, offsets): the bytes values of a column as a list of Python bytes:
 * value i is values[offsets[i]:offsets[i + 1]] (offsets: int64, ascending, within values). */
static PyObject *codec_split_bytes(PyObject *self, PyObject *args) {
    Py_buffer values, offsets;
    if (!PyArg_ParseTuple(args, "y*y*", &values, &offsets)) return NULL;
    PyObject *out = NULL;
    if (offsets.len % 8 != 0 || offsets.len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be at least one int64");
        goto done;
    }
    Py_ssize_t n = offsets.len / 8 - 1;
    const int64_t *at = (const int64_t *)offsets.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (at[i] < 0 || at[i + 1] < at[i] || at[i + 1] > values.len) {
            PyErr_SetString(PyExc_ValueError, "offsets out of order or past the values");
            goto done;
        }
    }
    out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *item = PyBytes_FromStringAndSize((const char *)values.buf + at[i],
                                                   (Py_ssize_t)(at[i + 1] - at[i]));
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&offsets);
    return out;
}


/* gather(data, offsets, lengths, out): the spans data[offsets[i]:offsets[i] + lengths[i]]
 * copied back to back into `out` (writable, large enough) with the GIL released; returns
 * the bytes copied (offsets and lengths: int64 arrays as bytes-like objects of one length).
 * Copying into a buffer the caller reuses spares the first touch of fresh pages. */
static PyObject *codec_gather(PyObject *self, PyObject *args) {
    Py_buffer data, off_view, len_view, out_view;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &data, &off_view, &len_view, &out_view))
        return NULL;
    const int64_t *offs = (const int64_t *)off_view.buf, *lens = (const int64_t *)len_view.buf;
    Py_ssize_t n = off_view.len / 8, total = 0;
    const char *problem = NULL;
    if (off_view.len % 8 || len_view.len != off_view.len)
        problem = "offsets and lengths must be 8-byte arrays of one length";
    for (Py_ssize_t i = 0; !problem && i < n; i++) {
        if (offs[i] < 0 || lens[i] < 0 || offs[i] > data.len || lens[i] > data.len - offs[i])
            problem = "a span lies outside the data";
        else if (lens[i] > out_view.len - total)
            problem = "the spans do not fit the output buffer";
        else
            total += (Py_ssize_t)lens[i];
    }
    if (!problem) {
        char *to = (char *)out_view.buf;
        const char *from = (const char *)data.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            memcpy(to, from + offs[i], (size_t)lens[i]);
            to += lens[i];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&off_view);
    PyBuffer_Release(&len_view);
    PyBuffer_Release(&out_view);
    if (problem) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    return PyLong_FromSsize_t(total);
}


/* ---------------------------------------------------------------- encoding */
/* Framed, CRC'd Example records for a batch, built from columns (see `encode_frames`). */

enum { COL_FLOAT = 0, COL_INT64 = 1, COL_BYTES1 = 2, COL_RAW = 3, COL_FLOAT_RAGGED = 4,
       COL_INT64_RAGGED = 5 };

typedef struct {
    int type;
    const uint8_t *prefix; /* map entry key field: 0x0a varint(len) key */
    Py_ssize_t prefix_len;
    const char *values;    /* float32 / int64 values, n * count of them (ragged: splits[n]) */
    Py_ssize_t count;
    const int64_t *splits; /* ragged: record i's values are splits[i]..splits[i+1] */
    const uint8_t **data;  /* bytes1: n values; raw: parts, record i's are first[i]..first[i+1] */
    Py_ssize_t *len;
    Py_ssize_t *first;
} EncColumn;

static inline int col_is_float(const EncColumn *c) {
    return c->type == COL_FLOAT || c->type == COL_FLOAT_RAGGED;
}

static inline int col_is_int64(const EncColumn *c) {
    return c->type == COL_INT64 || c->type == COL_INT64_RAGGED;
}

/* Record i's numbers: the index of its first value and how many there are. */
static inline void col_span(const EncColumn *c, Py_ssize_t i, Py_ssize_t *start,
                            Py_ssize_t *count) {
    if (c->splits != NULL) {
        *start = (Py_ssize_t)c->splits[i];
        *count = (Py_ssize_t)(c->splits[i + 1] - c->splits[i]);
    } else {
        *start = i * c->count;
        *count = c->count;
    }
}

static inline int varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *put_varint(uint8_t *out, uint64_t v) {
    while (v >= 0x80) {
        *out++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *out++ = (uint8_t)v;
    return out;
}

#include "_crc32c.h"

static inline uint8_t *put_u32(uint8_t *out, uint32_t v) {
    for (int k = 0; k < 4; k++) out[k] = (uint8_t)(v >> (8 * k));
    return out + 4;
}

/* Size of a map entry's payload and of the Feature inside it, for record i. */
static void entry_sizes(const EncColumn *c, Py_ssize_t i, uint64_t *feature, uint64_t *list,
                        uint64_t *packed) {
    *packed = 0;
    Py_ssize_t start, count;
    if (col_is_float(c)) {
        col_span(c, i, &start, &count);
        *packed = (uint64_t)count * 4;
        *list = *packed ? 1 + varint_size(*packed) + *packed : 0;
    } else if (col_is_int64(c)) {
        col_span(c, i, &start, &count);
        const int64_t *v = (const int64_t *)c->values + start;
        for (Py_ssize_t k = 0; k < count; k++) *packed += varint_size((uint64_t)v[k]);
        *list = *packed ? 1 + varint_size(*packed) + *packed : 0;
    } else { /* bytes1: BytesList{value: [v]} */
        uint64_t n = (uint64_t)c->len[i];
        *list = 1 + varint_size(n) + n;
    }
    *feature = 1 + varint_size(*list) + *list;
}

static uint64_t entry_total(const EncColumn *c, Py_ssize_t i) {
    if (c->type == COL_RAW) {
        uint64_t total = 0;
        for (Py_ssize_t k = c->first[i]; k < c->first[i + 1]; k++) total += (uint64_t)c->len[k];
        return total;
    }
    uint64_t feature, list, packed;
    entry_sizes(c, i, &feature, &list, &packed);
    uint64_t entry = (uint64_t)c->prefix_len + 1 + varint_size(feature) + feature;
    return 1 + varint_size(entry) + entry;
}

static uint8_t *put_entry(uint8_t *out, const EncColumn *c, Py_ssize_t i) {
    if (c->type == COL_RAW) {
        for (Py_ssize_t k = c->first[i]; k < c->first[i + 1]; k++) {
            memcpy(out, c->data[k], (size_t)c->len[k]);
            out += c->len[k];
        }
        return out;
    }
    uint64_t feature, list, packed;
    entry_sizes(c, i, &feature, &list, &packed);
    uint64_t entry = (uint64_t)c->prefix_len + 1 + varint_size(feature) + feature;
    *out++ = 0x0a;
    out = put_varint(out, entry);
    memcpy(out, c->prefix, (size_t)c->prefix_len);
    out += c->prefix_len;
    *out++ = 0x12;
    out = put_varint(out, feature);
    Py_ssize_t start, count;
    if (col_is_float(c)) {
        col_span(c, i, &start, &count);
        *out++ = 0x12;
        out = put_varint(out, list);
        if (packed) {
            *out++ = 0x0a;
            out = put_varint(out, packed);
            memcpy(out, c->values + (size_t)start * 4, (size_t)count * 4);
            out += count * 4;
        }
    } else if (col_is_int64(c)) {
        col_span(c, i, &start, &count);
        const int64_t *v = (const int64_t *)c->values + start;
        *out++ = 0x1a;
        out = put_varint(out, list);
        if (packed) {
            *out++ = 0x0a;
            out = put_varint(out, packed);
        }
        for (Py_ssize_t k = 0; k < count; k++) out = put_varint(out, (uint64_t)v[k]);
    } else {
        *out++ = 0x0a;
        out = put_varint(out, list);
        *out++ = 0x0a;
        out = put_varint(out, (uint64_t)c->len[i]);
        memcpy(out, c->data[i], (size_t)c->len[i]);
        out += c->len[i];
    }
    return out;
}

static void enc_columns_free(EncColumn *cols, int ncols) {
    if (cols == NULL) return;
    for (int j = 0; j < ncols; j++) {
        PyMem_Free(cols[j].data);
        PyMem_Free(cols[j].len);
        PyMem_Free(cols[j].first);
    }
    PyMem_Free(cols);
}

/* Pointers to one bytes object's data; 0 (with TypeError) when it is not bytes. */
static int bytes_ptr(PyObject *item, const uint8_t **data, Py_ssize_t *len, const char *what,
                     Py_ssize_t i) {
    if (!PyBytes_Check(item)) {
        PyErr_Format(PyExc_TypeError, "%s %zd is %s, not bytes", what, i, Py_TYPE(item)->tp_name);
        return 0;
    }
    *data = (const uint8_t *)PyBytes_AS_STRING(item);
    *len = PyBytes_GET_SIZE(item);
    return 1;
}

/* columns: a sequence of (type, prefix: bytes, payload, count); see encode_frames in Python.
   Every object referenced stays alive in `columns` (the caller keeps it) for the call. */
static EncColumn *enc_columns_get(PyObject *columns, Py_ssize_t n, int *ncols,
                                  Py_buffer *views, int *nviews) {
    PyObject *seq = PySequence_Fast(columns, "columns must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    EncColumn *cols = PyMem_Calloc((size_t)(m ? m : 1), sizeof(EncColumn));
    *ncols = (int)m;
    *nviews = 0;
    if (cols == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    int ok = 1;
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, j), *prefix, *payload;
        int type;
        Py_ssize_t count;
        EncColumn *c = &cols[j];
        if (!PyArg_ParseTuple(item, "iSOn", &type, &prefix, &payload, &count)) {
            ok = 0;
            break;
        }
        c->type = type;
        c->count = count;
        c->prefix = (const uint8_t *)PyBytes_AS_STRING(prefix);
        c->prefix_len = PyBytes_GET_SIZE(prefix);
        if (type == COL_FLOAT || type == COL_INT64) {
            Py_buffer *view = &views[(*nviews)];
            if (PyObject_GetBuffer(payload, view, PyBUF_C_CONTIGUOUS) < 0) {
                ok = 0;
                break;
            }
            (*nviews)++;
            if (count < 0 || view->len != (Py_ssize_t)(n * count * (type == COL_FLOAT ? 4 : 8))) {
                PyErr_Format(PyExc_ValueError, "column %zd holds %zd bytes, expected %zd", j,
                             view->len, n * count * (type == COL_FLOAT ? 4 : 8));
                ok = 0;
                break;
            }
            c->values = view->buf;
        } else if (type == COL_FLOAT_RAGGED || type == COL_INT64_RAGGED) {
            /* payload: (values, row_splits): n + 1 int64 splits from 0 up to len(values) */
            PyObject *values, *splits;
            if (!PyArg_ParseTuple(payload, "OO", &values, &splits)) {
                ok = 0;
                break;
            }
            Py_buffer *vview = &views[(*nviews)];
            if (PyObject_GetBuffer(values, vview, PyBUF_C_CONTIGUOUS) < 0) {
                ok = 0;
                break;
            }
            (*nviews)++;
            Py_buffer *sview = &views[(*nviews)];
            if (PyObject_GetBuffer(splits, sview, PyBUF_C_CONTIGUOUS) < 0) {
                ok = 0;
                break;
            }
            (*nviews)++;
            Py_ssize_t width = type == COL_FLOAT_RAGGED ? 4 : 8;
            const int64_t *sp = sview->buf;
            if (sview->len != (n + 1) * 8 || vview->len % width) {
                ok = 0;
            } else {
                ok = sp[0] == 0 && sp[n] == vview->len / width;
                for (Py_ssize_t i = 0; ok && i < n; i++) ok = sp[i] <= sp[i + 1];
            }
            if (!ok) {
                PyErr_Format(PyExc_ValueError, "column %zd: row splits must be %zd int64s "
                             "rising from 0 to the number of values", j, n + 1);
                break;
            }
            c->values = vview->buf;
            c->splits = sp;
        } else if (type == COL_BYTES1 || type == COL_RAW) {
            PyObject *values = PySequence_Fast(payload, "a bytes column must be a sequence");
            if (values == NULL) {
                ok = 0;
                break;
            }
            Py_ssize_t rows = PySequence_Fast_GET_SIZE(values);
            if (rows != n) {
                PyErr_Format(PyExc_ValueError, "column %zd has %zd rows, expected %zd", j, rows, n);
                Py_DECREF(values);
                ok = 0;
                break;
            }
            PyObject **items = PySequence_Fast_ITEMS(values);
            if (type == COL_BYTES1) {
                c->data = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(n ? n : 1));
                c->len = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
                ok = c->data && c->len;
                for (Py_ssize_t i = 0; ok && i < n; i++)
                    ok = bytes_ptr(items[i], &c->data[i], &c->len[i], "value", i);
            } else { /* raw: each row is a list or tuple of bytes parts */
                Py_ssize_t parts = 0;
                for (Py_ssize_t i = 0; ok && i < n; i++) {
                    if (!PyList_Check(items[i]) && !PyTuple_Check(items[i])) {
                        PyErr_Format(PyExc_TypeError, "row %zd of column %zd is not a list", i, j);
                        ok = 0;
                    } else {
                        parts += PySequence_Fast_GET_SIZE(items[i]);
                    }
                }
                if (ok) {
                    c->data = PyMem_Malloc(sizeof(uint8_t *) * (size_t)(parts ? parts : 1));
                    c->len = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(parts ? parts : 1));
                    c->first = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
                    ok = c->data && c->len && c->first;
                }
                Py_ssize_t k = 0;
                for (Py_ssize_t i = 0; ok && i < n; i++) {
                    c->first[i] = k;
                    PyObject **row = PySequence_Fast_ITEMS(items[i]);
                    for (Py_ssize_t r = 0; ok && r < PySequence_Fast_GET_SIZE(items[i]); r++, k++)
                        ok = bytes_ptr(row[r], &c->data[k], &c->len[k], "part", k);
                }
                if (ok) c->first[n] = k;
            }
            Py_DECREF(values); /* the items stay referenced by `payload` */
            if (ok == 0 && !PyErr_Occurred()) PyErr_NoMemory();
        } else {
            PyErr_Format(PyExc_ValueError, "unknown column type %d", type);
            ok = 0;
        }
    }
    Py_DECREF(seq);
    if (!ok) {
        for (int v = 0; v < *nviews; v++) PyBuffer_Release(&views[v]);
        *nviews = 0;
        enc_columns_free(cols, *ncols);
        return NULL;
    }
    return cols;
}

/* encode_frames(columns, n) -> (frames: bytes, lengths: bytes of int64 frame lengths). */
static PyObject *codec_encode_frames(PyObject *self, PyObject *args) {
    PyObject *columns;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &columns, &n)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be non-negative");
        return NULL;
    }
    Py_ssize_t m = PySequence_Size(columns);
    if (m < 0) return NULL;
    /* up to two buffers per column (ragged numbers: values and row splits) */
    Py_buffer *views = PyMem_Calloc((size_t)(m ? 2 * m : 1), sizeof(Py_buffer));
    if (views == NULL) return PyErr_NoMemory();
    int ncols = 0, nviews = 0;
    EncColumn *cols = enc_columns_get(columns, n, &ncols, views, &nviews);
    if (cols == NULL) {
        PyMem_Free(views);
        return NULL;
    }
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, n * 8);
    int64_t *frame_len = lengths ? (int64_t *)PyBytes_AS_STRING(lengths) : NULL;
    uint64_t *bodies = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    uint64_t total = 0;
    if (bodies == NULL) {
        PyErr_NoMemory();
        frame_len = NULL;
    }
    if (frame_len != NULL) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t body = 0;
            for (int j = 0; j < ncols; j++) body += entry_total(&cols[j], i);
            bodies[i] = body;
            uint64_t record = 1 + varint_size(body) + body;
            frame_len[i] = (int64_t)(record + 16);
            total += record + 16;
        }
        Py_END_ALLOW_THREADS
    }
    PyObject *frames = NULL;
    if (frame_len != NULL && total > (uint64_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the batch is too large to encode at once");
    } else if (frame_len != NULL) {
        frames = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    }
    if (frames != NULL) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(frames);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t record = (uint64_t)frame_len[i] - 16;
            uint8_t *head = out;
            for (int k = 0; k < 8; k++) head[k] = (uint8_t)(record >> (8 * k));
            put_u32(head + 8, masked_crc(head, 8));
            uint8_t *data = head + 12, *p = data;
            *p++ = 0x0a;
            p = put_varint(p, bodies[i]);
            for (int j = 0; j < ncols; j++) p = put_entry(p, &cols[j], i);
            put_u32(p, masked_crc(data, record));
            out = p + 4;
        }
        Py_END_ALLOW_THREADS
    }
    for (int v = 0; v < nviews; v++) PyBuffer_Release(&views[v]);
    PyMem_Free(views);
    PyMem_Free(bodies);
    enc_columns_free(cols, ncols);
    if (frames == NULL) {
        Py_XDECREF(lengths);
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NN)", frames, lengths);
    return result;
}

/* check_frames(buffer, starts, lengths) -> bad: the frames at byte ``starts[i]`` of ``buffer``
 * (int64 arrays as bytes), each ``lengths[i]`` bytes as an index lists them, checked as one
 * frame read alone would be: inside the buffer, the header's length agreeing with the index,
 * the length CRC and the data CRC. ``bad`` is -1 when every frame is good, else the first bad
 * one (the caller re-checks it to say what is wrong). The GIL is released meanwhile. */
static PyObject *codec_check_frames(PyObject *self, PyObject *args) {
    Py_buffer view, starts_view, lengths_view;
    if (!PyArg_ParseTuple(args, "y*y*y*", &view, &starts_view, &lengths_view)) return NULL;
    Py_ssize_t n = starts_view.len / 8;
    if (lengths_view.len != starts_view.len || starts_view.len % 8) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&starts_view);
        PyBuffer_Release(&lengths_view);
        PyErr_SetString(PyExc_ValueError, "starts and lengths must be int64 arrays of one size");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    const int64_t *starts = (const int64_t *)starts_view.buf;
    const int64_t *lengths = (const int64_t *)lengths_view.buf;
    uint64_t size = (uint64_t)view.len;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = starts[i], frame = lengths[i];
        if (at < 0 || frame < 16 || (uint64_t)at > size || (uint64_t)frame > size - (uint64_t)at) {
            bad = i;
            break;
        }
        const uint8_t *p = base + at;
        uint64_t length = 0;
        for (int k = 0; k < 8; k++) length |= (uint64_t)p[k] << (8 * k);
        uint32_t head_crc = (uint32_t)p[8] | ((uint32_t)p[9] << 8) | ((uint32_t)p[10] << 16) |
                            ((uint32_t)p[11] << 24);
        if (length != (uint64_t)frame - 16 || masked_crc(p, 8) != head_crc) {
            bad = i;
            break;
        }
        const uint8_t *f = p + 12 + length;
        uint32_t data_crc = (uint32_t)f[0] | ((uint32_t)f[1] << 8) | ((uint32_t)f[2] << 16) |
                            ((uint32_t)f[3] << 24);
        if (masked_crc(p + 12, (size_t)length) != data_crc) {
            bad = i;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&lengths_view);
    return PyLong_FromSsize_t(bad);
}

/* SplitMix64's finaliser, as codecs/_crop.py's `splitmix` computes it on uint64 arrays (the
 * numbers: tfrecordkit/_constants.py, through the generated _constants.h). */
static inline uint64_t splitmix64(uint64_t x) {
    x += TFRK_SPLITMIX_GAMMA;
    x = (x ^ (x >> TFRK_SPLITMIX_SHIFTS_0)) * TFRK_SPLITMIX_MUL1;
    x = (x ^ (x >> TFRK_SPLITMIX_SHIFTS_1)) * TFRK_SPLITMIX_MUL2;
    return x ^ (x >> TFRK_SPLITMIX_SHIFTS_2);
}

/* feistel_each(positions, sizes, keys, out, rounds): out[i] = positions[i] through the keyed
 * Feistel bijection of [0, sizes[i]) chosen by keys[i], with cycle-walking, bit for bit what
 * sampling/_order.py's NumPy `feistel_permute_each` gives (uint64 positions and keys, int64
 * sizes and out, as bytes-like arrays of one length; positions already checked to lie inside
 * their domains). The GIL is released meanwhile. */
static PyObject *codec_feistel_each(PyObject *self, PyObject *args) {
    Py_buffer pos_view, size_view, key_view, out_view;
    int rounds;
    if (!PyArg_ParseTuple(args, "y*y*y*w*i", &pos_view, &size_view, &key_view, &out_view,
                          &rounds)) return NULL;
    Py_ssize_t n = pos_view.len / 8;
    const char *problem = NULL;
    if (pos_view.len % 8 || size_view.len != pos_view.len || key_view.len != pos_view.len ||
        out_view.len != pos_view.len)
        problem = "positions, sizes, keys and out must be 8-byte arrays of one length";
    else if (rounds < 0 || rounds > 64)
        problem = "rounds must be between 0 and 64";
    if (problem) {
        PyBuffer_Release(&pos_view);
        PyBuffer_Release(&size_view);
        PyBuffer_Release(&key_view);
        PyBuffer_Release(&out_view);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    const uint64_t *positions = (const uint64_t *)pos_view.buf;
    const int64_t *sizes = (const int64_t *)size_view.buf;
    const uint64_t *keys = (const uint64_t *)key_view.buf;
    int64_t *out = (int64_t *)out_view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t size = sizes[i];
        if (size <= 1) {
            out[i] = 0;
            continue;
        }
        /* bits: ceil(log2(size)), at least 2, made even */
        uint64_t top = (uint64_t)size - 1;
        int bits = 0;
        while (top) {
            bits++;
            top >>= 1;
        }
        if (bits < 2) bits = 2;
        bits += bits % 2;
        int half = bits / 2;
        uint64_t mask = (half >= 64) ? ~0ULL : ((1ULL << half) - 1);
        uint64_t round_keys[64];
        for (int r = 0; r < rounds; r++) round_keys[r] = splitmix64(keys[i] + (uint64_t)(r + 1));
        uint64_t x = positions[i];
        do {
            uint64_t left = x >> half, right = x & mask;
            for (int r = 0; r < rounds; r++) {
                uint64_t mixed = splitmix64(right ^ round_keys[r]);
                uint64_t next = left ^ (mixed & mask);
                left = right;
                right = next;
            }
            x = (left << half) | right;
        } while (x >= (uint64_t)size);
        out[i] = (int64_t)x;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&pos_view);
    PyBuffer_Release(&size_view);
    PyBuffer_Release(&key_view);
    PyBuffer_Release(&out_view);
    Py_RETURN_NONE;
}

#ifndef _WIN32
#include <errno.h>
#include <unistd.h>
/* read_spans(fds, offsets, lengths, bases, out) -> -1, or the first span read short: span i
 * is `lengths[i]` bytes of file descriptor `fds[i]` from `offsets[i]`, written to
 * out[bases[i]:] (int64 arrays as bytes-like objects of one length, `out` writable and
 * holding every span). Every span in one call with the GIL released, not a pread (and a
 * GIL hand-off) each. A span cut short by the end of its file stops the call there; an I/O
 * error raises OSError. */
static PyObject *codec_read_spans(PyObject *self, PyObject *args) {
    Py_buffer fd_view, off_view, len_view, base_view, out_view;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &fd_view, &off_view, &len_view, &base_view,
                          &out_view)) return NULL;
    Py_ssize_t n = fd_view.len / 8;
    const int64_t *fds = (const int64_t *)fd_view.buf, *offs = (const int64_t *)off_view.buf;
    const int64_t *lens = (const int64_t *)len_view.buf, *bases = (const int64_t *)base_view.buf;
    const char *problem = NULL;
    if (fd_view.len % 8 || off_view.len != fd_view.len || len_view.len != fd_view.len ||
        base_view.len != fd_view.len)
        problem = "fds, offsets, lengths and bases must be 8-byte arrays of one length";
    for (Py_ssize_t i = 0; !problem && i < n; i++)
        if (lens[i] < 0 || bases[i] < 0 || offs[i] < 0 || bases[i] > out_view.len ||
            lens[i] > out_view.len - bases[i])
            problem = "a span lies outside the output buffer";
    Py_ssize_t short_at = -1;
    int error = 0;
    if (!problem) {
        char *out = (char *)out_view.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && short_at < 0 && !error; i++) {
            int64_t done = 0;
            while (done < lens[i]) {
                ssize_t got = pread((int)fds[i], out + bases[i] + done, (size_t)(lens[i] - done),
                                    (off_t)(offs[i] + done));
                if (got < 0) {
                    if (errno == EINTR) continue;
                    error = errno;
                    break;
                }
                if (got == 0) {
                    short_at = i;
                    break;
                }
                done += got;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&fd_view);
    PyBuffer_Release(&off_view);
    PyBuffer_Release(&len_view);
    PyBuffer_Release(&base_view);
    PyBuffer_Release(&out_view);
    if (problem) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    if (error) {
        errno = error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromSsize_t(short_at);
}

#include <sys/uio.h>
/* read_record(fd, offset, frame_length) -> the record's bytes, or None: one frame read by
 * one preadv (header, the record straight into the bytes returned, footer) with the GIL
 * released, its length checked against the index and both CRCs checked. None means
 * something is wrong (short, another length, a CRC): the caller reads again to say what.
 * An I/O error raises OSError. */
static PyObject *codec_read_record(PyObject *self, PyObject *args) {
    int fd;
    long long offset, frame;
    if (!PyArg_ParseTuple(args, "iLL", &fd, &offset, &frame)) return NULL;
    if (frame < 16 || offset < 0 || frame - 16 > PY_SSIZE_T_MAX) Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(frame - 16));
    if (out == NULL) return NULL;
    uint8_t head[12], foot[4];
    uint8_t *data = (uint8_t *)PyBytes_AS_STRING(out);
    size_t length = (size_t)(frame - 16);
    ssize_t got;
    int error = 0, ok = 0;
    Py_BEGIN_ALLOW_THREADS
    struct iovec parts[3] = {{head, 12}, {data, length}, {foot, 4}};
    do {
        got = preadv(fd, parts, 3, (off_t)offset);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        error = errno;
    } else if ((long long)got == frame) {
        uint64_t stored = 0;
        for (int k = 0; k < 8; k++) stored |= (uint64_t)head[k] << (8 * k);
        uint32_t head_crc = (uint32_t)head[8] | ((uint32_t)head[9] << 8) |
                            ((uint32_t)head[10] << 16) | ((uint32_t)head[11] << 24);
        uint32_t data_crc = (uint32_t)foot[0] | ((uint32_t)foot[1] << 8) |
                            ((uint32_t)foot[2] << 16) | ((uint32_t)foot[3] << 24);
        ok = stored == (uint64_t)length && masked_crc(head, 8) == head_crc &&
             masked_crc(data, length) == data_crc;
    }
    Py_END_ALLOW_THREADS
    if (error) {
        Py_DECREF(out);
        errno = error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (!ok) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}
#endif

/* A varint at data[*at] (of len bytes in all), as store/_digests.py's `_varint` reads it: at
 * most 10 bytes. Returns 0 when it runs out or is longer; *big is set when its value does
 * not fit 64 bits (Python's int would hold it: no length or field number it gives matches). */
static int cut_varint(const unsigned char *data, Py_ssize_t len, Py_ssize_t *at,
                      uint64_t *value, int *big) {
    uint64_t v = 0;
    int shift = 0;
    *big = 0;
    while (*at < len) {
        unsigned char byte = data[(*at)++];
        if (shift == 63 && (byte & 0x7F) > 1) *big = 1;
        if (shift < 64) v |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = v;
            return 1;
        }
        shift += 7;
        if (shift > 63) return 0;
    }
    return 0;
}

/* Whether the map entry data[at:end] has the key `key` (its last field 1, as
 * `_entry_key` takes it); -1 when the entry is malformed (a bad wire type, or fields that do
 * not end at `end`). */
static int cut_entry_key(const unsigned char *data, Py_ssize_t len, Py_ssize_t at,
                         Py_ssize_t end, const char *key, Py_ssize_t key_len) {
    int found = 0;
    while (at < end) {
        uint64_t tag, n;
        int big;
        if (!cut_varint(data, len, &at, &tag, &big)) return -1;
        unsigned kind = (unsigned)(tag & 7);
        if (kind == 0) {
            int skipped;
            if (!cut_varint(data, len, &at, &n, &skipped)) return -1;
        } else if (kind == 1) {
            at += 8;
        } else if (kind == 5) {
            at += 4;
        } else if (kind == 2) {
            int big_length;
            if (!cut_varint(data, len, &at, &n, &big_length)) return -1;
            if (big_length || n > (uint64_t)(len - at)) return -1;  /* overruns: at != end */
            if (!big && (tag >> 3) == 1)
                found = ((Py_ssize_t)n == key_len && memcmp(data + at, key, n) == 0);
            at += (Py_ssize_t)n;
        } else {
            return -1;
        }
    }
    return at == end ? found : -1;
}

/* entry_cuts(buffer, begins, ends, key, out): for each record's feature entries
 * buffer[begins[i]:ends[i]], where the entry keyed `key` lies, as store/_digests.py's
 * `_without_source` walks them: out[2i], out[2i+1] = its start and end (absolute); -1, -1
 * when there is none, or the entries cannot be walked (then they are hashed whole, as
 * there); -2, -2 when the key appears more than once (left to the Python walk). int64
 * arrays as bytes-like; the GIL is released meanwhile. */
static PyObject *codec_entry_cuts(PyObject *self, PyObject *args) {
    Py_buffer data_view, begin_view, end_view, key_view, out_view;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &data_view, &begin_view, &end_view, &key_view,
                          &out_view)) return NULL;
    Py_ssize_t n = begin_view.len / 8;
    if (begin_view.len % 8 || end_view.len != begin_view.len ||
        out_view.len != 2 * begin_view.len) {
        PyBuffer_Release(&data_view);
        PyBuffer_Release(&begin_view);
        PyBuffer_Release(&end_view);
        PyBuffer_Release(&key_view);
        PyBuffer_Release(&out_view);
        PyErr_SetString(PyExc_ValueError, "begins and ends must be int64 arrays of one "
                                          "length, out twice as long");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)data_view.buf;
    const int64_t *begins = (const int64_t *)begin_view.buf;
    const int64_t *ends = (const int64_t *)end_view.buf;
    const char *key = (const char *)key_view.buf;
    Py_ssize_t key_len = key_view.len;
    int64_t *out = (int64_t *)out_view.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t cut_start = -1, cut_end = -1;
        if (begins[i] < 0 || ends[i] < begins[i] || ends[i] > data_view.len) {
            bad = 1;
            break;
        }
        /* The walk sees only this record's entries, as the Python one sees its view. */
        const unsigned char *entries = data + begins[i];
        Py_ssize_t len = (Py_ssize_t)(ends[i] - begins[i]), at = 0;
        int cuts = 0, whole = 0;
        while (at < len) {
            if (entries[at] != 0x0A) {
                whole = 1;
                break;
            }
            Py_ssize_t body = at + 1;
            uint64_t length;
            int big;
            if (!cut_varint(entries, len, &body, &length, &big) || big ||
                length > (uint64_t)(len - body)) {
                whole = 1;
                break;
            }
            Py_ssize_t end = body + (Py_ssize_t)length;
            int keyed = cut_entry_key(entries, len, body, end, key, key_len);
            if (keyed < 0) {
                whole = 1;
                break;
            }
            if (keyed) {
                cuts++;
                cut_start = begins[i] + at;
                cut_end = begins[i] + end;
            }
            at = end;
        }
        if (whole || cuts == 0) {
            out[2 * i] = out[2 * i + 1] = -1;
        } else if (cuts > 1) {
            out[2 * i] = out[2 * i + 1] = -2;
        } else {
            out[2 * i] = cut_start;
            out[2 * i + 1] = cut_end;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data_view);
    PyBuffer_Release(&begin_view);
    PyBuffer_Release(&end_view);
    PyBuffer_Release(&key_view);
    PyBuffer_Release(&out_view);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a record's span lies outside the buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"check_frames", codec_check_frames, METH_VARARGS,
     "check_frames(buffer, starts, lengths) -> -1, or the first bad frame."},
    {"scan", codec_scan, METH_VARARGS,
     "scan(records, specs, keep=False) -> [(values, bytes)] per spec (keep: and what fill "
     "can reuse); ValueError((record, spec, why))."},
    {"gather", codec_gather, METH_VARARGS,
     "gather(data, offsets, lengths, out): the spans of data back to back in out."},
    {"split_bytes", codec_split_bytes, METH_VARARGS,
     "split_bytes(values, offsets): a bytes column's values as a list of bytes"},
    {"parse_one", codec_parse_one, METH_VARARGS,
     "parse_one(record, specs, strict=False): one record's values per spec"},
    {"fill", codec_fill, METH_VARARGS,
     "fill(records, specs, outs, saved=None): write every spec's values into its output "
     "buffers (saved: from scan(..., keep=True) of these records)."},
    {"encode_frames", codec_encode_frames, METH_VARARGS,
     "encode_frames(columns, n) -> (frames, int64 frame lengths as bytes)."},
    {"entry_cuts", codec_entry_cuts, METH_VARARGS,
     "entry_cuts(buffer, begins, ends, key, out): where each record's entry keyed key lies."},
    {"feistel_each", codec_feistel_each, METH_VARARGS,
     "feistel_each(positions, sizes, keys, out, rounds): keyed bijections of [0, size)."},
#ifndef _WIN32
    {"read_spans", codec_read_spans, METH_VARARGS,
     "read_spans(fds, offsets, lengths, bases, out) -> -1, or the first span read short."},
    {"read_record", codec_read_record, METH_VARARGS,
     "read_record(fd, offset, frame_length) -> the checked record, or None if it fails."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_codec",
    .m_doc = "Columnar tf.train.Example decoding (compiled).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__codec(void) {
    crc_setup();
    return PyModule_Create(&module);
}
