/* filterd._speedups: two hot loops in C, each with a pure-Python reference that gives the
   same results on every input and is used where this module is not built or declines.

   count_keys   the per-token loop of filterd.bayes.features.encode (reference: encode_python)
   words        the words of filterd.tokenize.text.plain_tokens (reference: its regexes
                and cap_all, regex_tokens)

   count_keys(docs, base1, base2) -> (indptr, keys, counts, token_index) | None

   docs is a list of lists of str. Each token's key is TokenHasher's (filterd/vocab.py):
       h_p(t) = sum_i (b_i + 1) * B_p^i  mod p      (b_i the UTF-8 bytes of t)
       key(t) = h_P1(t) * 2^31 + h_P2(t)
   with a NUL character hashed as U+FFFD, as TokenHasher does. Per document, equal keys
   are one entry: keys sorted, counts summed, token_index the position (in the documents'
   tokens laid end to end) of the key's first occurrence. The four results are bytearrays
   of native int64 for numpy.frombuffer. None when a document is not a list or a token
   not a str encodable as strict UTF-8 (lone surrogates): the caller then uses the
   pure-Python encode, which handles every input.

   tests/bayes/test_features.py checks that both agree. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define P1 2147483647ULL /* 2**31 - 1, vocab.P1 */
#define P2 2147483629ULL /* vocab.P2 */

typedef struct {
    int64_t key;
    int64_t pos; /* of the key's first occurrence */
    int64_t count;
} Entry;

/* Horner from the last byte: h = sum_i (b_i + 1) B^i, four bytes a step,
       h <- h B^4 + (c_{i+3} B^3 + c_{i+2} B^2 + c_{i+1} B + c_i),
   so that one multiply and one reduction a step lie on the critical path instead of four
   (each term < 2^39, the sum < 2^41, h B^4 < 2^62: no overflow). Constant moduli compile to
   multiplies. */
typedef struct {
    uint64_t b, b2, b3, b4; /* powers of the base mod p */
} Powers;

static Powers
powers_of(uint64_t base, uint64_t p)
{
    Powers w;
    w.b = base;
    w.b2 = base * base % p;
    w.b3 = w.b2 * base % p;
    w.b4 = w.b3 * base % p;
    return w;
}

#define STEP4(h, w, p, s, i) \
    h = (h * w.b4 + ((uint64_t)s[i + 3] + 1) * w.b3 + ((uint64_t)s[i + 2] + 1) * w.b2 \
         + ((uint64_t)s[i + 1] + 1) * w.b + ((uint64_t)s[i] + 1)) % p

static inline int64_t
token_key(const unsigned char *s, Py_ssize_t n, const Powers *w1, const Powers *w2)
{
    uint64_t h1 = 0, h2 = 0;
    if (memchr(s, 0, n) != NULL) { /* TokenHasher hashes NUL as U+FFFD: a byte at a time */
        static const unsigned char replacement[3] = {0xEF, 0xBF, 0xBD};
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            for (int j = s[i] ? 0 : 2; j >= 0; j--) {
                uint64_t c = (s[i] ? s[i] : replacement[j]) + 1;
                h1 = (h1 * w1->b + c) % P1;
                h2 = (h2 * w2->b + c) % P2;
            }
        }
        return (int64_t)((h1 << 31) | h2);
    }
    Py_ssize_t i = n;
    while (i % 4) { /* the last n mod 4 bytes come first */
        i--;
        h1 = (h1 * w1->b + s[i] + 1) % P1;
        h2 = (h2 * w2->b + s[i] + 1) % P2;
    }
    while (i > 0) {
        i -= 4;
        STEP4(h1, (*w1), P1, s, i);
        STEP4(h2, (*w2), P2, s, i);
    }
    return (int64_t)((h1 << 31) | h2);
}

static inline int
before(const Entry *a, const Entry *b)
{
    return a->key < b->key;
}

/* Quicksort by key (distinct keys): median of three, insertion sort on short runs,
   recursion on the smaller side only (depth <= log2 n). */
