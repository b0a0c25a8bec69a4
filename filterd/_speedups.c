/* filterd._speedups: hot loops in C, each with a pure-Python reference that gives the
   same results on every input and is used where this module is not built or declines.

   count_keys   the per-token loop of filterd.bayes.features.encode (reference: encode_python)
   local_top    the per-document top-N of filterd.bayes.selection.local_top (reference:
                local_top_python)
   words        the words of filterd.tokenize.text.plain_tokens (reference: its regexes
                and cap_all, regex_tokens)
   linked_words the words and links of a text with URLs or addresses (reference:
                filterd.tokenize.text.linked_tokens)
   url_tokens   the tokens of one URL (reference: filterd.tokenize.links.python_url_tokens)
   received     the tokens of one Received header (reference:
                filterd.tokenize.headers.python_received_tokens)
   markup       HTML with tags as spaces, and its link values (reference:
                filterd.tokenize.markup.python_markup)
   hidden_spans the text of HTML a reader does not see (reference:
                filterd.tokenize.hidden.python_hidden_spans)
   split_words  the words written a letter at a time, "v i a g r a" (reference:
                filterd.tokenize.text.python_split_words)
   folded       NFKC and casefolding of mostly ASCII text (reference:
                filterd.tokenize.text.nfkc_casefold)
   grams        the distinct character n-grams of a text (reference:
                filterd.tokenize.text.python_grams)
   pairs        a token list with its word pairs (reference: filterd.tokenize.text.with_pairs)
   logistic_pass one pass of online logistic regression over the rows of a window (reference:
                filterd.bayes.fusion.logistic_pass_python)

   Every scan here is linear in its input, as its reference: message content is written by
   adversaries (filterd/evaluation/hostile.py has a family for each).

   count_keys(docs, base1, base2, mask0, mask1, mask2)
       -> (indptr, keys, counts, token_index) | None

   docs is a list of lists of str. Each token's key is TokenHasher's (filterd/bayes/vocab.py):
       h_p(t) = sum_i (b_i + 1) * B_p^i  mod p      (b_i the UTF-8 bytes of t)
       key(t) = v(t) * 2^62 + ((h_P1(t) * 2^31 + h_P2(t)) & mask_v(t))      (as int64)
   with v(t) the token's view (token_view, vocab.view_of_token), mask_v = 2^b_v - 1
   (vocab.BUCKET_BITS) and a NUL character hashed as U+FFFD, as TokenHasher does. Per document, equal keys
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
#include <math.h>

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

/* vocab.view_of_token: 1 for "c4:..." (a character 4-gram), 2 for a word pair (a space and no
   ':'), else 0 (words). */
static inline uint64_t
token_view(const unsigned char *s, Py_ssize_t n)
{
    if (n >= 3 && s[0] == 'c' && s[1] == '4' && s[2] == ':')
        return 1;
    if (memchr(s, ' ', n) != NULL && memchr(s, ':', n) == NULL)
        return 2;
    return 0;
}

static inline int64_t
view_key(uint64_t view, uint64_t h1, uint64_t h2, const uint64_t *masks)
{
    return (int64_t)((view << 62) | (((h1 << 31) | h2) & masks[view]));
}

static inline int64_t
token_key(const unsigned char *s, Py_ssize_t n, const Powers *w1, const Powers *w2,
          const uint64_t *masks)
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
        return view_key(token_view(s, n), h1, h2, masks);
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
    return view_key(token_view(s, n), h1, h2, masks);
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
    unsigned long long base1, base2, mask0, mask1, mask2;
    if (!PyArg_ParseTuple(args, "O!KKKKK", &PyList_Type, &docs, &base1, &base2, &mask0, &mask1,
                          &mask2))
        return NULL;
    /* view 3 is never made: its mask is never read */
    const uint64_t masks[4] = {mask0, mask1, mask2, 0};
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
            int64_t key = token_key((const unsigned char *)utf8, length, &w1, &w2, masks);
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

/* The classes of the ASCII characters, one lookup instead of a chain of compares: most text
   is ASCII. A character of no class (white space, most punctuation) starts no token. */
enum { WORD = 1, DIGIT = 2, STARTS_TOKEN = 4 };

static unsigned char ascii_class[128];

static void
init_ascii_class(void)
{
    for (int c = 0; c < 128; c++) {
        int word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || c == '_';
        int digit = c >= '0' && c <= '9';
        ascii_class[c] = (word ? WORD | STARTS_TOKEN : 0) | (digit ? DIGIT : 0) |
                         (c == '$' || c == '!' ? STARTS_TOKEN : 0);
    }
}

static inline int
is_word(Py_UCS4 c)
{
    return c < 128 ? ascii_class[c] & WORD : Py_UNICODE_ISALNUM(c);
}

static inline int
is_digit(Py_UCS4 c)
{
    return c < 128 ? ascii_class[c] & DIGIT : Py_UNICODE_ISDECIMAL(c);
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

/* Words repeat within and across mails ("the", "com"): a short ASCII word is taken from a
   direct-mapped cache of the last word seen in its slot, which costs a hash and a compare
   instead of a new str (the words are equal either way). The cache holds at most
   WORD_CACHE_SLOTS strings of at most WORD_CACHE_LENGTH characters. */
#define WORD_CACHE_SLOTS 16384
#define WORD_CACHE_LENGTH 24
static PyObject *word_cache[WORD_CACHE_SLOTS];

/* The word text[start:start + length] from the cache: 1 and *word set (a new reference), 0
   when it is not a short ASCII word, -1 on error. */
static inline __attribute__((always_inline)) int
cached_word(int kind, const void *data, Py_ssize_t start, Py_ssize_t length, PyObject **word)
{
    if (length > WORD_CACHE_LENGTH)
        return 0;
    char chars[WORD_CACHE_LENGTH];
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (c >= 128)
            return 0;
        chars[i] = (char)c;
        hash = (hash ^ c) * 16777619u;
    }
    PyObject **slot = &word_cache[hash & (WORD_CACHE_SLOTS - 1)];
    PyObject *seen = *slot;
    if (seen != NULL && PyUnicode_GET_LENGTH(seen) == length &&
        memcmp(PyUnicode_1BYTE_DATA(seen), chars, length) == 0) {
        Py_INCREF(seen);
        *word = seen;
        return 1;
    }
    PyObject *fresh = PyUnicode_New(length, 127);
    if (fresh == NULL)
        return -1;
    memcpy(PyUnicode_1BYTE_DATA(fresh), chars, length);
    Py_INCREF(fresh);
    Py_XSETREF(*slot, fresh);
    *word = fresh;
    return 1;
}

static inline __attribute__((always_inline)) int
append_token(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t start,
             Py_ssize_t end, Py_ssize_t max_length)
{
    Py_ssize_t length = end - start;
    PyObject *token = NULL;
    if (length > max_length) {
        token = PyUnicode_FromFormat("skip:%c:%zd", (int)PyUnicode_READ(kind, data, start),
                                     length / 10 * 10);
    } else {
        int cached = cached_word(kind, data, start, length, &token);
        if (cached < 0)
            return -1;
        if (!cached)
            token = PyUnicode_Substring(text, start, end);
    }
    if (token == NULL)
        return -1;
    int failed = PyList_Append(out, token);
    Py_DECREF(token);
    return failed;
}

