#!/usr/bin/env node
// Plays games of bab-online with its own server code, headless, and writes what a spectator of
// each game receives: the fixtures of tests/test_observed.py (tests/fixtures/bab-online/).
//
//   node tests/tools/bab_online_games.js --src CHECKOUT --games 30 --seed 1 --out tests/fixtures/bab-online
//
// CHECKOUT is a work tree of github.com/dannytakahashi/bab-online at the pinned commit (PIN
// below; `git clone https://github.com/dannytakahashi/bab-online && git -C bab-online checkout
// PIN`). Nothing of it is copied here: this script `require`s its server modules from CHECKOUT
// and runs them in one node process, with
// - its persistence stubbed: the MongoDB collections, the game-stats recorder and the profile
//   pictures (getUserProfilePic, recordGameStats), and its logger;
// - its delays (utils/timing) shortened to the next turn of the event loop;
// - Socket.IO replaced by an in-process hub that routes each emit to the sockets in the target
//   room, its payload serialised as JSON at the time of the emit (as Socket.IO does);
// - Math.random seeded (mulberry32), so that --seed S gives the same games every time.
// Each game goes through the server's own lobby, draw, bid and play handlers
// (GameManager, lobbyHandlers.playerReady, gameHandlers.draw/playerBid/playCard), with four
// scripted players: each thinks with bab-online's own bot strategy (BotPlayer) but acts as its
// web client lets a human (a number up to min(hand size, 12), a bore only in escalation order,
// a card the server's rules accept). A spectator joins each game through
// mainRoomHandlers.joinAsSpectator when the lobby starts it, and every event it receives is a
// line {"event", "data"} of the game's transcript (gzipped: game-NN.jsonl.gz). bab-online's own final score (its game state
// when it records the game's stats) goes to scores.json beside the transcripts.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const Module = require('module');

process.env.NODE_ENV = 'production'; // (GameState's debug log to the console is off)
const PIN = 'b383e0b0d2dacba58e43aa660526f469eb795d5a';

function args(argv) {
    const out = { games: 30, seed: 1, out: null, src: null };
    for (let i = 2; i < argv.length; i += 2) {
        const key = argv[i].replace(/^--/, '');
        if (!(key in out) || i + 1 >= argv.length) {
            throw new Error(`usage: bab_online_games.js --src CHECKOUT --out DIR [--games N] [--seed S] (not ${argv[i]})`);
        }
        out[key] = key === 'games' || key === 'seed' ? parseInt(argv[i + 1], 10) : argv[i + 1];
    }
    if (!out.src || !out.out) throw new Error('--src CHECKOUT and --out DIR are required');
    return out;
}

// --- seeded randomness -------------------------------------------------------------------------

