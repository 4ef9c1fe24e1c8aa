/* storage_core.native._native: the Python face of the native core (Python's limited API, 3.11).
 *
 * It never opens a file: every function takes buffers the Python side mapped through
 * storage_core.fs (or built in memory), pins them with the buffer protocol for the call, and
 * releases the GIL around the long loops. Results and errors are those of the twins in pure.py;
 * storage_core/native/__init__.py chooses between the two.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

static PyObject *FrameError;

/* ---- buffers ------------------------------------------------------------------------------ */

static int int64_array(PyObject *obj, Py_buffer *view, Py_ssize_t fields) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != 8 || view->len < fields * 8 || !view->format || (strcmp(view->format, "q") && strcmp(view->format, "l"))) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "state must be an array('q') of the documented length");
        return -1;
    }
    return 0;
}

static int append_bytes(PyObject *bytearray, const lk_bytes *data) {
    if (!data->len) return 0;
    if (!PyByteArray_Check(bytearray)) {
        PyErr_SetString(PyExc_TypeError, "index entries go to a bytearray");
        return -1;
    }
    Py_ssize_t size = PyByteArray_Size(bytearray);
    if (PyByteArray_Resize(bytearray, size + (Py_ssize_t)data->len) < 0) return -1;
    memcpy(PyByteArray_AsString(bytearray) + size, data->data, data->len);
    return 0;
}

/* ---- crc32c, md5 --------------------------------------------------------------------------- */

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long crc = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &data, &crc)) return NULL;
    uint32_t value;
    Py_BEGIN_ALLOW_THREADS value = lk_crc32c((uint32_t)crc, data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(value);
}

static PyObject *py_crc32c_implementation(PyObject *self, PyObject *args) {
    return PyUnicode_FromString(lk_crc32c_implementation());
}

static PyObject *py_md5(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    uint8_t digest[16];
    lk_md5(data.buf, (size_t)data.len, digest);
    PyBuffer_Release(&data);
    return PyBytes_FromStringAndSize((const char *)digest, 16);
}

/* ---- the walk ------------------------------------------------------------------------------ */

/* Raise storage_core.errors.SegmentTooLargeError(size), as the twin does (imported here, on this
 * rare path, not at module init: the sanitizer build is loaded before storage_core is importable). */
static void segment_too_large(Py_ssize_t size) {
    PyObject *errors = PyImport_ImportModule("storage_core.errors");
    PyObject *type = errors ? PyObject_GetAttrString(errors, "SegmentTooLargeError") : NULL;
    PyObject *error = type ? PyObject_CallFunction(type, "n", size) : NULL;
    if (error) PyErr_SetObject(type, error);
    Py_XDECREF(error);
    Py_XDECREF(type);
    Py_XDECREF(errors);
}

static PyObject *py_walk(PyObject *self, PyObject *args) {
    PyObject *buffer_obj, *state_obj, *offset_entries, *time_entries;
    if (!PyArg_ParseTuple(args, "OOOO", &buffer_obj, &state_obj, &offset_entries, &time_entries)) return NULL;
    Py_buffer buffer, state;
    if (PyObject_GetBuffer(buffer_obj, &buffer, PyBUF_SIMPLE) < 0) return NULL;
    if (int64_array(state_obj, &state, W_FIELDS) < 0) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    lk_bytes oe = {0}, te = {0};
    int stop;
    const Py_ssize_t size = buffer.len;
    Py_BEGIN_ALLOW_THREADS stop = lk_walk(buffer.buf, (size_t)size, state.buf, &oe, &te);
    Py_END_ALLOW_THREADS PyBuffer_Release(&state);
    PyBuffer_Release(&buffer);
    PyObject *result = NULL;
    if (stop == LK_WALK_TOO_LARGE)
        segment_too_large(size);
    else if (stop < 0)
        PyErr_NoMemory();
    else if (append_bytes(offset_entries, &oe) == 0 && append_bytes(time_entries, &te) == 0)
        result = PyLong_FromLong(stop);
    free(oe.data);
    free(te.data);
    return result;
}

/* ---- framing ------------------------------------------------------------------------------- */