static void
sort_entries(Entry *a, Py_ssize_t n)
{
    while (n > 16) {
        Entry *mid = a + n / 2, *last = a + n - 1, t;
        if (before(mid, a)) { t = *mid; *mid = *a; *a = t; }
        if (before(last, a)) { t = *last; *last = *a; *a = t; }
        if (before(last, mid)) { t = *last; *last = *mid; *mid = t; }
        Entry pivot = *mid;
        Py_ssize_t i = 0, j = n - 1;
        for (;;) {
            while (before(&a[i], &pivot)) i++;
            while (before(&pivot, &a[j])) j--;
            if (i >= j) break;
            t = a[i]; a[i] = a[j]; a[j] = t;
            i++; j--;
        }
        Py_ssize_t left = j + 1; /* a[0..j] <= pivot <= a[j+1..] */
        if (left < n - left) {
            sort_entries(a, left);
            a += left; n -= left;
        } else {
            sort_entries(a + left, n - left);
            n = left;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        Entry x = a[i];
        Py_ssize_t j = i;
        while (j > 0 && before(&x, &a[j - 1])) { a[j] = a[j - 1]; j--; }
        a[j] = x;
    }
}

static PyObject *
new_int64s(Py_ssize_t n, int64_t **data)
{
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (out != NULL)
        *data = (int64_t *)PyByteArray_AS_STRING(out);
    return out;
}

static PyObject *
count_keys(PyObject *self, PyObject *args)
{
    PyObject *docs;
    unsigned long long base1, base2;
    if (!PyArg_ParseTuple(args, "O!KK", &PyList_Type, &docs, &base1, &base2))
        return NULL;
    if (base1 >= P1 || base2 >= P2) {
        PyErr_SetString(PyExc_ValueError, "bases must be below the primes");
        return NULL;
    }
    Py_ssize_t n_docs = PyList_GET_SIZE(docs), n_tokens = 0, longest = 0;
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        PyObject *doc = PyList_GET_ITEM(docs, d);
        if (!PyList_Check(doc))
            Py_RETURN_NONE;
        Py_ssize_t len = PyList_GET_SIZE(doc);
        n_tokens += len;
        if (len > longest)
            longest = len;
    }

    int64_t *indptr = NULL, *keys = NULL, *counts = NULL, *token_index = NULL;
    PyObject *indptr_out = new_int64s(n_docs + 1, &indptr);
    PyObject *keys_out = new_int64s(n_tokens, &keys);
    PyObject *counts_out = new_int64s(n_tokens, &counts);
    PyObject *index_out = new_int64s(n_tokens, &token_index);
    Py_ssize_t most_slots = 1;
    while (most_slots < 2 * longest)
        most_slots <<= 1;
    Entry *entries = PyMem_Malloc((longest > 0 ? longest : 1) * sizeof(Entry));
    Py_ssize_t *slots = PyMem_Malloc(most_slots * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (!indptr_out || !keys_out || !counts_out || !index_out || !entries || !slots) {
        if (!entries || !slots)
            PyErr_NoMemory();
        goto done;
    }

    Powers w1 = powers_of(base1, P1), w2 = powers_of(base2, P2);
    Py_ssize_t nnz = 0, position = 0;
    indptr[0] = 0;
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        PyObject *doc = PyList_GET_ITEM(docs, d);
        Py_ssize_t len = PyList_GET_SIZE(doc);
        /* Equal keys merge in an open-addressing table first (slot: 1 + their entry), so that
           only the distinct keys are sorted: about half of a mail's tokens. */
        int shift = 64;
        Py_ssize_t size = 1;
        while (size < 2 * len) { size <<= 1; shift--; }
        memset(slots, 0, size * sizeof(Py_ssize_t));
        Py_ssize_t distinct = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            PyObject *token = PyList_GET_ITEM(doc, i);
            if (!PyUnicode_CheckExact(token))
                goto fallback;
            Py_ssize_t length;
            const char *utf8 = PyUnicode_AsUTF8AndSize(token, &length);
            if (utf8 == NULL) { /* lone surrogates: TokenHasher encodes them with surrogatepass */
                PyErr_Clear();
                goto fallback;
            }
            int64_t key = token_key((const unsigned char *)utf8, length, &w1, &w2);
            Py_ssize_t slot = shift < 64 ? (Py_ssize_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> shift) : 0;
            while (slots[slot] != 0 && entries[slots[slot] - 1].key != key)
                slot = (slot + 1) & (size - 1);
            if (slots[slot] == 0) {
                entries[distinct] = (Entry){key, position + i, 1};
                slots[slot] = ++distinct;
            } else {
                entries[slots[slot] - 1].count++;
            }
        }
        sort_entries(entries, distinct);
        for (Py_ssize_t i = 0; i < distinct; i++, nnz++) {
            keys[nnz] = entries[i].key;
            counts[nnz] = entries[i].count;
            token_index[nnz] = entries[i].pos;
        }
        position += len;
        indptr[d + 1] = nnz;
    }
    if (PyByteArray_Resize(keys_out, nnz * sizeof(int64_t)) < 0 ||
        PyByteArray_Resize(counts_out, nnz * sizeof(int64_t)) < 0 ||
        PyByteArray_Resize(index_out, nnz * sizeof(int64_t)) < 0)
        goto done;
    result = PyTuple_Pack(4, indptr_out, keys_out, counts_out, index_out);
    goto done;

fallback:
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(entries);
    PyMem_Free(slots);
    Py_XDECREF(indptr_out);
    Py_XDECREF(keys_out);
    Py_XDECREF(counts_out);
    Py_XDECREF(index_out);
    return result;
}