/* The words of text[p:n], as `words` gives those of that slice. */
static inline __attribute__((always_inline)) int
scan(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t p, Py_ssize_t n,
     Py_ssize_t max_length)
{
    while (p < n) {
        Py_UCS4 c = AT(p);
        if (c < 128 && !(ascii_class[c] & STARTS_TOKEN)) {
            p++;
            continue;
        }
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
        if (append_token(out, text, kind, data, start, end, max_length) < 0)
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
        failed = scan(out, text, PyUnicode_1BYTE_KIND, data, 0, n, max_length);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = scan(out, text, PyUnicode_2BYTE_KIND, data, 0, n, max_length);
        break;
    default:
        failed = scan(out, text, PyUnicode_4BYTE_KIND, data, 0, n, max_length);
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* linked_words(text, max_length, enough, url_tokens) -> list[str]

   text.linked_tokens(text, max_length, 0, enough) (its reference): the words of the text
   between its links, and the tokens of each link, in order, as links.find_links finds them:
       URL       (https?://|ftp://|www\.)[^\s<>"'`{}|\\^\x00-\x1f\x7f]+, less a trailer of
                 links.URL_TRAILER characters (text again), read by url_tokens(url, max_length)
       address   (?<![\w.+-])[\w.+-]+@[\w-]+(\.[\w-]+)+ : "email:<local>", "email:<domain>"
   the leftmost first, a URL on a tie, each search going on after the last link. Before each
   link, the list ends if it holds more than `enough` tokens. Every scan moves forward but
   for the run before an "@", read back to the "@" before it: linear in the text, as the
   reference (whose URL search also skips the run of a URL it does not take).
   tests/tokenize/test_text.py checks it against the reference. */

#define AT(i) PyUnicode_READ(kind, data, (i))

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

static inline int
is_local(Py_UCS4 c) /* an address's local part */
{
    return is_word(c) || c == '.' || c == '+' || c == '-';
}

static inline int
is_label(Py_UCS4 c) /* a domain label */
{
    return is_word(c) || c == '-';
}

static inline int
in_url(Py_UCS4 c) /* [^\s<>"'`{}|\\^\x00-\x1f\x7f] */
{
    if (c < 128)
        return c > ' ' && c != 0x7f && strchr("<>\"'`{}|\\^", (int)c) == NULL;
    return !Py_UNICODE_ISSPACE(c);
}

static inline int
is_trailer(Py_UCS4 c) /* links.URL_TRAILER */
{
    return c < 128 && c != 0 && strchr(".,;:!?)]}'\"", (int)c) != NULL;
}

static int
starts_with(const Text *t, Py_ssize_t p, const char *ascii)
{
    int kind = t->kind;
    const void *data = t->data;
    for (; *ascii; ascii++, p++)
        if (p >= t->n || AT(p) != (Py_UCS4)(unsigned char)*ascii)
            return 0;
    return 1;
}

/* The length of the URL prefix at p when a URL character follows it, else 0. */
static Py_ssize_t
url_prefix(const Text *t, Py_ssize_t p)
{
    int kind = t->kind;
    const void *data = t->data;
    Py_ssize_t length = 0;
    Py_UCS4 c = AT(p);
    if (c == 'h' && starts_with(t, p, "http")) {
        if (starts_with(t, p + 4, "s://") && p + 8 < t->n && in_url(AT(p + 8)))
            return 8;
        length = starts_with(t, p + 4, "://") ? 7 : 0;
    } else if (c == 'f') {
        length = starts_with(t, p, "ftp://") ? 6 : 0;
    } else if (c == 'w') {
        length = starts_with(t, p, "www.") ? 4 : 0;
    }
    return length && p + length < t->n && in_url(AT(p + length)) ? length : 0;
}

/* The first URL start at or after pos, or -1. */
static Py_ssize_t
next_url(const Text *t, Py_ssize_t pos)
{
    int kind = t->kind;
    const void *data = t->data;
    for (Py_ssize_t p = pos; p < t->n; p++) {
        Py_UCS4 c = AT(p);
        if ((c == 'h' || c == 'f' || c == 'w') && url_prefix(t, p))
            return p;
    }
    return -1;
}

static Py_ssize_t
label_end(const Text *t, Py_ssize_t q)
{
    int kind = t->kind;
    const void *data = t->data;
    while (q < t->n && is_label(AT(q)))
        q++;
    return q;
}

/* The end of the domain [\w-]+(\.[\w-]+)+ that starts at q, or -1. */
static Py_ssize_t
domain_end(const Text *t, Py_ssize_t q)
{
    int kind = t->kind;
    const void *data = t->data;
    if (!(q < t->n && is_label(AT(q))))
        return -1;
    q = label_end(t, q);
    Py_ssize_t labels = 0;
    while (q + 1 < t->n && AT(q) == '.' && is_label(AT(q + 1))) {
        q = label_end(t, q + 2);
        labels++;
    }
    return labels ? q : -1;
}

typedef struct {
    Py_ssize_t start, at, end; /* at: of the "@" */
    int is_url;                /* a URL starts where the local part would */
} Address;

/* links._next_address: the first link that starts a run of local-part characters ending just
   before an "@", at or after pos. 0 if none. */
static int
next_address(const Text *t, PyObject *text, Py_ssize_t pos, Address *found)
{
    int kind = t->kind;
    const void *data = t->data;
    Py_ssize_t at = pos < t->n ? PyUnicode_FindChar(text, '@', pos, t->n, 1) : -1;
    while (at >= 0) {
        Py_ssize_t start = at;
        while (start > 0 && is_local(AT(start - 1)))
            start--;
        if (pos <= start && start < at) {
            if (url_prefix(t, start)) {
                *found = (Address){start, at, -1, 1};
                return 1;
            }
            Py_ssize_t end = domain_end(t, at + 1);
            if (end >= 0) {
                *found = (Address){start, at, end, 0};
                return 1;
            }
        }
        at = at + 1 < t->n ? PyUnicode_FindChar(text, '@', at + 1, t->n, 1) : -1;
    }
    if (at == -2)
        return -1;
    return 0;
}

static int
append_owned(PyObject *out, PyObject *token)
{
    if (token == NULL)
        return -1;
    int failed = PyList_Append(out, token);
    Py_DECREF(token);
    return failed;
}

/* prefix + cap(text[start:end], max_length) onto out */
static int
append_capped(PyObject *out, const char *prefix, PyObject *text, Py_ssize_t start,
              Py_ssize_t end, Py_ssize_t max_length)
{
    Py_ssize_t length = end - start;
    if (length > max_length)
        return append_owned(out, PyUnicode_FromFormat("%sskip:%c:%zd", prefix,
                                                      (int)PyUnicode_READ_CHAR(text, start),
                                                      length / 10 * 10));
    PyObject *part = PyUnicode_Substring(text, start, end);
    if (part == NULL)
        return -1;
    PyObject *token = PyUnicode_FromFormat("%s%U", prefix, part);
    Py_DECREF(part);
    return append_owned(out, token);
}

/* The tokens of the URL at start; returns its end (past any trailer) and sets *text_from to
   where text starts again (before the trailer), or -1 on error. */
static Py_ssize_t
append_url(PyObject *out, PyObject *text, const Text *t, Py_ssize_t start, PyObject *max_length,
           PyObject *url_tokens, Py_ssize_t *text_from)
{
    int kind = t->kind;
    const void *data = t->data;
    Py_ssize_t end = start + url_prefix(t, start);
    while (end < t->n && in_url(AT(end)))
        end++;
    Py_ssize_t stripped = end;
    while (stripped > start && is_trailer(AT(stripped - 1)))
        stripped--;
    PyObject *url = PyUnicode_Substring(text, start, stripped);
    if (url == NULL)
        return -1;
    PyObject *tokens = PyObject_CallFunctionObjArgs(url_tokens, url, max_length, NULL);
    Py_DECREF(url);
    if (tokens == NULL)
        return -1;
    PyObject *fast = PySequence_Fast(tokens, "url_tokens must return a sequence");
    Py_DECREF(tokens);
    if (fast == NULL)
        return -1;
    Py_ssize_t size = PyList_GET_SIZE(out);
    int failed = PyList_SetSlice(out, size, size, fast);
    Py_DECREF(fast);
    *text_from = stripped;
    return failed ? -1 : end;
}

static inline __attribute__((always_inline)) int
scan_linked(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t n,
            Py_ssize_t max_length, Py_ssize_t enough, PyObject *max_length_obj,
            PyObject *url_tokens)
{
    const Text t = {kind, data, n};
    Py_ssize_t pos = 0, text_from = 0;
    Py_ssize_t url = next_url(&t, 0);
    Address address;
    int has_address = next_address(&t, text, 0, &address);
    for (;;) {
        if (url >= 0 && url < pos)
            url = next_url(&t, pos);
        if (has_address > 0 && address.start < pos)
            has_address = next_address(&t, text, pos, &address);
        if (has_address < 0)
            return -1;
        Py_ssize_t start;
        int is_url;
        if (has_address && (url < 0 || address.start < url)) {
            start = address.start;
            is_url = address.is_url;
        } else if (url >= 0) {
            start = url;
            is_url = 1;
        } else {
            break;
        }
        if (PyList_GET_SIZE(out) > enough)
            return 0;
        if (scan(out, text, kind, data, text_from, start, max_length) < 0)
            return -1;
        if (is_url) {
            pos = append_url(out, text, &t, start, max_length_obj, url_tokens, &text_from);
            if (pos < 0)
                return -1;
        } else {
            if (append_capped(out, "email:", text, start, address.at, max_length) < 0 ||
                append_capped(out, "email:", text, address.at + 1, address.end, max_length) < 0)
                return -1;
            pos = text_from = address.end;
        }
    }
    return scan(out, text, kind, data, text_from, n, max_length);
}

#undef AT

/* url_tokens(url, max_length) -> tuple[str, ...]

   links.python_url_tokens(url, max_length) (its reference) on any str: of
       (?:([a-z][a-z0-9+.-]{0,15}):(?=//))?(?://)?(?:[^/?#@\s]*+@)?([\w.-]*)(?::(\d{1,5}))?
   matched at its start, "proto:<scheme>", "url:<host>" (dots stripped), "url:ip" for an
   IPv4 (\d{1,3}(\.\d{1,3}){3}) or all-digit host, else "url:" and each of its last four
   suffixes after a ".", "urlport:<port>", then "urlpath:" and each of the first ten runs of
   two letters or digits or more after the match; each part longer than max_length as its
   skip marker. No quantifier of the pattern can give back what it took and let the rest
   match otherwise: each part is the longest run of its characters. */

#define AT(i) PyUnicode_READ(kind, data, (i))

static inline int
is_lower_ascii(Py_UCS4 c)
{
    return c >= 'a' && c <= 'z';
}

/* The end of the scheme at 0 and its ":", when "//" follows, else 0. */
static Py_ssize_t
scheme_end(const Text *t)
{
    int kind = t->kind;
    const void *data = t->data;
    if (!(t->n > 0 && is_lower_ascii(AT(0))))
        return 0;
    Py_ssize_t e = 1;
    while (e < t->n && e <= 16) {
        Py_UCS4 c = AT(e);
        if (!(is_lower_ascii(c) || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-'))
            break;
        e++;
    }
    if (e <= 16 && starts_with(t, e, "://"))
        return e + 1;
    return 0;
}

/* Whether text[start:end] is \d{1,3}(\.\d{1,3}){3} or all digits (str.isdigit). */
static int
is_ip_host(const Text *t, Py_ssize_t start, Py_ssize_t end)
{
    int kind = t->kind;
    const void *data = t->data;
    int all_digits = 1, octets = 0, run = 0, ipv4 = 1;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = AT(i);
        all_digits &= Py_UNICODE_ISDIGIT(c) != 0;
        if (Py_UNICODE_ISDECIMAL(c)) {
            ipv4 &= ++run <= 3;
        } else if (c == '.') {
            ipv4 &= run > 0;
            run = 0;
            octets++;
        } else {
            ipv4 = 0;
        }
    }
    return all_digits || (ipv4 && octets == 3 && run > 0);
}

static inline __attribute__((always_inline)) int
url_parts(PyObject *out, PyObject *url, int kind, const void *data, Py_ssize_t n,
          Py_ssize_t max_length)
{
    const Text t = {kind, data, n};
    Py_ssize_t scheme = scheme_end(&t), p = scheme;
    if (scheme && append_capped(out, "proto:", url, 0, scheme - 1, max_length) < 0)
        return -1;
    if (starts_with(&t, p, "//"))
        p += 2;
    Py_ssize_t q = p; /* user info, dropped */
    while (q < n) {
        Py_UCS4 c = AT(q);
        if (c == '/' || c == '?' || c == '#' || c == '@' || Py_UNICODE_ISSPACE(c))
            break;
        q++;
    }
    if (q < n && AT(q) == '@')
        p = q + 1;
    Py_ssize_t host_start = p, host_end = p;
    while (host_end < n && (is_word(AT(host_end)) || AT(host_end) == '.' || AT(host_end) == '-'))
        host_end++;
    Py_ssize_t end = host_end, port_start = host_end + 1;
    int has_port = host_end + 1 < n && AT(host_end) == ':' && Py_UNICODE_ISDECIMAL(AT(port_start));
    if (has_port) {
        end = port_start;
        while (end < n && end - port_start < 5 && Py_UNICODE_ISDECIMAL(AT(end)))
            end++;
    }
    while (host_start < host_end && AT(host_start) == '.')
        host_start++;
    while (host_end > host_start && AT(host_end - 1) == '.')
        host_end--;
    if (host_start < host_end) {
        if (append_capped(out, "url:", url, host_start, host_end, max_length) < 0)
            return -1;
        if (is_ip_host(&t, host_start, host_end)) {
            if (append_owned(out, PyUnicode_FromString("url:ip")) < 0)
                return -1;
        } else {
            Py_ssize_t dots[4], found = 0; /* the last four, rightmost first */
            for (Py_ssize_t i = host_end - 1; i >= host_start && found < 4; i--)
                if (AT(i) == '.')
                    dots[found++] = i;
            while (found-- > 0)
                if (append_capped(out, "url:", url, dots[found] + 1, host_end, max_length) < 0)
                    return -1;
        }
    }
    if (has_port && append_capped(out, "urlport:", url, port_start, end, PY_SSIZE_T_MAX) < 0)
        return -1;
    int words = 0;
    for (Py_ssize_t i = end; i < n && words < 10;) {
        if (!(Py_UNICODE_ISALNUM(AT(i)))) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < n && Py_UNICODE_ISALNUM(AT(i)))
            i++;
        if (i - start >= 2) {
            if (append_capped(out, "urlpath:", url, start, i, max_length) < 0)
                return -1;
            words++;
        }
    }
    return 0;
}

#undef AT

static PyObject *
url_tokens(PyObject *self, PyObject *args)
{
    PyObject *url;
    Py_ssize_t max_length;
    if (!PyArg_ParseTuple(args, "Un", &url, &max_length))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    const void *data = PyUnicode_DATA(url);
    Py_ssize_t n = PyUnicode_GET_LENGTH(url);
    int failed;
    switch (PyUnicode_KIND(url)) {
    case PyUnicode_1BYTE_KIND:
        failed = url_parts(out, url, PyUnicode_1BYTE_KIND, data, n, max_length);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = url_parts(out, url, PyUnicode_2BYTE_KIND, data, n, max_length);
        break;
    default:
        failed = url_parts(out, url, PyUnicode_4BYTE_KIND, data, n, max_length);
    }
    PyObject *tuple = failed ? NULL : PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
}

static PyObject *
linked_words(PyObject *self, PyObject *args)
{
    PyObject *text, *max_length_obj, *url_tokens;
    Py_ssize_t enough;
    if (!PyArg_ParseTuple(args, "UO!nO", &text, &PyLong_Type, &max_length_obj, &enough, &url_tokens))
        return NULL;
    Py_ssize_t max_length = PyLong_AsSsize_t(max_length_obj);
    if (max_length == -1 && PyErr_Occurred())
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int failed;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        failed = scan_linked(out, text, PyUnicode_1BYTE_KIND, data, n, max_length, enough,
                             max_length_obj, url_tokens);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = scan_linked(out, text, PyUnicode_2BYTE_KIND, data, n, max_length, enough,
                             max_length_obj, url_tokens);
        break;
    default:
        failed = scan_linked(out, text, PyUnicode_4BYTE_KIND, data, n, max_length, enough,
                             max_length_obj, url_tokens);
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* received(value, max_length) -> list[str] | None

   headers.received_tokens(value, max_length) (its reference) for an ASCII value; None for
   any other, whose case-insensitive matches the reference alone reads. For each word of the
   value (split at white space), the matches of
       HOST  (?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){1,126}[a-z]{2,24})(?![\w-])
             (any case): "received:<suffix>" for each suffix of two labels or more of the
             lowercased host, capped at max_length, shortest first
       IPV4  (?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.]):
             "received:a.b", "received:a.b.c", "received:a.b.c.d"
   hosts of every word first, then networks. A label is the text up to the next "." (no
   label character is a "."), so a host is a run of whole labels and a top-level domain, the
   most labels first; a failed start leaves the run of [\w.-] it scanned, which holds no
   later start: linear in the value. tests/tokenize/test_headers.py checks it against the
   reference. */

#define HOST_LABELS 126

static inline int
ascii_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static inline int
ascii_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline int
ascii_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline int
ascii_space(unsigned char c) /* str.split()'s white space, in ASCII */
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The end of the label at q ([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])? then "."), past its ".",
   or -1. */
static Py_ssize_t
host_label(const unsigned char *s, Py_ssize_t q, Py_ssize_t n)
{
    Py_ssize_t e = q;
    while (e < n && (ascii_alnum(s[e]) || s[e] == '-'))
        e++;
    if (e == q || e >= n || s[e] != '.' || e - q > 63 || s[q] == '-' || s[e - 1] == '-')
        return -1;
    return e + 1;
}

/* The end of the host that starts at p, or -1 (see `received`). */
static Py_ssize_t
host_at(const unsigned char *s, Py_ssize_t p, Py_ssize_t n)
{
    Py_ssize_t ends[HOST_LABELS + 1];
    int labels = 0;
    ends[0] = p;
    while (labels < HOST_LABELS) {
        Py_ssize_t e = host_label(s, ends[labels], n);
        if (e < 0)
            break;
        ends[++labels] = e;
    }
    for (; labels >= 1; labels--) { /* the most labels first, as the greedy repeat */
        Py_ssize_t t = ends[labels], e = t;
        while (e < n && ascii_alpha(s[e]))
            e++;
        if (e - t >= 2 && e - t <= 24 &&
            !(e < n && (ascii_alnum(s[e]) || s[e] == '_' || s[e] == '-')))
            return e;
    }
    return -1;
}

/* "received:" + cap(ascii[:length], max_length) onto out. */
static int
append_received(PyObject *out, const char *ascii, Py_ssize_t length, Py_ssize_t max_length)
{
    PyObject *token;
    if (length > max_length) {
        token = PyUnicode_FromFormat("received:skip:%c:%zd", (int)(unsigned char)ascii[0],
                                     length / 10 * 10);
    } else {
        static const char prefix[] = "received:";
        Py_ssize_t size = sizeof prefix - 1;
        token = PyUnicode_New(size + length, 127);
        if (token != NULL) {
            memcpy(PyUnicode_1BYTE_DATA(token), prefix, size);
            memcpy(PyUnicode_1BYTE_DATA(token) + size, ascii, length);
        }
    }
    if (token == NULL)
        return -1;
    int failed = PyList_Append(out, token);
    Py_DECREF(token);
    return failed;
}

static int
append_host(PyObject *out, const unsigned char *s, Py_ssize_t start, Py_ssize_t end,
            Py_ssize_t max_length)
{
    char *lower = PyMem_Malloc(end - start + 1);
    if (lower == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = start; i < end; i++)
        lower[i - start] = (char)Py_TOLOWER(s[i]);
    Py_ssize_t length = end - start;
    /* Suffixes from the one of two labels to the whole host: each starts after a ".". */
    Py_ssize_t dots = 0, failed = 0;
    for (Py_ssize_t i = length - 1; i >= 0 && !failed; i--) {
        if (lower[i] != '.' || ++dots < 2)
            continue;
        failed = append_received(out, lower + i + 1, length - i - 1, max_length);
    }
    if (!failed)
        failed = append_received(out, lower, length, max_length);
    PyMem_Free(lower);
    return failed ? -1 : 0;
}

/* The end of the IPv4 address that starts at p, or -1; ends[i] the end of its octet i. */
static Py_ssize_t
ipv4_at(const unsigned char *s, Py_ssize_t p, Py_ssize_t n, Py_ssize_t ends[4])
{
    Py_ssize_t q = p;
    for (int octet = 0; octet < 4; octet++) {
        Py_ssize_t e = q;
        while (e < n && ascii_digit(s[e]))
            e++;
        if (e == q || e - q > 3)
            return -1;
        ends[octet] = e;
        if (octet < 3) {
            if (e >= n || s[e] != '.')
                return -1;
            q = e + 1;
        } else if (e < n && s[e] == '.') {
            return -1;
        }
    }
    return ends[3];
}

static inline int
host_char(unsigned char c) /* [\w.-] */
{
    return ascii_alnum(c) || c == '_' || c == '.' || c == '-';
}

/* The host tokens of the word s[start:end] onto hosts, its network tokens onto networks. */
static int
received_word(PyObject *hosts, PyObject *networks, const unsigned char *s, Py_ssize_t start,
              Py_ssize_t end, Py_ssize_t max_length)
{
    for (Py_ssize_t p = start; p < end;) {
        if (ascii_alnum(s[p]) && (p == start || !host_char(s[p - 1]))) {
            Py_ssize_t e = host_at(s, p, end);
            if (e >= 0) {
                if (append_host(hosts, s, p, e, max_length) < 0)
                    return -1;
                p = e;
                continue;
            }
        }
        p++;
    }
    for (Py_ssize_t p = start; p < end;) {
        Py_ssize_t ends[4];
        if (ascii_digit(s[p]) && (p == start || !(ascii_digit(s[p - 1]) || s[p - 1] == '.'))) {
            Py_ssize_t e = ipv4_at(s, p, end, ends);
            if (e >= 0) {
                for (int octets = 1; octets < 4; octets++)
                    if (append_received(networks, (const char *)s + p, ends[octets] - p, PY_SSIZE_T_MAX) < 0)
                        return -1;
                p = e;
                continue;
            }
        }
        p++;
    }
    return 0;
}

static PyObject *
received(PyObject *self, PyObject *args)
{
    PyObject *value;
    Py_ssize_t max_length;
    if (!PyArg_ParseTuple(args, "Un", &value, &max_length))
        return NULL;
    if (!PyUnicode_IS_ASCII(value))
        Py_RETURN_NONE;
    const unsigned char *s = PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    PyObject *hosts = PyList_New(0), *networks = PyList_New(0);
    if (hosts == NULL || networks == NULL)
        goto error;
    for (Py_ssize_t p = 0; p < n;) {
        while (p < n && ascii_space(s[p]))
            p++;
        Py_ssize_t start = p;
        int dotted = 0;
        while (p < n && !ascii_space(s[p]))
            dotted |= s[p++] == '.';
        /* both patterns hold a ".": a word without one gives nothing */
        if (dotted && received_word(hosts, networks, s, start, p, max_length) < 0)
            goto error;
    }
    Py_ssize_t size = PyList_GET_SIZE(hosts);
    if (PyList_SetSlice(hosts, size, size, networks) < 0)
        goto error;
    Py_DECREF(networks);
    return hosts;
error:
    Py_XDECREF(hosts);
    Py_XDECREF(networks);
    return NULL;
}

/* markup(text) -> (str, list[str])

   markup.python_markup(text) (its reference), on any str: text with each tag
   (<[a-z/!?][^<>]*+>) as a " ", and the value of each link attribute
       (?:href|src|action)\s*+=\s*+(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>]++))
   the leftmost first, each search going on after the last match (findall). A failed tag
   leaves a run without "<", a failed quoted value a run without its quote: no later try
   starts inside the run that failed it in the same way, and the scans stay linear.
   tests/tokenize/test_markup.py checks it against the reference. */

#define AT(i) PyUnicode_READ(kind, data, (i))

/* The end of the tag at p, or -1. */
static inline __attribute__((always_inline)) Py_ssize_t
tag_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t p)
{
    if (p + 1 >= n)
        return -1;
    Py_UCS4 c = AT(p + 1);
    if (!((c >= 'a' && c <= 'z') || c == '/' || c == '!' || c == '?'))
        return -1;
    for (Py_ssize_t q = p + 2; q < n; q++) {
        c = AT(q);
        if (c == '>')
            return q + 1;
        if (c == '<')
            return -1;
    }
    return -1;
}

