/* backalley._fastplay: the replay's trick loop for regular tricks, in C (optional).
 *
 * This module decides no rule.  It reads the tables that backalley.replay
 * packs from a Ruleset's FastTables (every entry computed by the Ruleset's
 * own methods) and runs exactly the fast path of replay._tricks: a trick is
 * taken here only when every card is in its player's hand, every follower
 * followed as the tables require and the lead was allowed.  At the first
 * trick that is not such a trick (a wrong leader, a card not in hand, any
 * doubtful play, an unexpected name), it stops and returns the trick's index:
 * the Python loop replays that trick and the rest, and reports every
 * violation.  Without this module (no C compiler, BACKALLEY_PURE_PYTHON=1)
 * the Python loop replays every trick, with the same results.
 *
 * play(tricks, hand, won, cards, leaders, winners, broken_before,
 *      table, names, side_of, expected_leader, exempt, broken)
 *   -> (next trick, broken, expected_leader)
 * cards, leaders, winners, broken_before: bytearrays the tricks taken here are appended to
 *   (a byte per card, leader, winner and 0/1 flag).
 *
 * table: int64 array (native order) of NCARDS*(2 + 4 + NCARDS) + 1 entries:
 *   [0]                      trump mask
 *   [1 + c]                  is_trump of card c (0/1)
 *   [1 + N + c]              follow mask after a lead of c
 *   [1 + 2N + 4c + p]        forced follow kind of position p after a lead of c
 *   [1 + 6N + N*led + c]     win key of card c in a trick led with `led`
 * mask(names, table) -> bitmask of a list of distinct card names, or -1.
 * deal(N, E, S, W, stock, trump_card, n, deck, names)
 *   -> (mask N, E, S, W, trump card, stock[0], stock[1], stock length) or None: the cards of a
 *   deal as ints when nothing about them is in doubt (see deal() below); else None, and the
 *   Python set-up finds and reports what is wrong.
 *
 * names: bytes of 128*128: card index + 1 of the two-character name (0: none),
 *        and at [ord(seat)] (single character) the seat index + 1.
 * side_of: bytes of 4.
 *
 * rows(outcomes, templates, codes) -> (deals, deal_nulls, sides, side_nulls) or None: the store's
 *   packed deal and side rows of a game's replayed deals (backalley.store.rows: DEAL_INTS and
 *   SIDE_INTS, int64 in native order, NULL as 0, a 0/1 byte per value in the masks, a mask b""
 *   when no value is NULL).  It reads each DealOutcome's ints and copies each side's contract
 *   fields from its template, templates[deal * sides + side] (bytes of six int64: kind, contract,
 *   multiplier, board level, a mask of the trick counts that make the contract, NULL bits), which
 *   backalley.store.rows builds from the ruleset; codes (bytes) is the code of each side.  None (nothing written) when a value is not
 *   as expected (the Python row builder then does the game).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#ifndef Py_T_OBJECT_EX /* Python < 3.12: the member types and flags are in structmember.h */
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

#define NCARDS 54
#define FREE 0
#define HIGHEST_TRUMP 1

static PyObject *s_leader, *s_cards;
static PyObject *s_number, *s_hand_size, *s_dealer, *s_trump_card, *s_trump, *s_swap_seat, *s_swap_drawn, *s_pass_out,
    *s_contracts, *s_opening_leader, *s_winners, *s_tricks, *s_points, *s_recorded_tricks, *s_recorded_points;

static int card_of(PyObject *name, const unsigned char *names) {
    if (!PyUnicode_Check(name) || !PyUnicode_IS_COMPACT_ASCII(name) || PyUnicode_GET_LENGTH(name) != 2) return -1;
    const unsigned char *p = PyUnicode_1BYTE_DATA(name);
    return (int)names[(p[0] << 7) | p[1]] - 1;
}

static int seat_of(PyObject *name, const unsigned char *names) {
    if (!PyUnicode_Check(name) || !PyUnicode_IS_COMPACT_ASCII(name) || PyUnicode_GET_LENGTH(name) != 1) return -1;
    return (int)names[PyUnicode_1BYTE_DATA(name)[0]] - 1;
}

