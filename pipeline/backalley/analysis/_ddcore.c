/* The double-dummy search of backalley.analysis.solver, in C (optional: solver.py falls back to Python).
 *
 * This file decides no rule of the game.  Every rule arrives as tables that
 * backalley.analysis.solver.SolverRules.tables() reads off the ruleset's fast tables
 * (backalley.rules.base.FastTables, which the replay reads too; cards are
 * ints 0..53, hands are 64-bit masks):
 *
 *   follow[led]          the cards that follow a lead of `led`;
 *   forced[pos][led]     0, or what the follower at position pos+1 must play
 *                        after `led` beyond suit: 1 its highest, 2 its lowest
 *                        card of `forced_pool` (a Blooper lead);
 *   winkey[led][card]    how strongly `card` bids for a trick led with `led`
 *                        (the highest key wins);
 *   lead_block           cards nobody leads while trump is unbroken, unless
 *                        exempt (the deal's lead_exempt seats) or holding nothing else;
 *   breaks               a complete trick holding one of these breaks trump;
 *   suit[card]           the cards ranked with `card` (a higher index ranks higher);
 *   special              cards whose lead has a rule of its own (never merged);
 *   trumps               the trump cards (for the quick-trick bounds).
 *
 * The search is the one of solver.py (see its docstring): a null-window
 * "can the side win `target` more tricks?" alpha-beta, a transposition table
 * at trick boundaries keyed by the relative ranks, equivalent cards merged,
 * quick-trick bounds and move ordering, each switchable by a flag bit.  The
 * tests compare it with the Python search and a plain minimax.
 *
 * A node (`nodes`, the benchmark's count) is a position the search visits: a
 * trick boundary, or a card to play within a trick.  The last trick is played
 * out at its boundary (`last_trick`: each hand holds one card), one node where
 * the Python search visits five.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NC 54
#define MAXG 6
#define F_TT 1
#define F_EQ 2
#define F_QT 4
#define F_ORD 8
#define NO_CARD 255

/* Which cards of a position its result depends on: per group, the top `k[g]` remaining cards
 * (their holders); below them only how many cards of the group each hand holds matters.  Eight bytes,
 * those past the groups zero, so that a union is one word's work. */
typedef struct {
    uint8_t k[8];
} Rel;

typedef struct {
    uint64_t k[2];
} Key;

/* A transposition entry: bounds on the side's tricks for every position with this shape (cards per
 * hand per group, leader, trump broken, holders of the special cards) whose top `rel.k[g]` cards
 * of each group have the holders in `pat[g]` (2 bits a card, the highest first; `rel` is in the
 * entry's Link). */
typedef struct {
    uint64_t shape[2];
    uint32_t pat[MAXG];
    uint8_t lo, hi, best, used;
} Entry;

/* An entry's link in its hash chain, apart from the entry (a chain is walked through these alone, a
 * quarter of an entry's size, and an entry is read only when its tag matches): the next entry of the
 * chain (-1: none), the entry's relevance, and its tag, a hash of the shape and of the holders of the
 * relevant cards (`tag_of`). */
typedef struct {
    int32_t next;
    uint32_t tag;
    Rel rel;
} Link;

typedef struct {
    PyObject_HEAD
    uint64_t follow[NC];
    uint8_t forced[3][NC];
    uint64_t forced_pool;
    uint16_t winkey[NC][NC];
    uint64_t lead_block, breaks, special, trumps;
    uint64_t suit[NC];
    uint64_t groups[MAXG];
    int ngroups;
    uint64_t plain[MAXG];
    int nplain;
    int exempt, side, flags;
    int trump_wins; /* in this deal a trump beats every other card, whatever the lead (from winkey) */
    int trump_ranked; /* the deal's trumps are one group, every lead ranking them by their index */
    int8_t owner[NC];
    int8_t gidx[NC]; /* each card's group */
    uint8_t cost[NC]; /* each card's card_cost */
    uint32_t history[4][NC]; /* cutoffs each seat's card caused, weighted by the tricks left */
    /* the position */
    uint64_t hands[4], remaining;
    uint64_t at_lead; /* the cards remaining when the current trick was led: `remaining` and the trick's */
    uint64_t gcount[MAXG]; /* per group, each seat's count of its cards (4 bits a seat) */
    uint32_t gpat[MAXG];   /* per group, the holders of its remaining cards (2 bits each, highest first) */
    uint64_t spec_bits[NC]; /* a special card's field in the shape while it remains (its holder + 1), else 0 */
    int leader, ntrick, broken;
    int trick[4];
    int left;      /* tricks left, the current one included (the cards of the player to act) */
    int wpos;      /* the position (0 = leader) of the card winning the trick so far (`child` keeps it) */
    uint16_t wkey; /* and its key, winkey[trick[0]][trick[wpos]] */
    /* the transposition table: buckets of 4 entries */
    Entry *tt;      /* the entries, `tt_used` of `tt_cap` in use */
    Link *links;    /* each entry's link in its chain */
    int32_t *heads; /* per hash of the shape, its first entry (-1: none) */
    uint64_t tt_mask; /* hash count - 1 */
    int32_t tt_used, tt_cap;
    unsigned long long nodes;
    /* Where the trick boundaries went (the benchmark's profile): settled by the target alone, by the
     * transposition table, by the side's or the other seats' quick tricks, played out as the last trick,
     * or searched lead by lead. */
    unsigned long long at_bound, by_tt, by_qt_mine, by_qt_theirs, by_last_trick, expanded;
} Core;