/* The link attribute at p: its value's span, and the match's end; -1 if none. */
static inline __attribute__((always_inline)) Py_ssize_t
link_at(int kind, const void *data, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *start, Py_ssize_t *end)
{
    const Text t = {kind, data, n};
    Py_UCS4 c = AT(p);
    Py_ssize_t q;
    if (c == 'h' && starts_with(&t, p, "href"))
        q = p + 4;
    else if (c == 's' && starts_with(&t, p, "src"))
        q = p + 3;
    else if (c == 'a' && starts_with(&t, p, "action"))
        q = p + 6;
    else
        return -1;
    while (q < n && Py_UNICODE_ISSPACE(AT(q)))
        q++;
    if (!(q < n && AT(q) == '='))
        return -1;
    q++;
    while (q < n && Py_UNICODE_ISSPACE(AT(q)))
        q++;
    if (q >= n)
        return -1;
    Py_UCS4 quote = AT(q);
    if (quote == '"' || quote == '\'') {
        Py_ssize_t r = q + 1;
        while (r < n && AT(r) != quote && AT(r) != '<' && AT(r) != '>')
            r++;
        if (!(r < n && AT(r) == quote))
            return -1; /* neither other branch matches at a quote */
        *start = q + 1;
        *end = r;
        return r + 1;
    }
    Py_ssize_t r = q;
    while (r < n) {
        c = AT(r);
        if (c == '"' || c == '\'' || c == '<' || c == '>' || Py_UNICODE_ISSPACE(c))
            break;
        r++;
    }
    if (r == q)
        return -1;
    *start = q;
    *end = r;
    return r;
}