static int forced_one(int64_t kind, uint64_t tmask, uint64_t h, uint64_t b) {
    uint64_t trumps = h & tmask;
    if (kind == FREE || !trumps) return 1;
    if (kind == HIGHEST_TRUMP) return b == (UINT64_C(1) << (63 - __builtin_clzll(trumps)));
    return b == (trumps & (~trumps + 1));
}

/* The trick's fields, read at their slot offsets: a trick is a msgspec Struct, whose fields are
 * slot members; the generic attribute lookup cost more than the rest of the trick.  The offsets
 * are those of the type's own member descriptors, found once per type; any other object (or an
 * empty slot) takes PyObject_GetAttr. */
static PyTypeObject *tr_type;
static Py_ssize_t tr_leader = -1, tr_cards = -1;

static Py_ssize_t slot_offset(PyTypeObject *tp, PyObject *name) {
    PyObject *d = PyObject_GetAttr((PyObject *)tp, name);
    if (!d) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type) && PyType_IsSubtype(tp, ((PyMemberDescrObject *)d)->d_common.d_type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == Py_T_OBJECT_EX && !(m->flags & Py_READONLY)) offset = m->offset;
    }
    Py_DECREF(d);
    return offset;
}

static PyObject *field(PyObject *obj, PyObject *name, Py_ssize_t offset) {
    if (offset >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + offset);
        if (v) return Py_NewRef(v);
    }
    return PyObject_GetAttr(obj, name);
}

static void learn_type(PyTypeObject *tp) {
    if (tp == tr_type) return;
    tr_type = tp;
    tr_leader = slot_offset(tp, s_leader);
    tr_cards = slot_offset(tp, s_cards);
}

/* Append n bytes to a bytearray at once: one resize, one copy. */
static int extend_bytes(PyObject *array, const unsigned char *v, Py_ssize_t n) {
    if (n == 0) return 0;
    Py_ssize_t len = PyByteArray_GET_SIZE(array);
    if (PyByteArray_Resize(array, len + n) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(array) + len, v, (size_t)n);
    return 0;
}

/* ``(tricks done, broken, expected leader)``, built item by item (Py_BuildValue parses its format
 * string at every call, once a deal). */
static PyObject *play_result(Py_ssize_t j, int broken, long expected) {
    PyObject *done = PyLong_FromSsize_t(j), *next = PyLong_FromLong(expected);
    if (!done || !next) {
        Py_XDECREF(done);
        Py_XDECREF(next);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(3, done, broken ? Py_True : Py_False, next);
    Py_DECREF(done);
    Py_DECREF(next);
    return out;
}

/* The arguments as METH_FASTCALL passes them: no format string to parse, no buffers to acquire (the
 * replay calls this once per deal).  Returns 0, or -1 with a TypeError set. */
static int list_arg(PyObject *const *args, int i, PyObject **out) {
    if (!PyList_Check(args[i])) {
        PyErr_Format(PyExc_TypeError, "_fastplay.play: argument %d must be a list", i + 1);
        return -1;
    }
    *out = args[i];
    return 0;
}

static int bytearray_arg(PyObject *const *args, int i, PyObject **out) {
    if (!PyByteArray_Check(args[i])) {
        PyErr_Format(PyExc_TypeError, "_fastplay.play: argument %d must be a bytearray", i + 1);
        return -1;
    }
    *out = args[i];
    return 0;
}

static int bytes_arg(PyObject *const *args, int i, const char **out, Py_ssize_t *len) {
    if (!PyBytes_Check(args[i])) {
        PyErr_Format(PyExc_TypeError, "_fastplay: argument %d must be bytes", i + 1);
        return -1;
    }
    *out = PyBytes_AS_STRING(args[i]);
    *len = PyBytes_GET_SIZE(args[i]);
    return 0;
}

static int int_arg(PyObject *const *args, int i, int *out) {
    long v = PyLong_AsLong(args[i]);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int)v;
    return 0;
}