static inline int popc(uint64_t x) { /* SWAR: no call into libgcc without -mpopcnt */
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
static inline int top_bit(uint64_t x) { return 63 - __builtin_clzll(x); } /* x != 0 */
static inline int low_bit(uint64_t x) { return __builtin_ctzll(x); }      /* x != 0 */
static inline int bitlen(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

/* --- rules from the tables ------------------------------------------------------------------ */

static uint64_t leads(const Core *s, uint64_t hand, int seat) {
    if (s->broken || (s->exempt >> seat & 1) || !(hand & ~s->lead_block)) return hand;
    return hand & ~s->lead_block;
}

static uint64_t follows(const Core *s, uint64_t hand, int led, int pos) {
    int forced = s->forced[pos - 1][led];
    if (forced) {
        uint64_t pool = hand & s->forced_pool;
        if (!pool) return hand;
        return 1ULL << (forced == 1 ? top_bit(pool) : low_bit(pool));
    }
    uint64_t m = hand & s->follow[led];
    return m ? m : hand;
}

static uint64_t legal(const Core *s) {
    int seat = (s->leader + s->ntrick) & 3;
    if (s->ntrick) return follows(s, s->hands[seat], s->trick[0], s->ntrick);
    return leads(s, s->hands[seat], seat);
}

/* Position (0 = leader) of the card winning the first n cards of the trick. */
static int winner_of(const Core *s, const int *trick, int n) {
    const uint16_t *keys = s->winkey[trick[0]];
    int best = 0;
    for (int i = 1; i < n; i++)
        if (keys[trick[i]] > keys[trick[best]]) best = i;
    return best;
}

/* --- the transposition table (partition search) --------------------------------------------- */


/* Recomputes `gcount` and `gpat` from the hands (`child` keeps them up to date as cards are played). */
static void recount(Core *s) {
    for (int g = 0; g < s->ngroups; g++) {
        uint64_t grp = s->groups[g], m = s->remaining & grp;
        s->gcount[g] = 0;
        for (int seat = 0; seat < 4; seat++) s->gcount[g] |= (uint64_t)popc(s->hands[seat] & grp) << (4 * seat);
        uint32_t p = 0;
        for (int i = 0; m; i++) {
            int c = top_bit(m);
            m ^= 1ULL << c;
            p |= (uint32_t)s->owner[c] << (2 * i);
        }
        s->gpat[g] = p;
    }
    memset(s->spec_bits, 0, sizeof s->spec_bits);
    int off = 3;
    for (uint64_t sp = s->special; sp; sp &= sp - 1, off += 3) /* at most 9 of them */
        s->spec_bits[low_bit(sp)] = ((uint64_t)s->owner[low_bit(sp)] + 1) << off;
}

/* The position's shape (the cards each hand holds per group, the leader, whether trump is broken,
 * the holders of the special cards still out: they keep their identity); per group the holders of its
 * remaining cards from the highest down are `gpat`. */
static inline void describe(const Core *s, Key *shape) {
    const uint64_t *gc = s->gcount;
    uint64_t head = (uint64_t)s->leader << 1 | (uint64_t)s->broken;
    for (uint64_t sp = s->special & s->remaining; sp; sp &= sp - 1) head |= s->spec_bits[low_bit(sp)];
    shape->k[0] = gc[0] | gc[1] << 16 | gc[2] << 32 | gc[3] << 48;
    shape->k[1] = gc[4] | gc[5] << 16 | head << 32;
}

/* The bits of the top `k` holders in a group's `gpat`, from a table (the shift with its test of 16 cost 7%
 * of the search's instructions, in the table's tags).  k is at most 16: Core refuses a larger group. */
static const uint32_t PREFIX[32] = {
    0x0,        0x3,        0xF,        0x3F,       0xFF,       0x3FF,      0xFFF,      0x3FFF,
    0xFFFF,     0x3FFFF,    0xFFFFF,    0x3FFFFF,   0xFFFFFF,   0x3FFFFFF,  0xFFFFFFF,  0x3FFFFFFF,
    0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
    0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
static inline uint32_t prefix_mask(int k) { return PREFIX[k]; }

/* The chains of a position: `top` 0, entries that may ignore some group's top card, by the shape;
 * `top` 1, entries that read every non-empty group's top card, by the shape and those cards' holders. */
static inline int32_t *chain(const Core *s, const Key *shape, const uint32_t *pat, int top) {
    uint64_t tops = 0;
    if (top) switch (s->ngroups) { /* the loop unrolled (a group past `ngroups` adds 0: its pat is 0) */
        case 6: tops |= (uint64_t)(pat[5] & 3) << 10; /* fall through */
        case 5: tops |= (uint64_t)(pat[4] & 3) << 8;  /* fall through */
        case 4: tops |= (uint64_t)(pat[3] & 3) << 6;  /* fall through */
        case 3: tops |= (uint64_t)(pat[2] & 3) << 4;  /* fall through */
        case 2: tops |= (uint64_t)(pat[1] & 3) << 2;  /* fall through */
        default: tops |= (uint64_t)(pat[0] & 3);
        }
    uint64_t h = shape->k[0] * 0x9E3779B97F4A7C15ULL ^ shape->k[1] * 0xC2B2AE3D27D4EB4FULL ^
                 (tops + (uint64_t)top) * 0xD6E8FEB86659FD93ULL;
    h ^= h >> 29;
    return s->heads + ((h * 0xBF58476D1CE4E5B9ULL >> 20) & s->tt_mask);
}

/* A shape's hash, the start of each of its entries' tags. */
static inline uint64_t shape_hash(const Key *shape) {
    return shape->k[0] * 0x9E3779B97F4A7C15ULL ^ shape->k[1] * 0xC2B2AE3D27D4EB4FULL;
}

/* The tag of an entry with relevance `rel` that a position of shape hash `base` and holders `pat` matches. */
static inline uint32_t tag_of(int ngroups, uint64_t base, const uint32_t *pat, const Rel *rel) {
    static const uint64_t mul[MAXG] = {0xD6E8FEB86659FD93ULL, 0xBF58476D1CE4E5B9ULL, 0xA0761D6478BD642FULL,
                                       0xE7037ED1A0B428DBULL, 0x8EBC6AF09C88C6E3ULL, 0x589965CC75374CC3ULL};
    uint64_t h = base;
    const uint8_t *k = rel->k;
    switch (ngroups) { /* the loop unrolled (a group past `ngroups` would add 0: its pat and k are 0) */
    case 6: h += (uint64_t)(pat[5] & prefix_mask(k[5])) * mul[5]; /* fall through */
    case 5: h += (uint64_t)(pat[4] & prefix_mask(k[4])) * mul[4]; /* fall through */
    case 4: h += (uint64_t)(pat[3] & prefix_mask(k[3])) * mul[3]; /* fall through */
    case 3: h += (uint64_t)(pat[2] & prefix_mask(k[2])) * mul[2]; /* fall through */
    case 2: h += (uint64_t)(pat[1] & prefix_mask(k[1])) * mul[1]; /* fall through */
    default: h += (uint64_t)(pat[0] & prefix_mask(k[0])) * mul[0];
    }
    return (uint32_t)(h >> 32);
}

static inline int same_shape(const Entry *e, const Key *shape) {
    return e->shape[0] == shape->k[0] && e->shape[1] == shape->k[1];
}

static inline int matches(int ngroups, const Entry *e, const uint32_t *pat, const Rel *rel) {
    for (int g = 0; g < ngroups; g++)
        if ((pat[g] ^ e->pat[g]) & prefix_mask(rel->k[g])) return 0;
    return 1;
}

static void tt_clear(Core *s) {
    memset(s->heads, 0xFF, (size_t)(s->tt_mask + 1) * sizeof(int32_t));
    s->tt_used = 0;
}

/* Stores a bound found with relevance `rel`: in the entry of the same shape and pattern, else a new one. */
static void tt_store(Core *s, const Key *shape, const uint32_t *pat, const Rel *rel, int left, int target,
                     int result, int best) {
    int top = 1;
    for (int g = 0; g < s->ngroups; g++)
        if (!rel->k[g] && (s->remaining & s->groups[g])) top = 0;
    int32_t *head = chain(s, shape, pat, top);
    uint32_t tag = tag_of(s->ngroups, shape_hash(shape), pat, rel);
    Entry *e = NULL;
    for (int32_t i = *head; i >= 0 && !e; i = s->links[i].next)
        if (s->links[i].tag == tag && !memcmp(&s->links[i].rel, rel, sizeof *rel) && same_shape(&s->tt[i], shape) &&
            matches(s->ngroups, &s->tt[i], pat, rel))
            e = &s->tt[i];
    if (!e) {
        if (s->tt_used == s->tt_cap) { /* full: start again (values stay exact, only work is lost) */
            tt_clear(s);
            head = chain(s, shape, pat, top);
        }
        e = &s->tt[s->tt_used];
        s->links[s->tt_used] = (Link){*head, tag, *rel};
        *head = s->tt_used++;
        memcpy(e->shape, shape->k, sizeof e->shape);
        for (int g = 0; g < MAXG; g++) e->pat[g] = g < s->ngroups ? pat[g] & prefix_mask(rel->k[g]) : 0;
        e->lo = 0;
        e->hi = (uint8_t)left;
        e->best = NO_CARD;
        e->used = 1;
    }
    if (result) {
        if (e->lo < target) e->lo = (uint8_t)target;
    } else if (e->hi > target - 1) {
        e->hi = (uint8_t)(target - 1);
    }
    if (best >= 0) e->best = (uint8_t)best;
}

static inline void rel_union(const Core *s, Rel *a, const Rel *b) {
    (void)s;
    uint64_t x, y;
    memcpy(&x, a->k, sizeof x);
    memcpy(&y, b->k, sizeof y);
    uint64_t ge = ((x | 0x8080808080808080ULL) - y) & 0x8080808080808080ULL; /* per byte (all < 128): x >= y */
    uint64_t keep = (ge >> 7) * 0xFF;
    x = (x & keep) | (y & ~keep);
    memcpy(a->k, &x, sizeof x);
}

/* Relevance so far of the cards from `c` up in its group (`among`: the cards present). */
static inline void rel_cover(const Core *s, Rel *r, int c, uint64_t among) {
    int g = s->gidx[c];
    int k = popc(among & s->groups[g] & ~((1ULL << c) - 1));
    if (k > r->k[g]) r->k[g] = (uint8_t)k;
}

/* --- quick tricks ------------------------------------------------------------------------------ */

/* The top trumps held by one side each win the trick they fall in (two at most a trick per partnership).
 * Returns the count; *index: 0 when they are the side's, 1 when the other seats'.  The relevance is the
 * run of top trumps itself: a position sharing those holders has at least the same run. */
static int top_trumps(const Core *s, uint64_t trumps, int *index, Rel *rel) {
    int first = s->owner[top_bit(trumps)];
    int mine = s->side >> first & 1;
    int per_seat[4] = {0, 0, 0, 0};
    int run = 0, last = top_bit(trumps);
    while (trumps) {
        int c = top_bit(trumps);
        int seat = s->owner[c];
        if ((s->side >> seat & 1) != mine) break;
        per_seat[seat]++;
        run++;
        last = c;
        trumps ^= 1ULL << c;
    }
    if (trumps) rel_cover(s, rel, last, s->remaining); /* all of them the side's: the counts say so */
    int team = mine ? s->side : ~s->side & 15;
    int players = popc((uint64_t)team);
    int count = (run + players - 1) / players;
    for (int i = 0; i < 4; i++)
        if (per_seat[i] > count) count = per_seat[i];
    *index = mine ? 0 : 1;
    return count;
}

/* Tricks `cash` takes by leading its top cards of the plain suits, one after another, once on lead;
 * *suits: the plain groups (bits) where it has such a card.  The relevance: in each suit that counts,
 * the top cards counted (all `cash`'s); the rest are counts. */
static int cashable(const Core *s, int cash, Rel *rel, unsigned *suits) {
    uint64_t hand = s->hands[cash], tm = s->trumps;
    int team = (s->side >> cash & 1) ? s->side : ~s->side & 15;
    uint64_t others = s->remaining & ~hand;
    int limit = 13, nruff = 0;
    uint64_t ruff[3]; /* the other side's hands that hold a trump */
    for (int seat = 0; seat < 4; seat++) {
        if (!(s->hands[seat] & tm)) continue;
        if (!(team >> seat & 1)) {
            ruff[nruff++] = s->hands[seat];
        } else if (seat != cash) {
            int plain = popc(s->hands[seat] & ~tm);
            if (plain < limit) limit = plain;
        }
    }
    int total = 0;
    *suits = 0;
    for (int g = 0; g < s->nplain; g++) {
        uint64_t suit = s->plain[g], held = hand & suit;
        if (!held) continue;
        uint64_t rest = others & suit;
        int top = rest ? popc(held >> bitlen(rest)) : popc(held);
        for (int i = 0; i < nruff && top; i++) {
            int n = popc(ruff[i] & suit);
            if (n < top) top = n;
        }
        if (top && rest) { /* the `top` highest cards of the suit are all `cash`'s: relevant down to them */
            int gi = s->gidx[top_bit(held)];
            if (top > rel->k[gi]) rel->k[gi] = (uint8_t)top;
        }
        if (top) *suits |= 1u << g;
        total += top;
    }
    return total < limit ? total : limit;
}

/* The leader's side's cashing tricks: the leader's own, or a partner's once the leader reaches it with a
 * low card of a suit the partner tops (the partner's top cards are above the leader's too); the
 * partners are counted only when the leader's own tricks are fewer than `need`. */
static int side_cashable(const Core *s, int need, Rel *rel) {
    unsigned suits;
    int leader = s->leader;
    int best = cashable(s, leader, rel, &suits);
    if (best >= need) return best; /* enough for a cutoff: spare the partners' count */
    int team = (s->side >> leader & 1) ? s->side : ~s->side & 15;
    for (int p = 0; p < 4; p++) {
        if (p == leader || !(team >> p & 1)) continue;
        Rel r;
        memset(&r, 0, sizeof r);
        int n = cashable(s, p, &r, &suits);
        if (n <= best) continue;
        int entry = 0;
        for (int g = 0; g < s->nplain; g++)
            if ((suits >> g & 1) && (s->hands[leader] & s->plain[g])) entry = 1;
        if (entry) {
            best = n;
            *rel = r;
        }
    }
    return best;
}

/* Each of a hand's trumps falls in a trick of its own, which a trump wins: the hand's side's unless a
 * trump of the other side above it falls in it too, one trick each at most.  So a side wins at least
 * (its hand's j top trumps, or its side's j top trumps shared among its players) - the other side's
 * trumps above the j-th, for any j.  With every trump of the other side counted the cards per hand and
 * group say so: no relevance; else the trumps down to the j-th (ranked by `trump_ranked`). */
static void trump_length(const Core *s, uint64_t trumps, const int *need, int *sure, Rel **rels) {
    int total[2] = {0, 0}, most[2] = {0, 0}, seen[4] = {0, 0, 0, 0}, team[2] = {0, 0};
    int players[2] = {popc((uint64_t)s->side), 4 - popc((uint64_t)s->side)};
    int best[2] = {0, 0}, at[2] = {-1, -1}, counted[2];
    for (int seat = 0; seat < 4; seat++) {
        int t = (s->side >> seat & 1) ? 0 : 1, n = popc(s->hands[seat] & trumps);
        total[t] += n;
        if (n > most[t]) most[t] = n;
    }
    for (int t = 0; t < 2; t++) {
        int spread = (total[t] + players[t] - 1) / players[t];
        counted[t] = (most[t] > spread ? most[t] : spread) - total[1 - t];
    }
    int short_of = counted[0] < need[0] && sure[0] < need[0] && counted[1] < need[1] && sure[1] < need[1];
    for (uint64_t m = s->trump_ranked && short_of ? trumps : 0; m; m &= ~(1ULL << top_bit(m))) {
        int c = top_bit(m), seat = s->owner[c], t = (s->side >> seat & 1) ? 0 : 1;
        seen[seat]++;
        team[t]++;
        int spread = (team[t] + players[t] - 1) / players[t];
        int bound = (seen[seat] > spread ? seen[seat] : spread) - team[1 - t];
        if (bound > best[t] && team[1 - t] < total[1 - t]) {
            best[t] = bound;
            at[t] = c;
        }
    }
    for (int t = 0; t < 2; t++) {
        if (counted[t] > 0 && counted[t] >= best[t] && counted[t] >= sure[t]) {
            sure[t] = counted[t];
            memset(rels[t], 0, sizeof *rels[t]);
        } else if (best[t] > sure[t]) {
            sure[t] = best[t];
            memset(rels[t], 0, sizeof *rels[t]);
            rel_cover(s, rels[t], at[t], s->remaining);
        }
    }
}

/* Sure tricks of the side (*mine) and of the other seats (*theirs), each with the relevance of its proof
 * (counted as far as a cutoff at `target` needs). */
static void sure_tricks(const Core *s, int left, int target, int *mine, int *theirs, Rel *rel_mine,
                        Rel *rel_theirs) {
    int sure[2] = {0, 0};
    Rel *rels[2] = {rel_mine, rel_theirs};
    uint64_t trumps = s->remaining & s->trumps;
    if (trumps) {
        int index;
        sure[0] = top_trumps(s, trumps, &index, rels[0]); /* provisional slot, fixed below */
        if (index) {
            sure[1] = sure[0];
            sure[0] = 0;
            *rels[1] = *rels[0];
            memset(rels[0], 0, sizeof *rels[0]);
        }
        int need[2] = {target, left - target + 1}; /* for a cutoff: the refined count only when short */
        if (s->trump_wins) trump_length(s, trumps, need, sure, rels);
    }
    int lead = (s->side >> s->leader & 1) ? 0 : 1;
    Rel cash;
    memset(&cash, 0, sizeof cash);
    int need = lead ? left - target + 1 - sure[1] : target - sure[0]; /* for a cutoff */
    sure[lead] += side_cashable(s, need, &cash);
    rel_union(s, rels[lead], &cash);
    *mine = sure[0] < left ? sure[0] : left;
    *theirs = sure[1] < left ? sure[1] : left;
}

/* --- move generation ------------------------------------------------------------------------- */

/* The highest card of each run of `moves` adjacent among the unplayed cards (high first). */
static int classes(const Core *s, uint64_t moves, int *out) {
    uint64_t present = s->at_lead;
    int n = 0;
    uint64_t m = moves;
    while (m) {
        int c = top_bit(m);
        uint64_t bit = 1ULL << c;
        m ^= bit;
        out[n++] = c;
        if (s->special & bit) continue;
        uint64_t suit = s->suit[c];
        for (;;) {
            uint64_t below = present & suit & (bit - 1);
            if (!below) break;
            uint64_t next = 1ULL << top_bit(below);
            if (!(m & next) || (s->special & next)) break;
            m ^= next;
            bit = next;
        }
    }
    return n;
}

static int high_first(uint64_t m, int *out) {
    int n = 0;
    while (m) {
        int c = top_bit(m);
        m ^= 1ULL << c;
        out[n++] = c;
    }
    return n;
}

/* How much a card is worth keeping: its rank among its group's cards, a trump above every plain card. */
static inline int card_cost(const Core *s, int c) {
    return popc(s->suit[c] & ((1ULL << c) - 1)) + ((s->trumps >> c & 1) ? 16 : 0);
}

/* The moves worth trying, best guess first (one card per class of equivalent cards). */
static int order(const Core *s, int seat, uint64_t moves, int *cards) {
    if (moves && !(moves & (moves - 1))) { /* one legal card: nothing to merge or order */
        cards[0] = low_bit(moves);
        return 1;
    }
    int n = (s->flags & F_EQ) ? classes(s, moves, cards) : high_first(moves, cards);
    if (!(s->flags & F_ORD) || n < 2) return n;
    /* Each move's key: its score, then the cutoffs it caused (`history`: ties go to the moves that cut off most). */
    const uint32_t *hist = s->history[seat];
    int64_t key[16];
    if (!s->ntrick) {
        /* Leads: cash a suit's top card first, then lead low towards the partner's top card, then a
         * suit the partner ruffs, then low; a plain suit an opponent ruffs comes after all of those. */
        int mine = s->side >> seat & 1;
        for (int i = 0; i < n; i++) {
            int c = cards[i], cost = s->cost[c];
            uint64_t suit = s->suit[c];
            int top = s->owner[top_bit(s->remaining & suit)];
            int they_ruff = 0, we_ruff = 0;
            if (!(suit & s->trumps))
                for (int o = 0; o < 4; o++)
                    if (o != seat && !(s->hands[o] & suit) && (s->hands[o] & s->trumps)) {
                        if ((s->side >> o & 1) == mine)
                            we_ruff = 1;
                        else
                            they_ruff = 1;
                    }
            if (they_ruff)
                key[i] = (int64_t)(-32 - cost) * 4294967296LL + hist[c];
            else if (top == seat)
                key[i] = (int64_t)(128 + (cost & 15)) * 4294967296LL + hist[c];
            else if ((s->side >> top & 1) == mine)
                key[i] = (int64_t)(64 - cost) * 4294967296LL + hist[c];
            else
                key[i] = (int64_t)(we_ruff ? 32 - cost : -cost) * 4294967296LL + hist[c];
        }
    } else {
        /* A follower: the cheapest card that takes the trick from the other side, else the cheapest
         * card that does not take it from a partner (a plain card before a trump, low before high). */
        const uint16_t *keys = s->winkey[s->trick[0]];
        uint16_t best = s->wkey;
        int mine = s->side >> seat & 1;
        int partner_winning = (s->side >> ((s->leader + s->wpos) & 3) & 1) == mine;
        uint16_t later = 0; /* the best key an opponent still to play can reach */
        for (int pos = s->ntrick + 1; pos < 4; pos++) {
            int other = (s->leader + pos) & 3;
            if ((s->side >> other & 1) == mine) continue;
            uint64_t m = follows(s, s->hands[other], s->trick[0], pos);
            while (m) {
                int x = low_bit(m);
                m &= m - 1;
                if (keys[x] > later) later = keys[x];
            }
        }
        uint16_t last = 0; /* the best key the last to play can reach, when that is a partner */
        int fourth = (s->leader + 3) & 3;
        if (s->ntrick < 3 && fourth != seat && (s->side >> fourth & 1) == mine) {
            uint64_t m = follows(s, s->hands[fourth], s->trick[0], 3);
            while (m) {
                int x = low_bit(m);
                m &= m - 1;
                if (keys[x] > last) last = keys[x];
            }
        }
        /* The trick is the side's whatever this card: the partner's card holds, or the last partner can top all. */
        int secure = (partner_winning && best > later) || (last > best && last > later);
        for (int i = 0; i < n; i++) {
            int c = cards[i], cost = s->cost[c];
            int wins = keys[c] > best && keys[c] > later;
            key[i] = (int64_t)((wins ? (secure ? -64 : 64) : 0) - cost) * 4294967296LL + hist[c];
        }
    }
    for (int i = 1; i < n; i++) { /* insertion sort, best first */
        int c = cards[i], j = i - 1;
        int64_t k = key[i];
        while (j >= 0 && key[j] < k) {
            cards[j + 1] = cards[j];
            key[j + 1] = key[j];
            j--;
        }
        cards[j + 1] = c;
        key[j + 1] = k;
    }
    return n;
}

/* --- the search ---------------------------------------------------------------------------- */

static int node(Core *s, int target, Rel *rel);

/* The lowest card of the run below `c` (adjacent among `present`) that `c`'s holder holds: every card
 * the equivalence of moves may have let `c` stand for. */
static int run_end(const Core *s, int c, uint64_t present) {
    uint64_t suit = s->suit[c];
    for (;;) {
        uint64_t below = present & suit & ((1ULL << c) - 1);
        if (!below || s->owner[top_bit(below)] != s->owner[c]) return c;
        c = top_bit(below);
    }
}

/* `card` joins the current trick, and the trick's winner so far (`wpos`, `wkey`) follows it. */
static inline void add_to_trick(Core *s, int card) {
    if (!s->ntrick) {
        s->wpos = 0;
        s->wkey = s->winkey[card][card];
    } else if (s->winkey[s->trick[0]][card] > s->wkey) {
        s->wpos = s->ntrick;
        s->wkey = s->winkey[s->trick[0]][card];
    }
    s->trick[s->ntrick++] = card;
}

static int child(Core *s, int seat, int card, int target, Rel *rel) {
    uint64_t bit = 1ULL << card;
    int g = s->gidx[card];
    uint64_t count = s->gcount[g];
    uint32_t pat = s->gpat[g];
    int above = 2 * popc(s->remaining & s->groups[g] & ~((bit << 1) - 1)); /* the card's place in gpat */
    s->gcount[g] = count - (1ULL << (4 * seat));
    s->gpat[g] = (uint32_t)((pat & ((1ULL << above) - 1)) | ((uint64_t)pat >> (above + 2)) << above);
    s->hands[seat] ^= bit;
    s->remaining ^= bit;
    int wpos = s->wpos;
    uint16_t wkey = s->wkey;
    add_to_trick(s, card);
    int result;
    if (s->ntrick < 4) {
        result = node(s, target, rel);
    } else {
        int leader = s->leader, broken = s->broken;
        int wpos = s->wpos, w = s->trick[wpos];
        int winner = (leader + wpos) & 3;
        uint64_t played = 1ULL << s->trick[0] | 1ULL << s->trick[1] | 1ULL << s->trick[2] | bit;
        uint64_t present = s->remaining | played;
        int saved[4];
        memcpy(saved, s->trick, sizeof saved);
        s->ntrick = 0;
        s->leader = winner;
        s->broken = broken || (played & s->breaks) != 0;
        s->at_lead = s->remaining;
        s->left--;
        Rel below;
        result = node(s, target - (s->side >> winner & 1), &below);
        s->left++;
        s->at_lead = present;
        memcpy(s->trick, saved, sizeof saved);
        s->leader = leader;
        s->broken = broken;
        s->ntrick = 4;
        /* Relevance in the trick's terms: the same cards (the trick's cards close back in), and when
         * the winner beat a card of its group by rank, the winner, the cards above it and the run of its
         * holder's cards just below it (the moves it stood for): whatever the other cards of its group,
         * the same play wins the same trick.  (Down to the card it beat is more than that needs.) */
        *rel = below;
        for (int i = 0; i < 4; i++) { /* a trick card above a group's lowest relevant card adds one */
            int g = s->gidx[saved[i]];
            if (g >= 0 && below.k[g] && popc(s->remaining & s->groups[g] & ~((2ULL << saved[i]) - 1)) < below.k[g])
                rel->k[g]++;
        }
        int gw = s->gidx[w]; /* every dealt card has a group (suit[c] holds c); -1 would be no rank to beat */
        if (gw >= 0 && (played & s->groups[gw] & ~(1ULL << w))) rel_cover(s, rel, run_end(s, w, present), present);
    }
    s->wpos = wpos;
    s->wkey = wkey;
    s->ntrick--;
    s->hands[seat] ^= bit;
    s->remaining ^= bit;
    s->gcount[g] = count;
    s->gpat[g] = pat;
    return result;
}

/* The last trick, at its boundary (target 1): each hand holds one card, the only move `leads` and
 * `follows` leave it, so the trick is played out without its four nodes.  Returns whether the side wins
 * it, with the relevance of that play: `child`'s (there are no cards after it: when the winner beat a
 * card of its group by rank, the cards of that group from the winner up), but only when the card it beat
 * is the other side's, since no trick follows whose lead the winning seat decides; -1 when a hand does
 * not hold exactly one card (then the search plays the trick). */
static int last_trick(const Core *s, Rel *rel) {
    int trick[4];
    for (int pos = 0; pos < 4; pos++) {
        int seat = (s->leader + pos) & 3;
        uint64_t hand = s->hands[seat];
        if (!hand || (hand & (hand - 1))) return -1;
        uint64_t move = pos ? follows(s, hand, trick[0], pos) : leads(s, hand, seat);
        trick[pos] = low_bit(move);
    }
    int wpos = winner_of(s, trick, 4), w = trick[wpos];
    int won = s->side >> ((s->leader + wpos) & 3) & 1;
    for (int i = 0; i < 4 && s->gidx[w] >= 0; i++)
        if (i != wpos && s->gidx[trick[i]] == s->gidx[w] && (s->side >> ((s->leader + i) & 3) & 1) != won) {
            rel_cover(s, rel, run_end(s, w, s->remaining), s->remaining);
            break;
        }
    return won;
}

/* Try each move; the side wants one success, the others one failure.  *best: the move that decided.
 * Relevance: the deciding move's, else every move's. */
static int try_moves(Core *s, int seat, const int *cards, int n, int target, int *best, Rel *rel) {
    int mine = s->side >> seat & 1;
    Rel all, r;
    memset(&all, 0, sizeof all);
    for (int i = 0; i < n; i++) {
        if (child(s, seat, cards[i], target, &r) == mine) {
            *best = cards[i];
            *rel = r;
            if (s->flags & F_ORD) {
                int left = s->left + 1;
                if ((s->history[seat][cards[i]] += (uint32_t)(left * left)) > 0x7FFFFFFF)
                    memset(s->history, 0, sizeof s->history);
            }
            return mine;
        }
        rel_union(s, &all, &r);
    }
    *rel = all;
    return !mine;
}

/* The table's walk at a trick boundary (`pat`: gpat) for `target`: 1 or 0 when an entry settles it (with
 * its relevance in *rel), else -1, *hint the move of the last entry that matched, if it holds one.
 * `ngroups` is s->ngroups, a constant in each of `boundary`'s calls. */
static inline __attribute__((always_inline)) int probe(Core *s, const Key *shape, const uint32_t *pat, int ngroups,
                                                       int target, Rel *rel, int *hint) {
    uint64_t base = shape_hash(shape);
    for (int k = 0; k < 2; k++)
        for (int32_t i = *chain(s, shape, pat, k); i >= 0; i = s->links[i].next) {
            const Entry *e = &s->tt[i];
            if (s->links[i].tag != tag_of(ngroups, base, pat, &s->links[i].rel) || !same_shape(e, shape) ||
                !matches(ngroups, e, pat, &s->links[i].rel))
                continue;
            if (e->lo >= target || e->hi < target) {
                *rel = s->links[i].rel;
                return e->lo >= target;
            }
            if (e->best != NO_CARD) *hint = e->best;
        }
    return -1;
}

static int boundary(Core *s, int target, Rel *rel) {
    int leader = s->leader;
    int left = s->left;
    memset(rel, 0, sizeof *rel);
    if (target <= 0 || target > left) {
        s->at_bound++;
        return target <= 0;
    }
    if (left == 1) {
        int result = last_trick(s, rel);
        if (result >= 0) {
            s->by_last_trick++;
            return result;
        }
    }
    Key shape;
    const uint32_t *pat = s->gpat; /* as it is again when the moves are tried (`child` restores it) */
    int hint = NO_CARD;
    if (s->flags & F_TT) {
        describe(s, &shape);
        int found;
        switch (s->ngroups) { /* a walk for each count of groups, its tags' switch folded away */
        case 1: found = probe(s, &shape, pat, 1, target, rel, &hint); break;
        case 2: found = probe(s, &shape, pat, 2, target, rel, &hint); break;
        case 3: found = probe(s, &shape, pat, 3, target, rel, &hint); break;
        case 4: found = probe(s, &shape, pat, 4, target, rel, &hint); break;
        case 5: found = probe(s, &shape, pat, 5, target, rel, &hint); break;
        default: found = probe(s, &shape, pat, MAXG, target, rel, &hint);
        }
        if (found >= 0) {
            s->by_tt++;
            return found;
        }
    }
    if (s->flags & F_QT) {
        int mine, theirs;
        Rel qm, qt;
        memset(&qm, 0, sizeof qm);
        memset(&qt, 0, sizeof qt);
        sure_tricks(s, left, target, &mine, &theirs, &qm, &qt);
        if (mine >= target) {
            *rel = qm;
            s->by_qt_mine++;
            return 1;
        }
        if (left - theirs < target) {
            *rel = qt;
            s->by_qt_theirs++;
            return 0;
        }
    }
    int cards[16];
    s->expanded++;
    int n = order(s, leader, leads(s, s->hands[leader], leader), cards);
    if ((s->flags & F_ORD) && hint != NO_CARD) {
        for (int i = 1; i < n; i++)
            if (cards[i] == hint) {
                memmove(cards + 1, cards, (size_t)i * sizeof(int));
                cards[0] = hint;
                break;
            }
    }
    int best = -1;
    int result = try_moves(s, leader, cards, n, target, &best, rel);
    if (s->flags & F_TT)
        tt_store(s, &shape, pat, rel, left, target, result, result == (s->side >> leader & 1) ? best : -1);
    return result;
}

static int node(Core *s, int target, Rel *rel) {
    s->nodes++;
    if (!s->ntrick) return boundary(s, target, rel);
    int seat = (s->leader + s->ntrick) & 3;
    int cards[16], best;
    int n = order(s, seat, follows(s, s->hands[seat], s->trick[0], s->ntrick), cards);
    return try_moves(s, seat, cards, n, target, &best, rel);
}

static int search(Core *s, int target) {
    Rel rel;
    return node(s, target, &rel);
}

/* A guess at the side's remaining tricks: the tricks it takes when every seat plays the first card its
 * ordering tries, to the end (the position is left as it was). */
static int playout(Core *s) {
    uint64_t hands[4], remaining = s->remaining, at_lead = s->at_lead;
    int leader = s->leader, ntrick = s->ntrick, broken = s->broken, left = s->left, wpos = s->wpos, trick[4], won = 0;
    uint16_t wkey = s->wkey;
    memcpy(hands, s->hands, sizeof hands);
    memcpy(trick, s->trick, sizeof trick);
    for (int seat; s->hands[seat = (s->leader + s->ntrick) & 3];) {
        int cards[16], c;
        order(s, seat, legal(s), cards);
        c = cards[0];
        s->hands[seat] ^= 1ULL << c;
        s->remaining ^= 1ULL << c;
        add_to_trick(s, c); /* the ordering reads the trick's winner so far */
        if (s->ntrick == 4) {
            uint64_t played = 0;
            for (int i = 0; i < 4; i++) played |= 1ULL << s->trick[i];
            s->leader = (s->leader + s->wpos) & 3;
            won += s->side >> s->leader & 1;
            s->broken = s->broken || (played & s->breaks) != 0;
            s->ntrick = 0;
            s->left--;
            s->at_lead = s->remaining;
        }
    }
    memcpy(s->hands, hands, sizeof hands);
    memcpy(s->trick, trick, sizeof trick);
    s->remaining = remaining;
    s->at_lead = at_lead;
    s->leader = leader;
    s->ntrick = ntrick;
    s->broken = broken;
    s->left = left;
    s->wpos = wpos;
    s->wkey = wkey;
    return won;
}

/* The side's tricks from the position (the remaining ones only), stepping from `guess` (expected
 * remaining tricks), or without one (negative) from the playout's tricks.  (Bisecting the count from
 * the middle took 9% more nodes at 13 cards, and stepping costs two searches when the guess is right.) */
static int value(Core *s, int guess) {
    int seat = (s->leader + s->ntrick) & 3;
    int lo = 0, hi = popc(s->hands[seat]);
    if (!s->ntrick && (s->flags & F_TT)) {
        Key shape;
        const uint32_t *pat = s->gpat;
        describe(s, &shape);
        uint64_t base = shape_hash(&shape);
        for (int k = 0; k < 2; k++)
        for (int32_t i = *chain(s, &shape, pat, k); i >= 0; i = s->links[i].next) {
            const Entry *e = &s->tt[i];
            if (s->links[i].tag == tag_of(s->ngroups, base, pat, &s->links[i].rel) && same_shape(e, &shape) &&
                matches(s->ngroups, e, pat, &s->links[i].rel)) {
                if (e->lo > lo) lo = e->lo;
                if (e->hi < hi) hi = e->hi;
            }
        }
    }
    /* From a guess, one trick at a time (as DDS does): a good guess costs two searches, and never a
     * search far above the value, which is as dear as one next to it. */
    int target = guess < 0 ? playout(s) : guess;
    while (lo < hi) {
        if (target <= lo) target = lo + 1;
        if (target > hi) target = hi;
        if (search(s, target)) {
            lo = target;
            target = lo + 1;
        } else {
            hi = target - 1;
            target = hi;
        }
    }
    return lo;
}

/* --- the Python type ----------------------------------------------------------------------- */

static int read_u64s(PyObject *seq, uint64_t *out, Py_ssize_t n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items", what, n);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == (uint64_t)-1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* Sets the position: four hands, the leader, the cards of the current trick, whether trump is broken. */
static int set_position(Core *s, PyObject *hands, int leader, PyObject *trick, int broken) {
    uint64_t t[4];
    if (read_u64s(hands, s->hands, 4, "hands") < 0) return -1;
    PyObject *fast = PySequence_Fast(trick, "trick");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    Py_DECREF(fast);
    if (n > 3 || read_u64s(trick, t, n, "trick") < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "trick: at most 3 cards");
        return -1;
    }
    s->ntrick = (int)n;
    for (int i = 0; i < n; i++) {
        if (t[i] >= NC) {
            PyErr_SetString(PyExc_ValueError, "trick: not a card");
            return -1;
        }
        s->trick[i] = (int)t[i];
    }
    s->leader = leader & 3;
    s->broken = broken != 0;
    s->remaining = s->hands[0] | s->hands[1] | s->hands[2] | s->hands[3];
    s->at_lead = s->remaining;
    for (int i = 0; i < n; i++) s->at_lead |= 1ULL << s->trick[i];
    s->left = popc(s->hands[(s->leader + n) & 3]);
    s->wpos = n ? winner_of(s, s->trick, (int)n) : 0;
    s->wkey = n ? s->winkey[s->trick[0]][s->trick[s->wpos]] : 0;
    recount(s);
    return 0;
}

static int Core_init(Core *s, PyObject *args, PyObject *kw) {
    static char *names[] = {"hands", "side", "exempt", "follow", "forced", "forced_pool", "winkey", "lead_block",
                            "breaks", "suit", "special", "trumps", "flags", "tt_bits", NULL};
    PyObject *hands, *follow, *forced, *winkey, *suit;
    unsigned long long forced_pool, lead_block, breaks, special, trumps;
    int side, exempt, flags, tt_bits = 18;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiiOOKOKKOKKi|i", names, &hands, &side, &exempt, &follow, &forced,
                                     &forced_pool, &winkey, &lead_block, &breaks, &suit, &special, &trumps, &flags,
                                     &tt_bits))
        return -1;
    uint64_t h[4], f[3 * NC], w[NC * NC];
    if (read_u64s(hands, h, 4, "hands") < 0 || read_u64s(follow, s->follow, NC, "follow") < 0 ||
        read_u64s(forced, f, 3 * NC, "forced") < 0 || read_u64s(winkey, w, NC * NC, "winkey") < 0 ||
        read_u64s(suit, s->suit, NC, "suit") < 0)
        return -1;
    for (int i = 0; i < 3 * NC; i++) s->forced[i / NC][i % NC] = (uint8_t)f[i];
    for (int i = 0; i < NC * NC; i++) {
        if (w[i] > 65535) {
            PyErr_SetString(PyExc_ValueError, "winkey: keys must be below 65536");
            return -1;
        }
        s->winkey[i / NC][i % NC] = (uint16_t)w[i];
    }
    s->forced_pool = forced_pool;
    s->lead_block = lead_block;
    s->breaks = breaks;
    s->special = special;
    s->trumps = trumps;
    s->side = side & 15;
    s->exempt = exempt & 15;
    s->flags = flags;
    uint64_t all = h[0] | h[1] | h[2] | h[3];
    memset(s->owner, -1, sizeof s->owner);
    for (int seat = 0; seat < 4; seat++)
        for (int c = 0; c < NC; c++)
            if (h[seat] >> c & 1) s->owner[c] = (int8_t)seat;
    s->ngroups = s->nplain = 0;
    for (int c = 0; c < NC; c++) {
        if (!(all >> c & 1) || !s->suit[c]) continue;
        int seen = 0;
        for (int g = 0; g < s->ngroups; g++) seen |= s->groups[g] == s->suit[c];
        if (seen) continue;
        if (s->ngroups == MAXG) {
            PyErr_SetString(PyExc_ValueError, "suit: too many groups");
            return -1;
        }
        s->groups[s->ngroups++] = s->suit[c];
        if (popc(s->suit[c]) > 16) {
            PyErr_SetString(PyExc_ValueError, "suit: a group of more than 16 cards");
            return -1;
        }
        if (!(s->suit[c] & trumps)) s->plain[s->nplain++] = s->suit[c];
    }
    memset(s->gidx, -1, sizeof s->gidx);
    s->trump_wins = 1;
    for (int led = 0; led < NC; led++) {
        if (!(all >> led & 1)) continue;
        int low = 65536, high = -1;
        for (int c = 0; c < NC; c++) {
            if (!(all >> c & 1)) continue;
            int k = s->winkey[led][c];
            if (trumps >> c & 1) {
                if (k < low) low = k;
            } else if (k > high) {
                high = k;
            }
        }
        if (low <= high) s->trump_wins = 0;
    }
    for (int c = 0; c < NC; c++) {
        for (int g = 0; g < s->ngroups; g++)
            if (s->groups[g] >> c & 1) s->gidx[c] = (int8_t)g;
        s->cost[c] = (uint8_t)card_cost(s, c);
    }
    s->trump_ranked = 0;
    for (int g = 0; g < s->ngroups; g++)
        if ((trumps & all) && !(trumps & all & ~s->groups[g])) s->trump_ranked = 1;
    for (int led = 0; led < NC; led++)
        for (int c = 0, prev = -1; c < NC && (all >> led & 1); c++) {
            if (!((trumps & all) >> c & 1)) continue;
            if (prev >= 0 && s->winkey[led][c] <= s->winkey[led][prev]) s->trump_ranked = 0;
            prev = c;
        }
    if (tt_bits < 4 || tt_bits > 24) tt_bits = 18;
    PyMem_Free(s->tt);
    PyMem_Free(s->links);
    PyMem_Free(s->heads);
    s->tt_cap = 4 << tt_bits;
    s->tt = PyMem_Malloc((size_t)s->tt_cap * sizeof(Entry));
    s->links = PyMem_Malloc((size_t)s->tt_cap * sizeof(Link));
    s->heads = PyMem_Malloc(((size_t)1 << tt_bits) * sizeof(int32_t));
    if (!s->tt || !s->links || !s->heads) {
        PyErr_NoMemory();
        return -1;
    }
    s->tt_mask = ((uint64_t)1 << tt_bits) - 1;
    tt_clear(s);
    s->nodes = s->at_bound = s->by_tt = s->by_qt_mine = s->by_qt_theirs = s->by_last_trick = s->expanded = 0;
    memset(s->history, 0, sizeof s->history);
    memcpy(s->hands, h, sizeof s->hands);
    s->remaining = s->at_lead = all;
    s->special &= all;
    if (popc(s->special) > 9) {
        PyErr_SetString(PyExc_ValueError, "special: more than 9 cards in the deal");
        return -1;
    }
    memset(s->gcount, 0, sizeof s->gcount);
    memset(s->gpat, 0, sizeof s->gpat);
    recount(s);
    s->leader = s->ntrick = s->broken = s->wpos = 0;
    s->left = popc(h[0]);
    s->wkey = 0;
    return 0;
}

static void Core_dealloc(Core *s) {
    PyMem_Free(s->tt);
    PyMem_Free(s->links);
    PyMem_Free(s->heads);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Core_value(Core *s, PyObject *args) {
    PyObject *hands, *trick;
    int leader, broken, guess = -1;
    if (!PyArg_ParseTuple(args, "OiOp|i", &hands, &leader, &trick, &broken, &guess)) return NULL;
    if (set_position(s, hands, leader, trick, broken) < 0) return NULL;
    return PyLong_FromLong(value(s, guess));
}

static PyObject *Core_at_least(Core *s, PyObject *args) {
    PyObject *hands, *trick;
    int leader, broken, target;
    if (!PyArg_ParseTuple(args, "OiOpi", &hands, &leader, &trick, &broken, &target)) return NULL;
    if (set_position(s, hands, leader, trick, broken) < 0) return NULL;
    return PyBool_FromLong(search(s, target));
}

static PyObject *Core_legal(Core *s, PyObject *args) {
    PyObject *hands, *trick;
    int leader, broken;
    if (!PyArg_ParseTuple(args, "OiOp", &hands, &leader, &trick, &broken)) return NULL;
    if (set_position(s, hands, leader, trick, broken) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(legal(s));
}

static PyObject *Core_winner(Core *s, PyObject *arg) {
    uint64_t t[4];
    if (read_u64s(arg, t, 4, "trick") < 0) return NULL;
    int trick[4];
    for (int i = 0; i < 4; i++) {
        if (t[i] >= NC) {
            PyErr_SetString(PyExc_ValueError, "trick: not a card");
            return NULL;
        }
        trick[i] = (int)t[i];
    }
    return PyLong_FromLong(winner_of(s, trick, 4));
}

static PyObject *Core_get_nodes(Core *s, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(s->nodes);
}

static PyMethodDef Core_methods[] = {
    {"value", (PyCFunction)Core_value, METH_VARARGS,
     "value(hands, leader, trick, broken, guess=-1) -> the side's tricks from the position (remaining tricks only; "
     "guess: the expected count, -1 for none)"},
    {"at_least", (PyCFunction)Core_at_least, METH_VARARGS,
     "at_least(hands, leader, trick, broken, target) -> whether the side wins target or more of them"},
    {"legal", (PyCFunction)Core_legal, METH_VARARGS, "legal(hands, leader, trick, broken) -> the legal cards, a mask"},
    {"winner", (PyCFunction)Core_winner, METH_O, "winner(trick of 4 cards) -> position (0 = leader) of its winner"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Core_get_profile(Core *s, void *closure) {
    (void)closure;
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "nodes", s->nodes, "boundaries_at_bound", s->at_bound, "boundaries_by_tt",
                         s->by_tt, "boundaries_by_quick_tricks_side", s->by_qt_mine,
                         "boundaries_by_quick_tricks_others", s->by_qt_theirs, "boundaries_last_trick",
                         s->by_last_trick, "boundaries_searched", s->expanded);
}

static PyGetSetDef Core_getset[] = {
    {"nodes", (getter)Core_get_nodes, NULL, "search nodes visited so far", NULL},
    {"profile", (getter)Core_get_profile, NULL,
     "search nodes so far, and how the trick boundaries among them were settled (a dict of counts)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "backalley.analysis._ddcore.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The double-dummy search of one deal for one side, over rule tables (see the module source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ddcore", "The double-dummy search in C.", -1, NULL};

PyMODINIT_FUNC PyInit__ddcore(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