static inline __attribute__((always_inline)) int
scan_markup(PyObject *text, int kind, const void *data, Py_ssize_t n, PyObject *pieces,
            PyObject *links)
{
    /* Tags first: the text between them is joined by " " */
    Py_ssize_t from = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        if (AT(p) != '<')
            continue;
        Py_ssize_t end = tag_end(kind, data, n, p);
        if (end < 0)
            continue;
        if (append_owned(pieces, PyUnicode_Substring(text, from, p)) < 0)
            return -1;
        from = end;
        p = end - 1;
    }
    if (append_owned(pieces, PyUnicode_Substring(text, from, n)) < 0)
        return -1;
    for (Py_ssize_t p = 0; p < n;) {
        Py_ssize_t start, end, next = link_at(kind, data, n, p, &start, &end);
        if (next < 0) {
            p++;
            continue;
        }
        if (append_owned(links, PyUnicode_Substring(text, start, end)) < 0)
            return -1;
        p = next;
    }
    return 0;
}

#undef AT

static PyObject *
markup(PyObject *self, PyObject *args)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text))
        return NULL;
    PyObject *pieces = PyList_New(0), *links = PyList_New(0), *result = NULL;
    if (pieces == NULL || links == NULL)
        goto done;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int failed;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        failed = scan_markup(text, PyUnicode_1BYTE_KIND, data, n, pieces, links);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = scan_markup(text, PyUnicode_2BYTE_KIND, data, n, pieces, links);
        break;
    default:
        failed = scan_markup(text, PyUnicode_4BYTE_KIND, data, n, pieces, links);
    }
    if (failed)
        goto done;
    PyObject *space = PyUnicode_FromString(" ");
    if (space == NULL)
        goto done;
    PyObject *visible = PyUnicode_Join(space, pieces);
    Py_DECREF(space);
    if (visible == NULL)
        goto done;
    result = PyTuple_Pack(2, visible, links);
    Py_DECREF(visible);
done:
    Py_XDECREF(pieces);
    Py_XDECREF(links);
    return result;
}

/* folded(text, fold) -> str

   fold(text), where fold is text.nfkc_casefold (NFKC, then casefold: its reference), in less
   time on text that is mostly ASCII: unicodedata normalizes the whole of a text once any
   character fails its quick check, where a mail body usually holds a few non-ASCII
   characters among thousands. A normalization boundary precedes every ASCII character
   (NFKC_QC=Yes, ccc=0, and no composition pair has an ASCII second character), and case
   folding maps each character on its own, so fold is called on each run of non-ASCII
   characters together with the ASCII character before it (a combining mark composes with
   it: "e" U+0301), and the ASCII between runs is only lowercased here. Where runs are many
   (a call each costing more than normalizing the characters between them), fold is called
   once on the whole text. tests/tokenize/test_text.py checks it against the reference. */

/* Fewer characters than this per non-ASCII run, and fold reads the whole text at once. */
#define FEWEST_CHARS_PER_RUN 32

static PyObject *
lowered_ascii(int kind, const void *data, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *piece = PyUnicode_New(end - start, 127);
    if (piece == NULL)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(piece);
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        out[i - start] = (Py_UCS1)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    return piece;
}

static PyObject *
folded(PyObject *self, PyObject *args)
{
    PyObject *text, *fold;
    if (!PyArg_ParseTuple(args, "UO", &text, &fold))
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), runs = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(kind, data, i) >= 128 && (i == 0 || PyUnicode_READ(kind, data, i - 1) < 128))
            runs++;
    if (runs == 0 || runs > n / FEWEST_CHARS_PER_RUN)
        return PyObject_CallOneArg(fold, text);

    PyObject *pieces = PyList_New(0), *result = NULL;
    if (pieces == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t run = i; /* the next non-ASCII character */
        while (run < n && PyUnicode_READ(kind, data, run) < 128)
            run++;
        /* From the ASCII character before it, if any */
        Py_ssize_t start = run > i && run < n ? run - 1 : run;
        if (start > i && append_owned(pieces, lowered_ascii(kind, data, i, start)) < 0)
            goto done;
        if (run == n)
            break;
        Py_ssize_t end = run;
        while (end < n && PyUnicode_READ(kind, data, end) >= 128)
            end++;
        PyObject *segment = PyUnicode_Substring(text, start, end);
        if (segment == NULL)
            goto done;
        PyObject *piece = PyObject_CallOneArg(fold, segment);
        Py_DECREF(segment);
        if (piece != NULL && !PyUnicode_Check(piece)) {
            Py_DECREF(piece);
            PyErr_SetString(PyExc_TypeError, "fold must return a str");
            goto done;
        }
        if (append_owned(pieces, piece) < 0)
            goto done;
        i = end;
    }
    PyObject *empty = PyUnicode_New(0, 0);
    if (empty == NULL)
        goto done;
    result = PyUnicode_Join(empty, pieces);
    Py_DECREF(empty);
done:
    Py_DECREF(pieces);
    return result;
}