static PyObject *play(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    PyObject *tricks, *hand, *won, *cards, *leaders, *winners, *broken_before;
    const char *table_buf, *names_buf, *side_buf;
    Py_ssize_t table_len, names_len, side_len;
    int expected, exempt, broken;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "_fastplay.play takes 13 arguments");
        return NULL;
    }
    if (list_arg(args, 0, &tricks) || list_arg(args, 1, &hand) || list_arg(args, 2, &won) ||
        bytearray_arg(args, 3, &cards) || bytearray_arg(args, 4, &leaders) || bytearray_arg(args, 5, &winners) ||
        bytearray_arg(args, 6, &broken_before) || bytes_arg(args, 7, &table_buf, &table_len) ||
        bytes_arg(args, 8, &names_buf, &names_len) || bytes_arg(args, 9, &side_buf, &side_len) ||
        int_arg(args, 10, &expected) || int_arg(args, 11, &exempt))
        return NULL;
    if ((broken = PyObject_IsTrue(args[12])) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t j = 0, ntricks = PyList_GET_SIZE(tricks), nwon = PyList_GET_SIZE(won);
    if (table_len != (Py_ssize_t)sizeof(int64_t) * (1 + NCARDS * (6 + NCARDS)) || names_len != 128 * 128 ||
        side_len != 4 || PyList_GET_SIZE(hand) != 4) {
        PyErr_SetString(PyExc_ValueError, "_fastplay.play: tables of the wrong size");
        goto done;
    }
    const int64_t *t = (const int64_t *)table_buf;
    const uint64_t tmask = (uint64_t)t[0];
    const int64_t *is_trump = t + 1, *must_by = t + 1 + NCARDS, *forced = t + 1 + 2 * NCARDS;
    const int64_t *keys = t + 1 + 6 * NCARDS;
    const unsigned char *nm = (const unsigned char *)names_buf, *sides = (const unsigned char *)side_buf;
    uint64_t h[4];
    for (int s = 0; s < 4; s++) {
        h[s] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(hand, s));
        if (h[s] == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear(); /* a hand beyond 64 bits: the Python loop takes every trick */
            result = play_result(0, broken, expected);
            goto done;
        }
    }
    /* What the tricks give, kept here and appended to the bytearrays at once at the end. */
    long won_now[4];
    unsigned char small[7 * 16], *buf = small;
    if (nwon > 4) {
        PyErr_SetString(PyExc_ValueError, "_fastplay.play: more than four sides");
        goto done;
    }
    for (Py_ssize_t k = 0; k < nwon; k++) {
        won_now[k] = PyLong_AsLong(PyList_GET_ITEM(won, k));
        if (won_now[k] == -1 && PyErr_Occurred()) goto done;
    }
    if (ntricks > 16 && !(buf = PyMem_Malloc(7 * (size_t)ntricks))) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *out_cards = buf, *out_leaders = buf + 4 * ntricks, *out_winners = buf + 5 * ntricks,
         *out_broken = buf + 6 * ntricks;
    for (; j < ntricks; j++) {
        PyObject *tr = PyList_GET_ITEM(tricks, j);
        learn_type(Py_TYPE(tr));
        PyObject *lo = field(tr, s_leader, tr_leader);
        if (!lo) goto release;
        int leader = seat_of(lo, nm);
        Py_DECREF(lo);
        if (leader < 0 || (expected >= 0 && leader != expected)) break;
        PyObject *cl = field(tr, s_cards, tr_cards);
        if (!cl) goto release;
        int c[4] = {-1, -1, -1, -1};
        if (PyList_Check(cl) && PyList_GET_SIZE(cl) == 4)
            for (int k = 0; k < 4; k++) c[k] = card_of(PyList_GET_ITEM(cl, k), nm);
        Py_DECREF(cl);
        if (c[0] < 0 || c[1] < 0 || c[2] < 0 || c[3] < 0) break;
        int s[4] = {leader, (leader + 1) & 3, (leader + 2) & 3, (leader + 3) & 3};
        uint64_t b[4], hh[4];
        for (int k = 0; k < 4; k++) b[k] = UINT64_C(1) << c[k], hh[k] = h[s[k]];
        uint64_t must = (uint64_t)must_by[c[0]];
        const int64_t *f = forced + 4 * c[0];
        int ok = (hh[0] & b[0]) && (hh[1] & b[1]) && (hh[2] & b[2]) && (hh[3] & b[3]);
        for (int k = 1; ok && k < 4; k++) ok = (b[k] & must) || !(hh[k] & must);
        ok = ok && (broken || !is_trump[c[0]] || !(hh[0] & ~tmask) || ((exempt >> leader) & 1));
        for (int k = 1; ok && k < 4; k++) ok = forced_one(f[k], tmask, hh[k], b[k]);
        if (!ok) break;
        for (int k = 0; k < 4; k++) h[s[k]] = hh[k] ^ b[k];
        const int64_t *key = keys + NCARDS * c[0];
        int64_t best = key[c[0]];
        int pos = 0;
        for (int k = 1; k < 4; k++)
            if (key[c[k]] > best) best = key[c[k]], pos = k;
        int w = (leader + pos) & 3, side = sides[w];
        if (side >= nwon) {
            PyErr_SetString(PyExc_ValueError, "_fastplay.play: a seat's side is out of range");
            goto release;
        }
        for (int k = 0; k < 4; k++) out_cards[4 * j + k] = (unsigned char)c[k];
        out_leaders[j] = (unsigned char)leader, out_winners[j] = (unsigned char)w, out_broken[j] = (unsigned char)broken;
        won_now[side]++;
        if (!broken) broken = is_trump[c[0]] || is_trump[c[1]] || is_trump[c[2]] || is_trump[c[3]];
        expected = w;
    }
    if (extend_bytes(cards, out_cards, 4 * j) || extend_bytes(leaders, out_leaders, j) ||
        extend_bytes(winners, out_winners, j) || extend_bytes(broken_before, out_broken, j))
        goto release;
    for (Py_ssize_t k = 0; k < nwon; k++) {
        PyObject *o = PyLong_FromLong(won_now[k]);
        if (!o) goto release;
        PyList_SetItem(won, k, o);
    }
    for (int s = 0; s < 4; s++) {
        PyObject *o = PyLong_FromUnsignedLongLong(h[s]);
        if (!o) goto release;
        PyList_SetItem(hand, s, o);
    }
    result = play_result(j, broken, expected);