function mulberry32(seed) {
    let a = seed >>> 0;
    return function () {
        a = (a + 0x6D2B79F5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

function seededUuid() {
    const hex = [];
    for (let i = 0; i < 32; i++) hex.push(Math.floor(Math.random() * 16).toString(16));
    hex[12] = '4';
    hex[16] = '89ab'[Math.floor(Math.random() * 4)];
    const h = hex.join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// --- stubs: persistence, logging, timing ---------------------------------------------------------

const finalScores = new Map(); // gameId -> bab-online's own score at recordGameStats
const noop = () => {};
const logger = new Proxy({}, { get: () => noop });
const loggers = new Proxy({}, { get: () => logger });
const collection = new Proxy({}, { get: () => async () => null });
const STUBS = [
    [(r) => r === 'uuid', () => ({ v4: seededUuid })],
    [(r) => r.endsWith('utils/logger'), () => loggers],
    [(r) => r === '../database' || r === './database', () => ({
        connectDB: async () => {}, getDB: () => null,
        getUsersCollection: () => collection, getGameRecordsCollection: () => collection,
    })],
    [(r) => r === './profileHandlers', () => ({
        recordGameStats: async (game) => { finalScores.set(game.gameId, { ...game.score }); },
        getUserProfilePic: async () => 1,
    })],
    [(r) => r.endsWith('utils/timing'), () => ({
        delay: () => new Promise((resolve) => setImmediate(resolve)),
        schedule: (cb) => setImmediate(cb),
        debounce: (fn) => fn,
    })],
];
const originalRequire = Module.prototype.require;
Module.prototype.require = function (request) {
    for (const [matches, make] of STUBS) {
        if (matches(request)) return make();
    }
    return originalRequire.apply(this, arguments);
};

// --- an in-process Socket.IO hub ---------------------------------------------------------------

class Hub {
    constructor() { this.sockets = { sockets: new Map() }; }
    connect(id, onEvent) {
        const socket = new Socket(this, id, onEvent);
        this.sockets.sockets.set(id, socket);
        return socket;
    }
    to(target) { return { emit: (event, data) => this.deliver(target, event, data, null) }; }
    deliver(target, event, data, except) {
        const payload = data === undefined ? null : JSON.parse(JSON.stringify(data));
        for (const socket of [...this.sockets.sockets.values()]) {
            if (socket !== except && socket.rooms.has(target)) socket.onEvent(event, payload);
        }
    }
}

class Socket {
    constructor(hub, id, onEvent) { this.hub = hub; this.id = id; this.onEvent = onEvent; this.rooms = new Set([id]); }
    join(room) { this.rooms.add(room); }
    leave(room) { this.rooms.delete(room); }
    emit(event, data) { this.hub.deliver(this.id, event, data, null); }
    to(room) { return { emit: (event, data) => this.hub.deliver(room, event, data, this) }; }
    disconnect() { this.hub.sockets.sockets.delete(this.id); }
}

// --- the scripted players ----------------------------------------------------------------------

const BORE_LEVEL = { B: 1, '2B': 2, '3B': 3, '4B': 4 };
const BORE_OF = ['', 'B', '2B', '3B', '4B'];

/** The bid ``wanted`` as the web client lets a human make it after ``prior`` bids with ``n`` cards. */
function offered(wanted, prior, n) {
    const levels = prior.filter((b) => b !== undefined && b !== null).map((b) => BORE_LEVEL[String(b).toUpperCase()] || 0);
    const allowed = (level) => !levels.includes(level) && (level === 1 || levels.includes(level - 1));
    const level = BORE_LEVEL[String(wanted).toUpperCase()] || 0;
    if (level) {
        if (allowed(level)) return BORE_OF[level];
        const next = Math.max(0, ...levels) + 1;
        if (next <= 4 && allowed(next)) return BORE_OF[next];
        return String(Math.min(n, 12));
    }
    const k = parseInt(String(wanted), 10);
    return String(Math.max(0, Math.min(Number.isNaN(k) ? 0 : k, n, 12)));
}

class ScriptedPlayer {
    constructor(env, id, username) {
        this.env = env;
        this.id = id;
        this.username = username;
        this.socket = env.hub.connect(id, (event, data) => this.on(event, data));
        this.brain = new env.BotPlayer(username, env.personalities[Math.floor(Math.random() * env.personalities.length)]);
        this.position = null;
        this.turnSeen = -1;
        this.events = 0;
    }

    on(event, data) {
        this.events++;
        const s = this;
        switch (event) {
            case 'startDraw':
                setImmediate(() => s.env.handlers.draw(s.socket, s.env.hub, { num: Math.floor(Math.random() * 40) }).catch(s.env.fail));
                break;
            case 'gameStart':
                s.position = data.position;
                s.brain.position = data.position;
                s.hand = data.hand.slice();
                s.trump = data.trump;
                s.n = data.currentHand;
                s.scores = [data.score1, data.score2];
                s.bids = [];
                s.played = [];
                s.lead = null;
                s.leadPosition = null;
                s.broken = false;
                s.bidding = true;
                s.brain.resetCardMemory(s.n, s.trump);
                break;
            case 'bidReceived':
                s.bids = data.bidArray.slice();
                break;
            case 'doneBidding':
                s.bidding = false;
                break;
            case 'cardPlayed':
                if (!s.lead) {
                    s.lead = data.card;
                    s.leadPosition = data.position;
                }
                s.played[data.position - 1] = data.card;
                s.broken = data.trump;
                s.brain.recordCardPlayed(data.card, data.position, s.trump);
                if (data.position === s.position) {
                    const k = s.hand.findIndex((c) => c.suit === data.card.suit && c.rank === data.card.rank);
                    if (k >= 0) s.hand.splice(k, 1);
                }
                break;
            case 'trickComplete':
                s.played = [];
                s.lead = null;
                s.leadPosition = null;
                s.brain.advanceTrick();
                break;
            case 'updateTurn':
                if (data.currentTurn === s.position) {
                    const mark = s.events;
                    setImmediate(() => s.act(mark));
                }
                break;
            default:
                break;
        }
    }

    act(mark) {
        if (this.turnSeen === mark) return;
        this.turnSeen = mark;
        const { handlers, hub, fail } = this.env;
        if (this.bidding) {
            const team = this.position % 2 === 1 ? 0 : 1;
            const context = { teamScore: this.scores[team], oppScore: this.scores[1 - team], currentHandSize: this.n };
            const wanted = this.brain.decideBid(this.hand, this.trump, this.bids, this.n, context);
            const bid = offered(wanted, this.bids, this.n);
            handlers.playerBid(this.socket, hub, { bid, position: this.position }).catch(fail);
        } else {
            const card = this.legalCard(this.brain.decideCard(
                this.hand, this.played, this.lead, this.leadPosition, this.trump, this.broken, this.n));
            handlers.playCard(this.socket, hub, { card, position: this.position }).catch(fail);
        }
    }

    /** ``wanted`` if the server's rules accept it now, else the first card of the hand they accept. */
    legalCard(wanted) {
        const rules = this.env.rules;
        const ok = (card) => {
            const rest = this.hand.filter((c) => !(c.suit === card.suit && c.rank === card.rank));
            if (!this.lead) {
                return rules.isLegalMove(card, rest, card, true, this.trump, this.broken, this.position, this.position)
                    || rules.isTrumpTight([card, ...rest], this.trump);
            }
            return rules.isLegalMove(card, rest, this.lead, false, this.trump, this.broken, this.position, this.leadPosition);
        };
        const inHand = wanted && this.hand.some((c) => c.suit === wanted.suit && c.rank === wanted.rank);
        if (inHand && ok(wanted)) return { suit: wanted.suit, rank: wanted.rank };
        const card = this.hand.find(ok);
        if (!card) throw new Error(`no legal card for position ${this.position}`);
        return { suit: card.suit, rank: card.rank };
    }
}

// --- one game ----------------------------------------------------------------------------------

const NAMES = ['ada', 'bea', 'cal', 'dot', 'eve', 'fay', 'gus', 'hal', 'ivy', 'jo', 'kit', 'lou', 'max', 'ned'];

function playGame(env, k) {
    return new Promise((resolve, reject) => {
        const lines = [];
        const watchdog = setTimeout(() => reject(new Error(`game ${k} did not end`)), 120000);
        env.fail = (err) => { clearTimeout(watchdog); reject(err); };
        const { hub, gameManager } = env;
        const pool = NAMES.slice();
        const names = [];
        for (let i = 0; i < 4; i++) names.push(pool.splice(Math.floor(Math.random() * pool.length), 1)[0]);
        const players = names.map((name, i) => new ScriptedPlayer(env, `g${k}-p${i + 1}`, name));
        players.forEach((p) => gameManager.registerUser(p.id, p.username));
        const specId = `g${k}-spectator`;
        const spectator = hub.connect(specId, (event, data) => {
            lines.push(JSON.stringify({ event, data }));
            if (event === 'gameEnd') {
                clearTimeout(watchdog);
                setImmediate(() => resolve({ lines, gameId: gameIdOf(lines) }));
            }
        });
        gameManager.registerUser(specId, 'recorder');
        const host = players[0];
        const watchStart = host.on.bind(host);
        host.on = (event, data) => {
            watchStart(event, data);
            if (event === 'allPlayersReady') {
                setImmediate(() => env.mainRoom.joinAsSpectator(spectator, hub, { gameId: data.gameId }));
            }
        };
        const lobby = gameManager.createNamedLobby(host.id).lobby;
        players.slice(1).forEach((p) => gameManager.joinSpecificLobby(p.id, lobby.id));
        (async () => {
            for (const p of players) await env.lobby.playerReady(p.socket, hub);
        })().catch(env.fail);
    });
}

function gameIdOf(lines) {
    for (const line of lines) {
        const { event, data } = JSON.parse(line);
        if (event === 'gameStart') return data.gameId;
    }
    return null;
}

async function main() {
    const opts = args(process.argv);
    const server = path.resolve(opts.src, 'server');
    if (!fs.existsSync(path.join(server, 'socket', 'gameHandlers.js'))) {
        throw new Error(`${opts.src} is not a bab-online checkout (no server/socket/gameHandlers.js)`);
    }
    fs.mkdirSync(opts.out, { recursive: true });
    const scores = { source: `github.com/dannytakahashi/bab-online@${PIN}`, seed: opts.seed, games: {} };
    for (let k = 1; k <= opts.games; k++) {
        Math.random = mulberry32(opts.seed * 1000003 + k);
        const env = {
            hub: new Hub(),
            gameManager: require(path.join(server, 'game', 'GameManager')),
            handlers: require(path.join(server, 'socket', 'gameHandlers')),
            lobby: require(path.join(server, 'socket', 'lobbyHandlers')),
            mainRoom: require(path.join(server, 'socket', 'mainRoomHandlers')),
            rules: require(path.join(server, 'game', 'rules')),
            BotPlayer: require(path.join(server, 'game', 'bot', 'BotPlayer')),
            personalities: require(path.join(server, 'game', 'bot', 'personalities')).PERSONALITY_LIST,
            fail: null,
        };
        const { lines, gameId } = await playGame(env, k);
        const name = `game-${String(k).padStart(2, '0')}.jsonl.gz`;
        fs.writeFileSync(path.join(opts.out, name), zlib.gzipSync(lines.join('\n') + '\n', { level: 9 }));
        const score = finalScores.get(gameId);
        if (!score) throw new Error(`game ${k}: bab-online recorded no final score`);
        scores.games[name] = { game_id: gameId, team1: score.team1, team2: score.team2 };
        process.stdout.write(`${name}  ${gameId}  ${score.team1} : ${score.team2}  (${lines.length} events)\n`);
    }
    fs.writeFileSync(path.join(opts.out, 'scores.json'), JSON.stringify(scores, null, 2) + '\n');
}

main().then(() => process.exit(0), (err) => {
    process.stderr.write(`bab_online_games.js: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
});