/* grams(text, n, prefix) -> [prefix + each distinct n-character substring of text], in order
   of first appearance: the last step of text.char_ngram_tokens (reference: text.python_grams).
   One pass: each substring is looked up in an open-addressing table of first positions, by a
   hash keyed per process (gram_seed, drawn from Python's randomized str hash), so that text
   written to collide cannot make the probes long. */
static uint64_t gram_seed;

static inline uint64_t
mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static PyObject *
grams(PyObject *self, PyObject *args)
{
    PyObject *text, *prefix;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "UnU", &text, &n, &prefix))
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t count = PyUnicode_GET_LENGTH(text) - n + 1, plen = PyUnicode_GET_LENGTH(prefix);
    Py_UCS4 prefix_max = PyUnicode_MAX_CHAR_VALUE(prefix);
    PyObject *out = PyList_New(0);
    if (out == NULL || count <= 0)
        return out;
    size_t size = 1;
    while (size < (size_t)count * 2)
        size <<= 1;
    Py_ssize_t *slots = PyMem_Calloc(size, sizeof(Py_ssize_t)); /* 1 + first position */
    if (slots == NULL) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t h = gram_seed;
        Py_UCS4 most = prefix_max;
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i + j);
            h = mix64(h ^ c);
            if (c > most)
                most = c;
        }
        size_t slot = (size_t)h & (size - 1);
        int known = 0;
        while (slots[slot] != 0) {
            Py_ssize_t at = slots[slot] - 1, j = 0;
            while (j < n && PyUnicode_READ(kind, data, at + j) == PyUnicode_READ(kind, data, i + j))
                j++;
            if (j == n) {
                known = 1;
                break;
            }
            slot = (slot + 1) & (size - 1);
        }
        if (known)
            continue;
        slots[slot] = i + 1;
        /* the exact largest character, so that the str is in its canonical (smallest) kind */
        PyObject *token = PyUnicode_New(plen + n, most);
        if (token != NULL) { /* written a character at a time: CopyCharacters checks the
                                largest character of the whole text, not of the gram */
            int token_kind = PyUnicode_KIND(token);
            void *token_data = PyUnicode_DATA(token);
            for (Py_ssize_t j = 0; j < plen; j++)
                PyUnicode_WRITE(token_kind, token_data, j, PyUnicode_READ_CHAR(prefix, j));
            for (Py_ssize_t j = 0; j < n; j++)
                PyUnicode_WRITE(token_kind, token_data, plen + j,
                                PyUnicode_READ(kind, data, i + j));
        }
        if (token == NULL || PyList_Append(out, token) < 0) {
            Py_XDECREF(token);
            PyMem_Free(slots);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(token);
    }
    PyMem_Free(slots);
    return out;
}

/* pairs(tokens, window, enough) -> list[str]
   filterd.tokenize.text.with_pairs (its reference): the tokens with, after each plain word,
   its pairs with each of the `window` plain words before it in its run, nearest first:
   "w1 w2", "w1 ~w3", "w1 ~~w4", ... A token holding ":" or starting with neither a letter
   or digit (str.isalnum) nor "_" or a currency sign ends a run and is kept as it is. As the
   reference, a run adds only as many words as it takes to pass `enough` tokens, and the list
   ends after the first run that passes them. */
#define MAX_PAIR_WINDOW 15 /* text._PAIR_SEPARATORS: distances 1..16 */

static inline int
pairable(PyObject *token)
{
    Py_UCS4 c = PyUnicode_READ_CHAR(token, 0);
    if (!(c == '_' || is_currency(c) || Py_UNICODE_ISALNUM(c)))
        return 0;
    return PyUnicode_FindChar(token, ':', 0, PyUnicode_GET_LENGTH(token), 1) == -1;
}

/* w1 + " " + "~" * (d - 1) + w2 */
static PyObject *
pair_token(PyObject *w1, PyObject *w2, Py_ssize_t d)
{
    Py_ssize_t n1 = PyUnicode_GET_LENGTH(w1), n2 = PyUnicode_GET_LENGTH(w2);
    Py_UCS4 most = PyUnicode_MAX_CHAR_VALUE(w1);
    if (PyUnicode_MAX_CHAR_VALUE(w2) > most)
        most = PyUnicode_MAX_CHAR_VALUE(w2);
    PyObject *out = PyUnicode_New(n1 + d + n2, most);
    if (out == NULL)
        return NULL;
    int kind = PyUnicode_KIND(out);
    void *data = PyUnicode_DATA(out);
    if (PyUnicode_KIND(w1) == kind && PyUnicode_KIND(w2) == kind) {
        memcpy(data, PyUnicode_DATA(w1), n1 * kind);
        memcpy((char *)data + (n1 + d) * kind, PyUnicode_DATA(w2), n2 * kind);
    } else {
        for (Py_ssize_t j = 0; j < n1; j++)
            PyUnicode_WRITE(kind, data, j, PyUnicode_READ_CHAR(w1, j));
        for (Py_ssize_t j = 0; j < n2; j++)
            PyUnicode_WRITE(kind, data, n1 + d + j, PyUnicode_READ_CHAR(w2, j));
    }
    PyUnicode_WRITE(kind, data, n1, ' ');
    for (Py_ssize_t j = 1; j < d; j++)
        PyUnicode_WRITE(kind, data, n1 + j, '~');
    return out;
}

/* text._add_run for tokens[start:end] */
static int
add_run(PyObject *out, PyObject *tokens, Py_ssize_t start, Py_ssize_t end, Py_ssize_t window,
        Py_ssize_t enough)
{
    Py_ssize_t left = enough - PyList_GET_SIZE(out); /* enough may be sys.maxsize */
    Py_ssize_t room = left >= PY_SSIZE_T_MAX - 1 ? PY_SSIZE_T_MAX : left + 1;
    Py_ssize_t n = window + (room > 1 ? room : 1) / (window + 1) + 1;
    if (n > end - start)
        n = end - start;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *word = PyList_GET_ITEM(tokens, start + j);
        if (PyList_Append(out, word) < 0)
            return -1;
        for (Py_ssize_t d = 1; d <= window && d <= j; d++) {
            if (append_owned(out, pair_token(PyList_GET_ITEM(tokens, start + j - d), word, d)) < 0)
                return -1;
        }
    }
    return 0;
}

static PyObject *
pairs(PyObject *self, PyObject *args)
{
    PyObject *tokens;
    Py_ssize_t window, enough;
    if (!PyArg_ParseTuple(args, "O!nn", &PyList_Type, &tokens, &window, &enough))
        return NULL;
    if (window < 1 || window > MAX_PAIR_WINDOW) {
        PyErr_SetString(PyExc_ValueError, "window must be 1 to 15");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(token) || PyUnicode_GET_LENGTH(token) == 0) {
            PyErr_SetString(PyExc_ValueError, "tokens must be non-empty str");
            return NULL;
        }
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (pairable(token))
            continue;
        if (i > start) {
            if (add_run(out, tokens, start, i, window, enough) < 0)
                goto error;
            if (PyList_GET_SIZE(out) > enough)
                return out;
        }
        if (PyList_Append(out, token) < 0)
            goto error;
        start = i + 1;
    }
    if (start < count && add_run(out, tokens, start, count, window, enough) < 0)
        goto error;
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* local_top(doc, strength, tiebreak, n, min_strength) -> int64 bytearray | None
   filterd.bayes.selection.local_top (its reference: local_top_python) for documents in
   order: per document, the positions of its n strongest entries with strength >= min_strength,
   ties by the smaller tiebreak, all positions ascending. doc, tiebreak: int64 buffers; strength:
   float64; equal lengths. None when doc is not non-decreasing. For m candidates of a document,
   O(m n) for n <= TOP_BY_INSERTION (mostly one comparison each), else one sort, O(m log m). */
#define TOP_BY_INSERTION 32
typedef struct {
    double strength;
    int64_t tiebreak;
    int64_t position;
} Clue;

static int
stronger_first(const void *a, const void *b)
{
    const Clue *x = a, *y = b;
    if (x->strength != y->strength)
        return x->strength > y->strength ? -1 : 1;
    return (x->tiebreak > y->tiebreak) - (x->tiebreak < y->tiebreak);
}