release:
    if (buf != small) PyMem_Free(buf);
done:
    return result;
}

/* mask(names, table) -> the cards of a list of card names as a bitmask; -1 when a name repeats
 * or is not a card (the caller then finds which, with its messages). */
static PyObject *mask(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *names;
    Py_ssize_t names_len;
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_fastplay.mask takes a list and the names table");
        return NULL;
    }
    if (bytes_arg(args, 1, &names, &names_len)) return NULL;
    if (names_len != 128 * 128) {
        PyErr_SetString(PyExc_ValueError, "_fastplay.mask: a names table of the wrong size");
        return NULL;
    }
    PyObject *list = args[0];
    long long m = 0;
    for (Py_ssize_t i = 0, n = PyList_GET_SIZE(list); i < n; i++) {
        int c = card_of(PyList_GET_ITEM(list, i), (const unsigned char *)names);
        if (c < 0 || (m >> c) & 1) {
            m = -1;
            break;
        }
        m |= 1LL << c;
    }
    return PyLong_FromLongLong(m);
}

/* deal(N, E, S, W, stock, trump_card, n, deck, names): the four hands (lists of names), the stock
 * (a list, or None when none is recorded), the trump card (a name, or None), the hand size `n`
 * and the deck (a mask) of the ruleset.  Returns the hands' masks, the trump card, the stock's
 * first two cards and its length (-1 for each one absent) when every hand holds `n` cards, every
 * name is a card of `deck`, and no card appears twice, except the turned card on top of the
 * stock.  Anything else returns None: this decides no rule, it only says "regular". */