static PyObject *frame_error(const lk_frame_error *e) {
    static const char *kinds[] = {"ok", "corrupt", "index", "unsupported", "memory"};
    if (e->kind == FRAME_NOMEM) return PyErr_NoMemory();
    PyObject *message;
    switch (e->what) {
    case E_INDEX: message = PyUnicode_FromString("index out of range"); break;
    case E_VARINT_PAST_END: message = PyUnicode_FromString("varint runs past the end of the buffer"); break;
    case E_VARINT_TOO_LONG: message = PyUnicode_FromString("illegal varint: more than 5 bytes"); break;
    case E_VARLONG_TOO_LONG: message = PyUnicode_FromString("illegal varint: more than 10 bytes"); break;
    case E_RECORD_PAST_SECTION:
        message = PyUnicode_FromFormat("record of %lld bytes runs past the records section", (long long)e->a);
        break;
    case E_HEADER_COUNT: message = PyUnicode_FromFormat("invalid number of record headers %lld", (long long)e->a); break;
    case E_HEADER_KEY_SIZE:
        message = PyUnicode_FromFormat("invalid negative header key size %lld", (long long)e->a);
        break;
    case E_RECORD_LENGTH:
        message = PyUnicode_FromFormat("record declares %lld bytes but its fields take %lld", (long long)e->a,
                                       (long long)e->b);
        break;
    case E_BYTES_LEFT:
        message = PyUnicode_FromFormat("incorrect declared batch size: %lld bytes left after %lld records",
                                       (long long)e->a, (long long)e->b);
        break;
    default: message = PyUnicode_FromString("a value wider than 64 bits"); break;
    }
    if (!message) return NULL;
    PyObject *args = Py_BuildValue("(sN)", kinds[e->kind], message);
    if (args) {
        PyErr_SetObject(FrameError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int64_t frame_section(Py_buffer *data, int64_t count, lk_frame **frames, lk_frame_error *error) {
    int64_t framed;
    Py_BEGIN_ALLOW_THREADS framed = lk_frame_records(data->buf, (size_t)data->len, count, frames, error);
    Py_END_ALLOW_THREADS return framed;
}

static PyObject *span(const uint8_t *data, Py_ssize_t n, int64_t start, int64_t size) {
    if (start > n) start = n;
    int64_t stop = size > n - start ? n : start + size;
    return PyBytes_FromStringAndSize((const char *)data + start, (Py_ssize_t)(stop - start));
}

static PyObject *headers_of(const uint8_t *data, Py_ssize_t n, const lk_frame *f) {
    PyObject *headers = PyTuple_New((Py_ssize_t)f->header_count);
    if (!headers) return NULL;
    int64_t pos = f->headers_position;
    for (int64_t h = 0; h < f->header_count; h++) {
        int64_t key_position, key_size, value_position, value_size;
        lk_frame_error error;
        int64_t next = lk_frame_header(data, (size_t)n, pos, &key_position, &key_size, &value_position, &value_size,
                                       &error);
        if (next < 0) { /* cannot happen: the record was framed */
            Py_DECREF(headers);
            return frame_error(&error);
        }
        PyObject *key = NULL, *value = NULL;
        if (key_position > n) key_position = n;
        if (key_size > n - key_position) key_size = n - key_position;
        key = PyUnicode_DecodeUTF8((const char *)data + key_position, (Py_ssize_t)key_size, "surrogateescape");
        if (value_size >= 0)
            value = span(data, n, value_position, value_size);
        else
            value = Py_NewRef(Py_None);
        PyObject *pair = key && value ? PyTuple_Pack(2, key, value) : NULL;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (!pair) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SetItem(headers, (Py_ssize_t)h, pair);
        pos = next;
    }
    return headers;
}

static PyObject *py_frame_records(PyObject *self, PyObject *args) {
    Py_buffer data;
    long long count;
    if (!PyArg_ParseTuple(args, "y*L", &data, &count)) return NULL;
    lk_frame *frames = NULL;
    lk_frame_error error;
    int64_t framed = frame_section(&data, count, &frames, &error);
    PyObject *result = NULL;
    if (framed < 0) {
        frame_error(&error);
        goto done;
    }
    result = PyList_New((Py_ssize_t)framed);
    if (!result) goto done;
    PyObject *no_headers = PyTuple_New(0);
    for (int64_t i = 0; i < framed && no_headers; i++) {
        const lk_frame *f = &frames[i];
        PyObject *headers = f->header_count ? headers_of(data.buf, data.len, f) : Py_NewRef(no_headers);
        PyObject *item = headers ? Py_BuildValue("(LLLLLLLN)", (long long)f->end, (long long)f->timestamp_delta,
                                                 (long long)f->offset_delta, (long long)f->key_position,
                                                 (long long)f->key_length, (long long)f->value_position,
                                                 (long long)f->value_length, headers)
                                 : NULL;
        if (!item) {
            Py_CLEAR(result);
            break;
        }
        PyList_SetItem(result, (Py_ssize_t)i, item);
    }
    Py_XDECREF(no_headers);
done:
    free(frames);
    PyBuffer_Release(&data);
    return result;
}

/* ---- the offset map ------------------------------------------------------------------------ */

typedef struct {
    Py_buffer slots, bits, state;
    lk_map map;
} map_views;

static int open_map(PyObject *slots, PyObject *bits, PyObject *state, map_views *m) {
    if (PyObject_GetBuffer(slots, &m->slots, PyBUF_WRITABLE) < 0) return -1;
    if (PyObject_GetBuffer(bits, &m->bits, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&m->slots);
        return -1;
    }
    if (int64_array(state, &m->state, M_FIELDS) < 0) {
        PyBuffer_Release(&m->bits);
        PyBuffer_Release(&m->slots);
        return -1;
    }
    int64_t *s = m->state.buf;
    if (s[M_SLOTS] < 1 || s[M_SLOTS] > m->slots.len / 24 || s[M_BITS_BYTES] < 0 || s[M_BITS_BYTES] > m->bits.len) {
        PyBuffer_Release(&m->state);
        PyBuffer_Release(&m->bits);
        PyBuffer_Release(&m->slots);
        PyErr_SetString(PyExc_ValueError, "the offset map's state does not match its buffers");
        return -1;
    }
    m->map.slots = m->slots.buf;
    m->map.bits = m->bits.buf;
    m->map.state = s;
    return 0;
}

static void close_map(map_views *m) {
    PyBuffer_Release(&m->state);
    PyBuffer_Release(&m->bits);
    PyBuffer_Release(&m->slots);
}

static PyObject *map_full(void) {
    PyErr_SetString(PyExc_ValueError, "the offset map is full");
    return NULL;
}

static PyObject *py_map_put_keys(PyObject *self, PyObject *args) {
    PyObject *slots, *bits, *state, *offsets, *keys;
    long long max_entries;
    if (!PyArg_ParseTuple(args, "OOOOOL", &slots, &bits, &state, &offsets, &keys, &max_entries)) return NULL;
    map_views m;
    if (open_map(slots, bits, state, &m) < 0) return NULL;
    int64_t *s = m.map.state;
    Py_ssize_t count = PyObject_Length(offsets), done = 0;
    PyObject *result = NULL;
    if (count < 0 || PyObject_Length(keys) != count) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "offsets and keys differ in length");
        goto out;
    }
    for (; done < count; done++) {
        if (s[M_ENTRIES] >= max_entries) break;
        if (s[M_ENTRIES] >= s[M_SLOTS]) {
            map_full();
            goto out;
        }
        PyObject *offset_obj = PySequence_GetItem(offsets, done), *key_obj = PySequence_GetItem(keys, done);
        long long offset = offset_obj ? PyLong_AsLongLong(offset_obj) : -1;
        Py_buffer key;
        int bad = !offset_obj || !key_obj || PyErr_Occurred() || PyObject_GetBuffer(key_obj, &key, PyBUF_SIMPLE) < 0;
        Py_XDECREF(offset_obj);
        Py_XDECREF(key_obj);
        if (bad) goto out;
        int put = lk_map_put(&m.map, key.buf, (size_t)key.len, offset);
        PyBuffer_Release(&key);
        if (put < 0) {
            map_full();
            goto out;
        }
    }
    result = PyLong_FromSsize_t(done);
out:
    close_map(&m);
    return result;
}

static PyObject *py_map_get(PyObject *self, PyObject *args) {
    PyObject *slots, *bits, *state;
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "OOOy*", &slots, &bits, &state, &key)) return NULL;
    map_views m;
    if (open_map(slots, bits, state, &m) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    int64_t offset;
    int status = lk_map_get(&m.map, key.buf, (size_t)key.len, &offset);
    close_map(&m);
    PyBuffer_Release(&key);
    return status < 0 ? map_full() : PyLong_FromLongLong(offset);
}