static int
position_order(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *
local_top(PyObject *self, PyObject *args)
{
    Py_buffer doc_buf, strength_buf, tiebreak_buf;
    Py_ssize_t n;
    double min_strength;
    if (!PyArg_ParseTuple(args, "y*y*y*nd", &doc_buf, &strength_buf, &tiebreak_buf, &n,
                          &min_strength))
        return NULL;
    PyObject *result = NULL, *out = NULL;
    Clue *clues = NULL;
    Py_ssize_t m = doc_buf.len / (Py_ssize_t)sizeof(int64_t);
    if (strength_buf.len != m * (Py_ssize_t)sizeof(double) ||
        tiebreak_buf.len != m * (Py_ssize_t)sizeof(int64_t) || n < 0) {
        PyErr_SetString(PyExc_ValueError, "doc, strength and tiebreak differ in length, or n < 0");
        goto done;
    }
    const int64_t *doc = doc_buf.buf, *tiebreak = tiebreak_buf.buf;
    const double *strength = strength_buf.buf;
    for (Py_ssize_t i = 1; i < m; i++) {
        if (doc[i] < doc[i - 1]) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
    }
    int64_t *keep = NULL;
    out = new_int64s(m, &keep);
    clues = PyMem_Malloc((m > 0 ? m : 1) * sizeof(Clue));
    if (out == NULL || clues == NULL) {
        if (clues == NULL)
            PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t start = 0, end; start < m; start = end) {
        Py_ssize_t candidates = 0;
        for (end = start; end < m && doc[end] == doc[start]; end++) {
            if (strength[end] >= min_strength) /* false for NaN, as in the reference */
                clues[candidates++] = (Clue){strength[end], tiebreak[end], end};
        }
        if (candidates <= n) {
            for (Py_ssize_t i = 0; i < candidates; i++)
                keep[kept++] = clues[i].position;
            continue;
        }
        if (n <= TOP_BY_INSERTION) {
            /* clues[0..n) holds the n strongest so far, strongest first: a candidate weaker
               than the n-th is one comparison */
            qsort(clues, n, sizeof(Clue), stronger_first);
            for (Py_ssize_t i = n; i < candidates; i++) {
                if (n == 0 || stronger_first(&clues[i], &clues[n - 1]) >= 0)
                    continue;
                Clue c = clues[i];
                Py_ssize_t j = n - 1;
                while (j > 0 && stronger_first(&c, &clues[j - 1]) < 0) {
                    clues[j] = clues[j - 1];
                    j--;
                }
                clues[j] = c;
            }
        } else {
            qsort(clues, candidates, sizeof(Clue), stronger_first);
        }
        for (Py_ssize_t i = 0; i < n; i++)
            keep[kept + i] = clues[i].position;
        qsort(keep + kept, n, sizeof(int64_t), position_order);
        kept += n;
    }
    if (PyByteArray_Resize(out, kept * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto done;
    result = out;
    out = NULL;
done:
    Py_XDECREF(out);
    PyMem_Free(clues);
    PyBuffer_Release(&doc_buf);
    PyBuffer_Release(&strength_buf);
    PyBuffer_Release(&tiebreak_buf);
    return result;
}

/* logistic_pass(x, y, rate, target_rate, k) -> the k weights as float64 bytes.

   x holds n rows of k float64 (C order), y n bytes (0 or not). From w = 0, for each row in
   order: z = x.w, p = sigma(z) = (1 + tanh(z / 2)) / 2, w += r (y - p) x, with r = target_rate
   for a row with y, else rate. Linear in n k. */
static PyObject *
logistic_pass(PyObject *self, PyObject *args)
{
    Py_buffer x_buf, y_buf;
    double rate, target_rate;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*y*ddn", &x_buf, &y_buf, &rate, &target_rate, &k))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = y_buf.len;
    if (k < 1 || x_buf.len != n * k * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "x must hold len(y) rows of k float64, k >= 1");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, k * (Py_ssize_t)sizeof(double));
    if (out == NULL)
        goto done;
    double *w = (double *)PyByteArray_AS_STRING(out);
    const double *x = x_buf.buf;
    const unsigned char *y = y_buf.buf;
    for (Py_ssize_t j = 0; j < k; j++)
        w[j] = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *row = x + i * k;
        double z = 0.0;
        for (Py_ssize_t j = 0; j < k; j++)
            z += row[j] * w[j];
        double p = 0.5 * (1.0 + tanh(z / 2.0));
        double g = y[i] ? target_rate * (1.0 - p) : rate * (0.0 - p);
        for (Py_ssize_t j = 0; j < k; j++)
            w[j] += g * row[j];
    }
done:
    PyBuffer_Release(&x_buf);
    PyBuffer_Release(&y_buf);
    return out;
}

/* hidden_spans(markup) -> [(start, end), ...]

   The runs of text between tags that a reader does not see: the walk of
   filterd.tokenize.hidden.python_hidden_spans (its reference), to the same spans on every
   input. Tags are its _TAG, attributes its _ATTRIBUTE (the first of a name counts), style
   declarations its _DECLARATION (the last of a property counts), colours its `colour`, lengths
   its `_length`; the stack of open elements is at most HIDDEN_MAX_DEPTH deep, an element
   deeper taking the place of the deepest. Linear: each character is read a bounded number of
   times but for a closing tag's search of the stack, at most HIDDEN_MAX_DEPTH entries.
   tests/tokenize/test_hidden.py checks that both agree. */

#define HIDDEN_MAX_DEPTH 256 /* hidden.MAX_DEPTH */
#define HIDDEN_CLOSE 48      /* hidden.CLOSE */
#define NO_COLOUR (-1)

typedef struct {
    int hidden;
    long colour;     /* 0xRRGGBB, or NO_COLOUR: never set */
    long background; /* 0xRRGGBB, or NO_COLOUR: an image, or a colour not understood */
} HSeen;

typedef struct {
    Py_ssize_t name, name_len; /* in the markup */
    HSeen seen;
} HOpen;

typedef struct {
    int kind;
    const void *data;
} HText;

#define HCH(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))

static int
h_space(Py_UCS4 c)
{
    return Py_UNICODE_ISSPACE(c);
}

static int
h_word(Py_UCS4 c) /* Python's \w on str */
{
    return c == '_' || Py_UNICODE_ISALNUM(c);
}

/* The span [*start, *end) without white space at either end (str.strip) */
static void
h_strip(const HText *t, Py_ssize_t *start, Py_ssize_t *end)
{
    while (*start < *end && h_space(HCH(t, *start)))
        (*start)++;
    while (*end > *start && h_space(HCH(t, *end - 1)))
        (*end)--;
}

static int
h_equals(const HText *t, Py_ssize_t start, Py_ssize_t end, const char *literal)
{
    Py_ssize_t n = (Py_ssize_t)strlen(literal);
    if (end - start != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (HCH(t, start + i) != (Py_UCS4)(unsigned char)literal[i])
            return 0;
    return 1;
}

static int
h_starts(const HText *t, Py_ssize_t start, Py_ssize_t end, const char *literal)
{
    Py_ssize_t n = (Py_ssize_t)strlen(literal);
    return end - start >= n && h_equals(t, start, start + n, literal);
}

static int
h_hex(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') ? (int)(c - '0') : (c >= 'a' && c <= 'f') ? (int)(c - 'a' + 10) : -1;
}

static const struct {
    const char *name;
    long rgb;
} h_named[] = {
    {"white", 0xffffff}, {"black", 0x000000}, {"silver", 0xc0c0c0}, {"gray", 0x808080},
    {"grey", 0x808080}, {"red", 0xff0000}, {"maroon", 0x800000}, {"yellow", 0xffff00},
    {"olive", 0x808000}, {"lime", 0x00ff00}, {"green", 0x008000}, {"aqua", 0x00ffff},
    {"teal", 0x008080}, {"blue", 0x0000ff}, {"navy", 0x000080}, {"fuchsia", 0xff00ff},
    {"purple", 0x800080}, {"snow", 0xfffafa}, {"ivory", 0xfffff0}, {"whitesmoke", 0xf5f5f5},
    {"ghostwhite", 0xf8f8ff},
};

/* rgb(…)'s number at *i: 1 to 3 ASCII digits; with `followed`, then white space and ",".
   -1 where none. */
static long
h_channel(const HText *t, Py_ssize_t *i, Py_ssize_t end, int followed)
{
    Py_ssize_t j = *i;
    long value = 0;
    while (j < end && j - *i < 4 && HCH(t, j) >= '0' && HCH(t, j) <= '9')
        j++;
    Py_ssize_t digits = j - *i;
    if (digits == 0 || (followed && digits > 3))
        return -1;
    if (digits > 3)
        digits = 3;
    for (Py_ssize_t k = 0; k < digits; k++)
        value = value * 10 + (long)(HCH(t, *i + k) - '0');
    j = *i + digits;
    if (followed) {
        while (j < end && h_space(HCH(t, j)))
            j++;
        if (j >= end || HCH(t, j) != ',')
            return -1;
        j++;
        while (j < end && h_space(HCH(t, j)))
            j++;
    }
    *i = j;
    return value > 255 ? 255 : value;
}

/* hidden.colour of [start, end) (lowercase already): 0xRRGGBB or NO_COLOUR */
static long
h_colour(const HText *t, Py_ssize_t start, Py_ssize_t end)
{
    h_strip(t, &start, &end);
    if (start < end && HCH(t, start) == '#') {
        Py_ssize_t digits = 0;
        while (start + 1 + digits < end && digits < 7 && h_hex(HCH(t, start + 1 + digits)) >= 0)
            digits++;
        for (int want = 3; want <= 6; want += 3) {
            Py_ssize_t after = start + 1 + want;
            if (digits >= want && (after == end || !h_word(HCH(t, after)))) {
                long rgb = 0;
                for (int k = 0; k < 6; k++)
                    rgb = rgb * 16 + h_hex(HCH(t, start + 1 + (want == 3 ? k / 2 : k)));
                return rgb;
            }
        }
    }
    if (h_starts(t, start, end, "rgb")) {
        Py_ssize_t i = start + 3;
        if (i < end && HCH(t, i) == 'a')
            i++;
        if (i < end && HCH(t, i) == '(') {
            i++;
            while (i < end && h_space(HCH(t, i)))
                i++;
            long r = h_channel(t, &i, end, 1);
            long g = r < 0 ? -1 : h_channel(t, &i, end, 1);
            long b = g < 0 ? -1 : h_channel(t, &i, end, 0);
            if (b >= 0)
                return (r << 16) | (g << 8) | b;
        }
    }
    Py_ssize_t word = start;
    while (word < end && !h_space(HCH(t, word)))
        word++;
    for (size_t k = 0; k < sizeof(h_named) / sizeof(h_named[0]); k++)
        if (h_equals(t, start, word, h_named[k].name))
            return h_named[k].rgb;
    return NO_COLOUR;
}

/* hidden._length of [start, end): 1 with *number and the unit's span, 0 for none; -1 on error */
static int
h_length(const HText *t, Py_ssize_t start, Py_ssize_t end, double *number, Py_ssize_t *unit,
         Py_ssize_t *unit_end)
{
    h_strip(t, &start, &end);
    Py_ssize_t i = start;
    if (i < end && HCH(t, i) == '-')
        i++;
    Py_ssize_t whole = i;
    while (i < end && HCH(t, i) >= '0' && HCH(t, i) <= '9')
        i++;
    if (i > whole) {
        if (i < end && HCH(t, i) == '.') {
            i++;
            while (i < end && HCH(t, i) >= '0' && HCH(t, i) <= '9')
                i++;
        }
    }
    else {
        if (i >= end || HCH(t, i) != '.')
            return 0;
        Py_ssize_t fraction = ++i;
        while (i < end && HCH(t, i) >= '0' && HCH(t, i) <= '9')
            i++;
        if (i == fraction)
            return 0;
    }
    char *ascii = PyMem_Malloc((size_t)(i - start) + 1);
    if (ascii == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = start; k < i; k++)
        ascii[k - start] = (char)HCH(t, k);
    ascii[i - start] = '\0';
    *number = PyOS_string_to_double(ascii, NULL, NULL);
    PyMem_Free(ascii);
    if (*number == -1.0 && PyErr_Occurred())
        return -1;
    while (i < end && h_space(HCH(t, i)))
        i++;
    *unit = i;
    while (i < end && ((HCH(t, i) >= 'a' && HCH(t, i) <= 'z') || HCH(t, i) == '%'))
        i++;
    *unit_end = i;
    return 1;
}

/* The style properties `_seen` reads, each its last declaration's value ([start, end),
   stripped; start -1: not declared) */
enum { P_DISPLAY, P_VISIBILITY, P_OPACITY, P_FONT_SIZE, P_LEFT, P_TOP, P_TEXT_INDENT, P_OVERFLOW,
       P_HEIGHT, P_MAX_HEIGHT, P_WIDTH, P_COLOR, P_BACKGROUND_COLOR, P_BACKGROUND, P_COUNT };
static const char *h_properties[P_COUNT] = {
    "display", "visibility", "opacity", "font-size", "left", "top", "text-indent", "overflow",
    "height", "max-height", "width", "color", "background-color", "background"};

static int
h_name_char(Py_UCS4 c) /* [a-z-] */
{
    return (c >= 'a' && c <= 'z') || c == '-';
}

static void
h_declarations(const HText *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t (*values)[2])
{
    Py_ssize_t i = start;
    while (i < end) {
        if (!h_name_char(HCH(t, i)) || (i > start && h_name_char(HCH(t, i - 1)))) {
            i++;
            continue;
        }
        Py_ssize_t name = i;
        while (i < end && h_name_char(HCH(t, i)))
            i++;
        Py_ssize_t name_end = i, k = i;
        while (k < end && h_space(HCH(t, k)))
            k++;
        if (k >= end || HCH(t, k) != ':')
            continue; /* at the run's end, which no declaration starts */
        k++;
        while (k < end && h_space(HCH(t, k)))
            k++;
        Py_ssize_t value = k;
        while (k < end && HCH(t, k) != ';')
            k++;
        for (int p = 0; p < P_COUNT; p++) {
            if (h_equals(t, name, name_end, h_properties[p])) {
                Py_ssize_t vs = value, ve = k;
                h_strip(t, &vs, &ve);
                values[p][0] = vs;
                values[p][1] = ve;
            }
        }
        i = k;
    }
}

/* A property's length number, or `absent` where not declared or not a length; -2 on error
   (*failed set) */
static double
h_number(const HText *t, Py_ssize_t (*values)[2], int p, double absent, int *failed)
{
    if (values[p][0] < 0)
        return absent;
    double number;
    Py_ssize_t unit, unit_end;
    int found = h_length(t, values[p][0], values[p][1], &number, &unit, &unit_end);
    if (found < 0)
        *failed = 1;
    return found == 1 ? number : absent;
}

static int
h_tiny(const HText *t, Py_ssize_t (*values)[2], int *failed)
{
    if (values[P_FONT_SIZE][0] < 0)
        return 0;
    double n;
    Py_ssize_t u, ue;
    int found = h_length(t, values[P_FONT_SIZE][0], values[P_FONT_SIZE][1], &n, &u, &ue);
    if (found < 0)
        *failed = 1;
    if (found != 1)
        return 0;
    if (ue == u || h_equals(t, u, ue, "px") || h_equals(t, u, ue, "pt"))
        return n <= 2.0;
    if (h_equals(t, u, ue, "em") || h_equals(t, u, ue, "rem"))
        return n <= 0.2;
    return h_equals(t, u, ue, "%") && n <= 20;
}

static int
h_off_screen(const HText *t, Py_ssize_t (*values)[2], int p, int *failed)
{
    if (values[p][0] < 0)
        return 0;
    double n;
    Py_ssize_t u, ue;
    int found = h_length(t, values[p][0], values[p][1], &n, &u, &ue);
    if (found < 0)
        *failed = 1;
    return found == 1 && (ue == u || h_equals(t, u, ue, "px") || h_equals(t, u, ue, "pt")) &&
           n <= -500.0;
}

/* The attributes `_seen` reads: their first occurrence's value ([start, end); start -1:
   absent; an attribute without a value is the empty span at its name's end) */
enum { A_HIDDEN, A_COLOR, A_TEXT, A_BACKGROUND, A_BGCOLOR, A_STYLE, A_COUNT };
static const char *h_attributes[A_COUNT] = {"hidden", "color", "text", "background", "bgcolor",
                                            "style"};

static int
h_attr_start(Py_UCS4 c) /* [a-z_:] */
{
    return (c >= 'a' && c <= 'z') || c == '_' || c == ':';
}

static int
h_attr_char(Py_UCS4 c) /* [-a-z0-9_:.] */
{
    return h_attr_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static int
h_unquoted(Py_UCS4 c) /* [^\s"'=<>`] */
{
    return !h_space(c) && c != '"' && c != '\'' && c != '=' && c != '<' && c != '>' && c != '`';
}

static void
h_attribute_values(const HText *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t (*values)[2])
{
    Py_ssize_t i = start;
    while (i < end) {
        if (!h_attr_start(HCH(t, i))) {
            i++;
            continue;
        }
        Py_ssize_t name = i;
        while (i < end && h_attr_char(HCH(t, i)))
            i++;
        Py_ssize_t name_end = i, k = i, vs = i, ve = i;
        while (k < end && h_space(HCH(t, k)))
            k++;
        if (k < end && HCH(t, k) == '=') {
            k++;
            while (k < end && h_space(HCH(t, k)))
                k++;
            if (k < end && (HCH(t, k) == '"' || HCH(t, k) == '\'')) {
                Py_UCS4 quote = HCH(t, k);
                Py_ssize_t q = k + 1;
                while (q < end && HCH(t, q) != quote)
                    q++;
                if (q < end) {
                    vs = k + 1;
                    ve = q;
                    i = q + 1;
                }
            }
            else {
                Py_ssize_t q = k;
                while (q < end && h_unquoted(HCH(t, q)))
                    q++;
                if (q > k) {
                    vs = k;
                    ve = q;
                    i = q;
                }
            }
        }
        for (int a = 0; a < A_COUNT; a++) {
            if (values[a][0] < 0 && h_equals(t, name, name_end, h_attributes[a])) {
                values[a][0] = vs;
                values[a][1] = ve;
            }
        }
    }
}

/* hidden._seen: what an element with the attributes [start, end) shows inside `parent`; 0, or
   -1 on error */
static int
h_seen(const HText *t, Py_ssize_t start, Py_ssize_t end, const HSeen *parent, HSeen *out)
{
    Py_ssize_t attributes[A_COUNT][2], style[P_COUNT][2];
    for (int a = 0; a < A_COUNT; a++)
        attributes[a][0] = -1;
    h_attribute_values(t, start, end, attributes);
    *out = *parent;
    out->hidden = parent->hidden || attributes[A_HIDDEN][0] >= 0;
    for (int a = A_COLOR; a <= A_TEXT; a++) {
        if (attributes[a][0] >= 0) {
            long c = h_colour(t, attributes[a][0], attributes[a][1]);
            if (c != NO_COLOUR)
                out->colour = c;
        }
    }
    if (attributes[A_BACKGROUND][0] >= 0)
        out->background = NO_COLOUR;
    if (attributes[A_BGCOLOR][0] >= 0)
        out->background = h_colour(t, attributes[A_BGCOLOR][0], attributes[A_BGCOLOR][1]);
    if (attributes[A_STYLE][0] < 0)
        return 0;
    for (int p = 0; p < P_COUNT; p++)
        style[p][0] = -1;
    h_declarations(t, attributes[A_STYLE][0], attributes[A_STYLE][1], style);
    int failed = 0;
    if (!out->hidden) {
        int overflow_hidden =
            style[P_OVERFLOW][0] >= 0 && h_starts(t, style[P_OVERFLOW][0], style[P_OVERFLOW][1], "hidden");
        out->hidden =
            (style[P_DISPLAY][0] >= 0 && h_starts(t, style[P_DISPLAY][0], style[P_DISPLAY][1], "none")) ||
            (style[P_VISIBILITY][0] >= 0 &&
             (h_starts(t, style[P_VISIBILITY][0], style[P_VISIBILITY][1], "hidden") ||
              h_starts(t, style[P_VISIBILITY][0], style[P_VISIBILITY][1], "collapse"))) ||
            h_number(t, style, P_OPACITY, 1.0, &failed) <= 0.1 || h_tiny(t, style, &failed) ||
            h_off_screen(t, style, P_LEFT, &failed) || h_off_screen(t, style, P_TOP, &failed) ||
            h_off_screen(t, style, P_TEXT_INDENT, &failed) ||
            (overflow_hidden && (h_number(t, style, P_HEIGHT, 1.0, &failed) <= 0 ||
                                 h_number(t, style, P_MAX_HEIGHT, 1.0, &failed) <= 0 ||
                                 h_number(t, style, P_WIDTH, 1.0, &failed) <= 0));
    }
    if (failed)
        return -1;
    if (style[P_COLOR][0] >= 0) {
        long c = h_colour(t, style[P_COLOR][0], style[P_COLOR][1]);
        if (c != NO_COLOUR)
            out->colour = c;
    }
    if (style[P_BACKGROUND_COLOR][0] >= 0)
        out->background = h_colour(t, style[P_BACKGROUND_COLOR][0], style[P_BACKGROUND_COLOR][1]);
    else if (style[P_BACKGROUND][0] >= 0)
        out->background = h_colour(t, style[P_BACKGROUND][0], style[P_BACKGROUND][1]);
    return 0;
}

static int
h_unseen(const HSeen *seen)
{
    if (seen->hidden)
        return 1;
    if (seen->colour == NO_COLOUR || seen->background == NO_COLOUR)
        return 0;
    long distance = 0;
    for (int shift = 0; shift <= 16; shift += 8) {
        long a = (seen->colour >> shift) & 0xff, b = (seen->background >> shift) & 0xff;
        distance += a > b ? a - b : b - a;
    }
    return distance < HIDDEN_CLOSE;
}

static const char *h_void[] = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                               "link", "meta", "param", "source", "track", "wbr"};

static int
h_append_span(PyObject *spans, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *span = Py_BuildValue("(nn)", start, end);
    if (span == NULL)
        return -1;
    int failed = PyList_Append(spans, span);
    Py_DECREF(span);
    return failed;
}

static PyObject *
hidden_spans(PyObject *self, PyObject *args)
{
    PyObject *markup;
    if (!PyArg_ParseTuple(args, "U", &markup))
        return NULL;
    HText text = {PyUnicode_KIND(markup), PyUnicode_DATA(markup)};
    const HText *t = &text;
    Py_ssize_t n = PyUnicode_GET_LENGTH(markup);
    PyObject *spans = PyList_New(0);
    if (spans == NULL)
        return NULL;
    HOpen *stack = PyMem_Malloc(sizeof(HOpen) * HIDDEN_MAX_DEPTH);
    if (stack == NULL) {
        Py_DECREF(spans);
        return PyErr_NoMemory();
    }
    int depth = 0;
    HSeen page = {0, NO_COLOUR, 0xffffff}, current = page;
    Py_ssize_t position = 0, i = 0;
    while (i < n) {
        if (HCH(t, i) != '<') {
            i++;
            continue;
        }
        /* _TAG: <(/?)([a-z][a-z0-9]*+)([^<>]*+)> */
        Py_ssize_t j = i + 1;
        int closing = j < n && HCH(t, j) == '/';
        if (closing)
            j++;
        if (j >= n || HCH(t, j) < 'a' || HCH(t, j) > 'z') {
            i++;
            continue;
        }
        Py_ssize_t name = j;
        while (j < n && ((HCH(t, j) >= 'a' && HCH(t, j) <= 'z') || (HCH(t, j) >= '0' && HCH(t, j) <= '9')))
            j++;
        Py_ssize_t name_end = j;
        while (j < n && HCH(t, j) != '<' && HCH(t, j) != '>')
            j++;
        if (j >= n || HCH(t, j) != '>') {
            i++;
            continue;
        }
        if (i > position && h_unseen(&current) && h_append_span(spans, position, i) < 0)
            goto error;
        position = j + 1;
        if (closing) {
            for (int d = depth - 1; d >= 0; d--) {
                Py_ssize_t len = stack[d].name_len;
                int same = len == name_end - name;
                for (Py_ssize_t k = 0; same && k < len; k++)
                    same = HCH(t, stack[d].name + k) == HCH(t, name + k);
                if (same) {
                    depth = d;
                    current = depth ? stack[depth - 1].seen : page;
                    break;
                }
            }
        }
        else {
            int is_void = 0;
            for (size_t k = 0; !is_void && k < sizeof(h_void) / sizeof(h_void[0]); k++)
                is_void = h_equals(t, name, name_end, h_void[k]);
            if (!is_void && !(j > name_end && HCH(t, j - 1) == '/')) {
                HSeen seen;
                if (h_seen(t, name_end, j, &current, &seen) < 0)
                    goto error;
                current = seen;
                if (depth == HIDDEN_MAX_DEPTH) /* it takes the place of the deepest */
                    depth--;
                stack[depth].name = name;
                stack[depth].name_len = name_end - name;
                stack[depth].seen = current;
                depth++;
            }
        }
        i = j + 1;
    }
    if (n > position && h_unseen(&current) && h_append_span(spans, position, n) < 0)
        goto error;
    PyMem_Free(stack);
    return spans;
error:
    PyMem_Free(stack);
    Py_DECREF(spans);
    return NULL;
}

/* split_words(text) -> [(start, end), ...]

   The runs of filterd.tokenize.text.python_split_words (its reference): SPLIT_MIN_LETTERS or
   more single letters a-z, one after another with the same one separator between each two
   (" ", "." or "-"), a letter single when no word character (Python's \w: alphanumeric or
   "_") touches it but the separators; none just after a word character or one of "./@:-", and
   a run of "." or "-" not followed by "@", "/" or its separator and a word character. Linear:
   a run that fails is shorter than SPLIT_MIN_LETTERS, or one of "." or "-" whose later letters
   fail at once (the separator before them); a run found is passed over. */

#define SPLIT_MIN_LETTERS 4 /* text.SPLIT_MIN_LETTERS */

static int
s_word(Py_UCS4 c)
{
    return c == '_' || Py_UNICODE_ISALNUM(c);
}

static int
s_after_word(Py_UCS4 c) /* what a run may not follow */
{
    return s_word(c) || c == '.' || c == '/' || c == '@' || c == ':' || c == '-';
}

static int
s_letter(Py_UCS4 c)
{
    return c >= 'a' && c <= 'z';
}

static PyObject *
split_words(PyObject *self, PyObject *args)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text))
        return NULL;
    HText source = {PyUnicode_KIND(text), PyUnicode_DATA(text)};
    const HText *t = &source;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *spans = PyList_New(0);
    if (spans == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i + 1 < n) {
        Py_UCS4 separator = HCH(t, i + 1);
        if (!s_letter(HCH(t, i)) || (separator != ' ' && separator != '.' && separator != '-') ||
            (i > 0 && s_after_word(HCH(t, i - 1)))) {
            i++;
            continue;
        }
        Py_ssize_t last = i; /* the run's last letter */
        int letters = 1;
        while (last + 2 < n && HCH(t, last + 1) == separator && s_letter(HCH(t, last + 2)) &&
               (last + 3 >= n || !s_word(HCH(t, last + 3)))) {
            last += 2;
            letters++;
        }
        Py_UCS4 next = last + 1 < n ? HCH(t, last + 1) : 0;
        int linked = separator != ' ' &&
                     (next == '@' || next == '/' ||
                      (next == separator && last + 2 < n && s_word(HCH(t, last + 2))));
        if (letters < SPLIT_MIN_LETTERS || linked) {
            i++;
            continue;
        }
        if (h_append_span(spans, i, last + 1) < 0) {
            Py_DECREF(spans);
            return NULL;
        }
        i = last + 1;
    }
    return spans;
}