static PyObject *deal(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *names;
    Py_ssize_t names_len;
    int n;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "_fastplay.deal takes 9 arguments");
        return NULL;
    }
    if (bytes_arg(args, 8, &names, &names_len) || int_arg(args, 6, &n)) return NULL;
    if (names_len != 128 * 128) {
        PyErr_SetString(PyExc_ValueError, "_fastplay.deal: a names table of the wrong size");
        return NULL;
    }
    long long deck = PyLong_AsLongLong(args[7]);
    if (deck == -1 && PyErr_Occurred()) return NULL;
    const unsigned char *tab = (const unsigned char *)names;
    long long m[4], seen = 0;
    for (int s = 0; s < 4; s++) {
        PyObject *list = args[s];
        if (!PyList_Check(list) || PyList_GET_SIZE(list) != n) Py_RETURN_NONE;
        long long h = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int c = card_of(PyList_GET_ITEM(list, i), tab);
            if (c < 0 || ((seen | h) >> c) & 1 || !((deck >> c) & 1)) Py_RETURN_NONE;
            h |= 1LL << c;
        }
        m[s] = h;
        seen |= h;
    }
    int tc = -1;
    if (args[5] != Py_None) {
        tc = card_of(args[5], tab);
        if (tc < 0 || (seen >> tc) & 1 || !((deck >> tc) & 1)) Py_RETURN_NONE;
        seen |= 1LL << tc;
    }
    int s0 = -1, s1 = -1;
    Py_ssize_t size = -1;
    if (args[4] != Py_None) {
        PyObject *list = args[4];
        if (!PyList_Check(list)) Py_RETURN_NONE;
        size = PyList_GET_SIZE(list);
        for (Py_ssize_t i = 0; i < size; i++) {
            int c = card_of(PyList_GET_ITEM(list, i), tab);
            if (c < 0 || !((deck >> c) & 1)) Py_RETURN_NONE;
            if (i == 0) s0 = c;
            if (i == 1) s1 = c;
            if (i == 0 && c == tc) continue; /* the turned card, on top of the stock */
            if ((seen >> c) & 1) Py_RETURN_NONE;
            seen |= 1LL << c;
        }
    }
    /* (built item by item: Py_BuildValue parses its format string at every call, once a deal) */
    const long long v[8] = {m[0], m[1], m[2], m[3], tc, s0, s1, (long long)size};
    PyObject *out = PyTuple_New(8);
    if (!out) return NULL;
    for (int i = 0; i < 8; i++) {
        PyObject *o = PyLong_FromLongLong(v[i]);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, o);
    }
    return out;
}


/* --- rows(): a game's deal and side rows as packed int64 columns --------------------------------- */

#define DEAL_WIDTH 14 /* backalley.store.rows.DEAL_INTS */
#define SIDE_WIDTH 10 /* backalley.store.rows.SIDE_INTS */
#define TEMPLATE_WIDTH 6 /* per side: kind, contract, multiplier, board level, made mask, NULL bits */
#define MADE_BITS 63

/* An int as int64, as the Python packer stores it: 1 with *out set; 0 for NULL (None, or an int
 * outside int64); -2 for anything else (the Python row builder then does the game); -1 on error. */
static int int_value(PyObject *v, int64_t *out) {
    if (v == Py_None) return 0;
    if (!PyLong_Check(v)) return -2;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return 0;
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)x;
    return 1;
}

/* Attribute `name` of `obj` into slot `k` of a row (value and NULL byte); 1 ok, -2 fall back, -1 error. */
static int put_attr(PyObject *obj, PyObject *name, int64_t *vals, char *nulls, int k, int64_t *got) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v) return -1;
    int64_t x = 0;
    int r = int_value(v, &x);
    Py_DECREF(v);
    if (r < 0) return r;
    vals[k] = r ? x : 0;
    nulls[k] = (char)!r;
    if (got) *got = r ? x : -1;
    return 1;
}

/* Item s of a tuple into a row slot (as put_attr); a tuple too short falls back. */
static int put_item(PyObject *tuple, Py_ssize_t s, int64_t *vals, char *nulls, int k, int64_t *got) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) <= s) return -2;
    int64_t x = 0;
    int r = int_value(PyTuple_GET_ITEM(tuple, s), &x);
    if (r < 0) return r;
    vals[k] = r ? x : 0;
    nulls[k] = (char)!r;
    if (got) *got = r ? x : -1;
    return 1;
}