/* Offsets of framed records: base + delta, or -1 when one does not fit an int64. */
static int record_offsets(const lk_frame *frames, int64_t framed, int64_t base, int64_t **offsets) {
    *offsets = malloc((size_t)(framed ? framed : 1) * sizeof(int64_t));
    if (!*offsets) return -2;
    for (int64_t i = 0; i < framed; i++)
        if (__builtin_add_overflow(base, frames[i].offset_delta, &(*offsets)[i])) return -1;
    return 0;
}

static PyObject *unsupported(void) {
    PyObject *args = Py_BuildValue("(ss)", "unsupported", "an offset wider than 64 bits");
    if (args) {
        PyErr_SetObject(FrameError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* Frame a records section and compute its records' offsets (map_put_records, map_retained): the
   count framed, or -1 with the Python error set (a framing error, an offset wider than 64 bits, no
   memory). The caller frees *frames and *offsets either way. */
static int64_t frame_with_offsets(Py_buffer *data, int64_t count, int64_t base, lk_frame **frames,
                                  int64_t **offsets) {
    lk_frame_error error;
    int64_t framed = frame_section(data, count, frames, &error);
    if (framed < 0) {
        frame_error(&error);
        return -1;
    }
    int bad = record_offsets(*frames, framed, base, offsets);
    if (bad) {
        bad == -2 ? (void)PyErr_NoMemory() : (void)unsupported();
        return -1;
    }
    return framed;
}

static PyObject *py_map_put_records(PyObject *self, PyObject *args) {
    PyObject *slots, *bits, *state;
    Py_buffer data;
    long long count, base, last_offset, start, max_entries;
    if (!PyArg_ParseTuple(args, "OOOy*LLLLL", &slots, &bits, &state, &data, &count, &base, &last_offset, &start,
                          &max_entries))
        return NULL;
    map_views m;
    if (open_map(slots, bits, state, &m) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    lk_frame *frames = NULL;
    int64_t *offsets = NULL;
    PyObject *result = NULL;
    int64_t framed = frame_with_offsets(&data, count, base, &frames, &offsets);
    if (framed < 0) goto out;
    int64_t *s = m.map.state, put = 0, stop_index = -1, last_put = -1;
    int in_order = 1, full = 0;
    /* The twin's _in_order: every offset above the one before it (the first at or above the base),
     * the last one (or base - 1 when none) at or below last_offset; base - 1 only where it exists. */
    Py_BEGIN_ALLOW_THREADS for (int64_t i = 0; i < framed; i++)
        if (i ? offsets[i] <= offsets[i - 1] : offsets[i] < base) in_order = 0;
    if (framed ? offsets[framed - 1] > last_offset : base != INT64_MIN && base - 1 > last_offset) in_order = 0;
    for (int64_t i = 0; i < framed; i++) {
        const lk_frame *f = &frames[i];
        if (f->key_length < 0 || offsets[i] < start) continue;
        if (s[M_ENTRIES] >= max_entries) {
            stop_index = i;
            break;
        }
        if (s[M_ENTRIES] >= s[M_SLOTS] ||
            lk_map_put(&m.map, (const uint8_t *)data.buf + f->key_position, (size_t)f->key_length, offsets[i]) < 0) {
            full = 1;
            break;
        }
        put++;
        last_put = offsets[i];
    }
    Py_END_ALLOW_THREADS if (full) map_full();
    else result = Py_BuildValue("(LOLLL)", (long long)framed, in_order ? Py_True : Py_False, (long long)put,
                                (long long)stop_index, (long long)last_put);
out:
    free(frames);
    free(offsets);
    close_map(&m);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *py_map_retained(PyObject *self, PyObject *args) {
    PyObject *slots, *bits, *state;
    Py_buffer data;
    long long count, base, last_offset, latest;
    int probe; /* 0 frame only, 1 lookups, 2 the superseded bits first (layout.py PROBE_*) */
    if (!PyArg_ParseTuple(args, "OOOy*LLLLi", &slots, &bits, &state, &data, &count, &base, &last_offset, &latest,
                          &probe))
        return NULL;
    map_views m;
    if (open_map(slots, bits, state, &m) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    lk_frame *frames = NULL;
    int64_t *offsets = NULL;
    uint8_t *masks = NULL;
    PyObject *result = NULL;
    int64_t framed = frame_with_offsets(&data, count, base, &frames, &offsets);
    if (framed < 0) goto out;
    size_t width = (size_t)(framed + 7) / 8;
    masks = calloc(4, width ? width : 1);
    if (!masks) {
        PyErr_NoMemory();
        goto out;
    }
    uint8_t *above = masks, *later = masks + width, *null_key = masks + 2 * width, *tombstone = masks + 3 * width;
    int full = 0;
    const int64_t first_put = m.map.state[M_FIRST_PUT];
    const int windowed = probe == 2 && base >= first_put;
    Py_BEGIN_ALLOW_THREADS for (int64_t i = 0; i < framed; i++) {
        const lk_frame *f = &frames[i];
        const uint8_t bit = (uint8_t)(1u << (i & 7));
        if (f->key_length < 0) null_key[i >> 3] |= bit;
        if (f->value_length < 0) tombstone[i >> 3] |= bit;
        if (offsets[i] > latest) {
            above[i >> 3] |= bit;
            continue;
        }
        if (f->key_length < 0 || probe == 0) continue;
        if (windowed && offsets[i] >= base && offsets[i] <= last_offset && lk_map_superseded(&m.map, offsets[i])) {
            later[i >> 3] |= bit;
            continue;
        }
        int64_t mapped;
        if (lk_map_get(&m.map, (const uint8_t *)data.buf + f->key_position, (size_t)f->key_length, &mapped) < 0) {
            full = 1;
            break;
        }
        if (mapped > offsets[i]) later[i >> 3] |= bit;
    }
    Py_END_ALLOW_THREADS if (full) map_full();
    else result = Py_BuildValue("(Ly#y#y#y#)", (long long)framed, above, (Py_ssize_t)width, later, (Py_ssize_t)width,
                                null_key, (Py_ssize_t)width, tombstone, (Py_ssize_t)width);
out:
    free(frames);
    free(offsets);
    free(masks);
    close_map(&m);
    PyBuffer_Release(&data);
    return result;
}

/* ---- the module ---------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data, crc=0) -> int: CRC-32C, unsigned."},
    {"crc32c_implementation", py_crc32c_implementation, METH_NOARGS, "'sse4.2', 'armv8' or 'table'."},
    {"md5", py_md5, METH_VARARGS, "md5(data) -> bytes: the 16-byte MD5 digest."},
    {"walk", py_walk, METH_VARARGS, "walk(buffer, state, offset_entries, time_entries) -> stop (see walk.py)."},
    {"frame_records", py_frame_records, METH_VARARGS, "frame_records(data, count) -> [RecordFrame] (record.py)."},
    {"map_put_keys", py_map_put_keys, METH_VARARGS, "map_put_keys(slots, bits, state, offsets, keys, max_entries)."},
    {"map_put_records", py_map_put_records, METH_VARARGS, "Frame a records section and put its keys."},
    {"map_get", py_map_get, METH_VARARGS, "map_get(slots, bits, state, key) -> offset or -1."},
    {"map_retained", py_map_retained, METH_VARARGS, "Frame a records section and probe its keys."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "The native core of storage_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    lk_crc32c_init();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    FrameError = PyErr_NewException("storage_core.native._native.FrameError", PyExc_Exception, NULL);
    if (!FrameError || PyModule_AddObjectRef(m, "FrameError", FrameError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