static PyMethodDef methods[] = {
    {"logistic_pass", logistic_pass, METH_VARARGS,
     "logistic_pass(x, y, rate, target_rate, k) -> the weights of one pass, as float64 bytes: "
     "fusion.logistic_pass_python."},
    {"local_top", local_top, METH_VARARGS,
     "local_top(doc, strength, tiebreak, n, min_strength) -> the entries kept, as int64 bytes: "
     "selection.local_top_python."},
    {"pairs", pairs, METH_VARARGS,
     "pairs(tokens, window, enough) -> the tokens with their word pairs: text.with_pairs."},
    {"grams", grams, METH_VARARGS,
     "grams(text, n, prefix) -> prefix + each distinct n-character substring: text.python_grams."},
    {"hidden_spans", hidden_spans, METH_VARARGS,
     "hidden_spans(markup) -> [(start, end)] of text a reader does not see: hidden.python_hidden_spans."},
    {"split_words", split_words, METH_VARARGS,
     "split_words(text) -> [(start, end)] of words written a letter at a time: text.python_split_words."},
    {"markup", markup, METH_VARARGS,
     "markup(text) -> (text with tags as spaces, link values): markup.python_markup."},
    {"url_tokens", url_tokens, METH_VARARGS,
     "url_tokens(url, max_length) -> the tokens of links.python_url_tokens."},
    {"received", received, METH_VARARGS,
     "received(value, max_length) -> the tokens of headers.received_tokens, None if not ASCII."},
    {"linked_words", linked_words, METH_VARARGS,
     "linked_words(text, max_length, enough, url_tokens) -> the tokens of text.linked_tokens."},
    {"folded", folded, METH_VARARGS,
     "folded(text, fold) -> fold(text) for fold = text.nfkc_casefold, the ASCII lowercased here."},
    {"words", words, METH_VARARGS, "words(text, max_length) -> the words of plain_tokens (see text.py)."},
    {"count_keys", count_keys, METH_VARARGS,
     "count_keys(docs, base1, base2, mask0, mask1, mask2) -> (indptr, keys, counts, token_index) as int64 bytearrays, "
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
    init_ascii_class();
    PyObject *key = PyUnicode_FromString("filterd._speedups.grams");
    Py_hash_t seed = key == NULL ? -1 : PyObject_Hash(key); /* randomized per process */
    Py_XDECREF(key);
    if (seed == -1 && PyErr_Occurred())
        return NULL;
    gram_seed = mix64((uint64_t)seed);
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "P1", (long)P1) < 0 || PyModule_AddIntConstant(m, "P2", (long)P2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