/* One deal's row and its sides' rows; 1 written, -2 fall back, -1 error. */
static int deal_rows(PyObject *o, PyObject *const *tpl, const unsigned char *codes, Py_ssize_t nsides, int64_t *dv,
                     char *dn, int64_t *sv, char *sn) {
    /* the fields noted by the replay; -1 is "none recorded" (NULL) for the trump card, trump and swap */
    static const int neg_null[DEAL_WIDTH] = {0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
    PyObject *const names[9] = {s_number, s_hand_size, s_dealer, s_trump_card, s_trump, s_swap_seat, s_swap_drawn,
                                s_pass_out, NULL};
    int r;
    for (int k = 0; k < 8; k++) {
        int64_t x;
        if ((r = put_attr(o, names[k], dv, dn, k, &x)) < 0) return r;
        if (neg_null[k] && !dn[k] && (k == 4 ? x == -1 : x < 0)) dv[k] = 0, dn[k] = 1;
    }
    PyObject *con = PyObject_GetAttr(o, s_contracts);
    if (!con) return -1;
    r = put_attr(con, s_opening_leader, dv, dn, 8, NULL);
    Py_DECREF(con);
    if (r < 0) return r;
    PyObject *ws = PyObject_GetAttr(o, s_winners);
    if (!ws) return -1;
    if (!PyByteArray_Check(ws)) {
        Py_DECREF(ws);
        return -2;
    }
    int64_t won[4] = {0, 0, 0, 0};
    const unsigned char *w = (const unsigned char *)PyByteArray_AS_STRING(ws);
    Py_ssize_t ntricks = PyByteArray_GET_SIZE(ws);
    for (Py_ssize_t j = 0; j < ntricks; j++)
        if (w[j] < 4) won[w[j]]++;
    Py_DECREF(ws);
    for (int k = 0; k < 4; k++) dv[9 + k] = won[k], dn[9 + k] = 0;
    dv[13] = ntricks, dn[13] = 0;

    PyObject *tricks = NULL, *points = NULL, *rt = NULL, *rp = NULL;
    int result = -1;
    if (!(tricks = PyObject_GetAttr(o, s_tricks)) || !(points = PyObject_GetAttr(o, s_points)) ||
        !(rt = PyObject_GetAttr(o, s_recorded_tricks)) || !(rp = PyObject_GetAttr(o, s_recorded_points)))
        goto out;
    result = -2;
    if (!PyTuple_Check(rt) || !PyTuple_Check(rp)) goto out;
    int recorded = PyTuple_GET_SIZE(rt) > 0;
    for (Py_ssize_t s = 0; s < nsides; s++) {
        int64_t *v = sv + s * SIDE_WIDTH;
        char *n = sn + s * SIDE_WIDTH;
        PyObject *tb = tpl[s];
        if (!PyBytes_Check(tb) || PyBytes_GET_SIZE(tb) != TEMPLATE_WIDTH * 8) {
            PyErr_SetString(PyExc_ValueError, "_fastplay.rows: a side template of the wrong size");
            result = -1;
            goto out;
        }
        const int64_t *t = (const int64_t *)PyBytes_AS_STRING(tb);
        int64_t nb = t[5], won_s;
        v[0] = codes[s], n[0] = 0;
        for (int k = 0; k < 4; k++) {
            int null = (int)((nb >> k) & 1);
            v[1 + k] = null ? 0 : t[k], n[1 + k] = (char)null;
        }
        if ((r = put_item(tricks, s, v, n, 5, &won_s)) < 0 || (r = put_item(points, s, v, n, 6, NULL)) < 0) {
            result = r;
            goto out;
        }
        if ((nb >> 4) & 1) {
            v[7] = 0, n[7] = 1;
        } else {
            if (n[5] || won_s < 0 || won_s >= MADE_BITS) goto out;
            v[7] = (t[4] >> won_s) & 1, n[7] = 0;
        }
        if (!recorded) {
            v[8] = v[9] = 0, n[8] = n[9] = 1;
        } else if ((r = put_item(rt, s, v, n, 8, NULL)) < 0 || (r = put_item(rp, s, v, n, 9, NULL)) < 0) {
            result = r;
            goto out;
        }
    }
    result = 1;
out:
    Py_XDECREF(tricks);
    Py_XDECREF(points);
    Py_XDECREF(rt);
    Py_XDECREF(rp);
    return result;
}

/* The bytes of a mask, or b"" when it holds no NULL. */
static PyObject *mask_bytes(const char *m, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (m[i]) return PyBytes_FromStringAndSize(m, n);
    return PyBytes_FromStringAndSize(NULL, 0);
}

static PyObject *rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    PyObject *outcomes, *templates;
    const char *codes;
    Py_ssize_t nsides;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_fastplay.rows takes 3 arguments");
        return NULL;
    }
    if (list_arg(args, 0, &outcomes) || list_arg(args, 1, &templates) || bytes_arg(args, 2, &codes, &nsides))
        return NULL;
    Py_ssize_t ndeals = PyList_GET_SIZE(outcomes);
    if (nsides < 1 || PyList_GET_SIZE(templates) != ndeals * nsides) {
        PyErr_SetString(PyExc_ValueError, "_fastplay.rows: a template a side of every deal");
        return NULL;
    }
    PyObject *deals = PyBytes_FromStringAndSize(NULL, ndeals * DEAL_WIDTH * 8);
    PyObject *sides = PyBytes_FromStringAndSize(NULL, ndeals * nsides * SIDE_WIDTH * 8);
    char *dn = PyMem_Malloc((size_t)(ndeals * (DEAL_WIDTH + nsides * SIDE_WIDTH)) + 1);
    PyObject *result = NULL, *dm = NULL, *sm = NULL;
    if (!deals || !sides || !dn) {
        if (!dn) PyErr_NoMemory();
        goto done;
    }
    char *sn = dn + ndeals * DEAL_WIDTH;
    int64_t *dv = (int64_t *)PyBytes_AS_STRING(deals), *sv = (int64_t *)PyBytes_AS_STRING(sides);
    for (Py_ssize_t i = 0; i < ndeals; i++) {
        int r = deal_rows(PyList_GET_ITEM(outcomes, i), PySequence_Fast_ITEMS(templates) + i * nsides,
                          (const unsigned char *)codes, nsides, dv + i * DEAL_WIDTH, dn + i * DEAL_WIDTH,
                          sv + i * nsides * SIDE_WIDTH, sn + i * nsides * SIDE_WIDTH);
        if (r == -1) goto done;
        if (r == -2) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if (!(dm = mask_bytes(dn, ndeals * DEAL_WIDTH)) || !(sm = mask_bytes(sn, ndeals * nsides * SIDE_WIDTH))) goto done;
    result = PyTuple_Pack(4, deals, dm, sides, sm);
done:
    Py_XDECREF(deals);
    Py_XDECREF(sides);
    Py_XDECREF(dm);
    Py_XDECREF(sm);
    PyMem_Free(dn);
    return result;
}