/* words(text, max_length) -> list[str]

   The matches of text._TOKEN.findall(text) (text._ASCII_TOKEN's for ASCII text, the same
   matches), each longer than max_length characters as its skip marker
   "skip:<first>:<len // 10 * 10>", as cap_all gives it:
       \w+TAIL | [cur](?=\d)\w+TAIL | !{1,3} not followed by "!" | an emoji
   TAIL: "-" or "'" then word characters; "." or "," after a digit then a digit and word
   characters; "%" or a currency sign after a digit; repeated. \w and \d as the re module
   reads them in str patterns: Py_UNICODE_ISALNUM or "_", Py_UNICODE_ISDECIMAL.
   tests/tokenize/test_text.py checks it against the regexes. */

static inline int
is_word(Py_UCS4 c)
{
    if (c < 128)
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || c == '_';
    return Py_UNICODE_ISALNUM(c);
}

static inline int
is_digit(Py_UCS4 c)
{
    return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c);
}

static inline int
is_currency(Py_UCS4 c) /* text._CURRENCY: $ £ € ¥ ₹ ₩ ₽ ¢ */
{
    return c == '$' || c == 0xA3 || c == 0x20AC || c == 0xA5 || c == 0x20B9 || c == 0x20A9 ||
           c == 0x20BD || c == 0xA2;
}

static inline int
is_emoji(Py_UCS4 c) /* text._EMOJI */
{
    return (c >= 0x2600 && c <= 0x27BF) || (c >= 0x1F000 && c <= 0x1F3FA) || (c >= 0x1F400 && c <= 0x1FAFF);
}

/* One source for the three string kinds: inlined into `scan` with a constant kind, so that
   PyUnicode_READ's switch folds away. */
#define AT(i) PyUnicode_READ(kind, data, (i))

static inline __attribute__((always_inline)) Py_ssize_t
word_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t q)
{
    while (q < n && is_word(AT(q)))
        q++;
    return q;
}

/* The end of the TAIL that starts at q (q > the token's start, so AT(q - 1) exists). */
static inline __attribute__((always_inline)) Py_ssize_t
tail_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t q)
{
    while (q < n) {
        Py_UCS4 c = AT(q);
        if (c == '-' || c == '\'') {
            if (!(q + 1 < n && is_word(AT(q + 1))))
                break;
            q = word_end(kind, data, n, q + 2);
        } else if (c == '.' || c == ',') {
            if (!(is_digit(AT(q - 1)) && q + 1 < n && is_digit(AT(q + 1))))
                break;
            q = word_end(kind, data, n, q + 2);
        } else if (c == '%' || is_currency(c)) {
            if (!is_digit(AT(q - 1)))
                break;
            q++;
        } else {
            break;
        }
    }
    return q;
}

static int
append_token(PyObject *out, PyObject *text, Py_UCS4 first, Py_ssize_t start, Py_ssize_t end,
             Py_ssize_t max_length)
{
    Py_ssize_t length = end - start;
    PyObject *token = length > max_length
        ? PyUnicode_FromFormat("skip:%c:%zd", (int)first, length / 10 * 10)
        : PyUnicode_Substring(text, start, end);
    if (token == NULL)
        return -1;
    int failed = PyList_Append(out, token);
    Py_DECREF(token);
    return failed;
}

static inline __attribute__((always_inline)) int
scan(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t n, Py_ssize_t max_length)
{
    Py_ssize_t p = 0;
    while (p < n) {
        Py_UCS4 c = AT(p);
        Py_ssize_t start = p, end;
        if (is_word(c)) {
            end = tail_end(kind, data, n, word_end(kind, data, n, p + 1));
        } else if (is_currency(c) && p + 1 < n && is_digit(AT(p + 1))) {
            end = tail_end(kind, data, n, word_end(kind, data, n, p + 2));
        } else if (c == '!') {
            end = p + 1;
            while (end < n && AT(end) == '!')
                end++;
            if (end - p > 3) /* a longer run matches only at its last three */
                start = end - 3;
        } else if (is_emoji(c)) {
            end = p + 1;
        } else {
            p++;
            continue;
        }
        if (append_token(out, text, AT(start), start, end, max_length) < 0)
            return -1;
        p = end;
    }
    return 0;
}

#undef AT

static PyObject *
words(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_ssize_t max_length;
    if (!PyArg_ParseTuple(args, "Un", &text, &max_length))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int failed;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        failed = scan(out, text, PyUnicode_1BYTE_KIND, data, n, max_length);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = scan(out, text, PyUnicode_2BYTE_KIND, data, n, max_length);
        break;
    default:
        failed = scan(out, text, PyUnicode_4BYTE_KIND, data, n, max_length);
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"words", words, METH_VARARGS, "words(text, max_length) -> the words of plain_tokens (see text.py)."},
    {"count_keys", count_keys, METH_VARARGS,
     "count_keys(docs, base1, base2) -> (indptr, keys, counts, token_index) as int64 bytearrays, "
     "or None for input only the pure-Python encode handles."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "filterd._speedups",
    "Hot loops of filterd.bayes.features.encode and filterd.tokenize.text in C (optional; see each).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "P1", (long)P1) < 0 || PyModule_AddIntConstant(m, "P2", (long)P2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