static PyMethodDef methods[] = {
    {"play", (PyCFunction)(void (*)(void))play, METH_FASTCALL, "Replay the regular tricks of a deal from the first (see the module's comment)."},
    {"mask", (PyCFunction)(void (*)(void))mask, METH_FASTCALL, "The bitmask of a list of distinct card names, or -1."},
    {"deal", (PyCFunction)(void (*)(void))deal, METH_FASTCALL, "A deal's cards as ints when none is in doubt, else None (see the module's comment)."},
    {"rows", (PyCFunction)(void (*)(void))rows, METH_FASTCALL, "A game's packed deal and side rows (see the module's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastplay", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastplay(void) {
    s_leader = PyUnicode_InternFromString("leader");
    s_cards = PyUnicode_InternFromString("cards");
    if (!s_leader || !s_cards) return NULL;
    PyObject **const interned[] = {&s_number, &s_hand_size, &s_dealer, &s_trump_card, &s_trump, &s_swap_seat,
                                   &s_swap_drawn, &s_pass_out, &s_contracts, &s_opening_leader, &s_winners,
                                   &s_tricks, &s_points, &s_recorded_tricks, &s_recorded_points};
    const char *const spelled[] = {"number", "hand_size", "dealer", "trump_card", "trump", "swap_seat",
                                   "swap_drawn", "pass_out", "contracts", "opening_leader", "winners",
                                   "tricks", "points", "recorded_tricks", "recorded_points"};
    for (size_t k = 0; k < sizeof spelled / sizeof *spelled; k++)
        if (!(*interned[k] = PyUnicode_InternFromString(spelled[k]))) return NULL;
    return PyModule_Create(&module);
}
