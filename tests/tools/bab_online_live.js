#!/usr/bin/env node
// A manual end-to-end check of `backalley record bab-online` against bab-online's real Socket.IO
// server (not run by the tests; tests/test_recorder.py uses python-socketio's server instead).
//
//   mkdir /tmp/sio && (cd /tmp/sio && npm install socket.io@4.8.1 socket.io-client@4.8.1)
//   node tests/tools/bab_online_live.js CHECKOUT 47126 /tmp/sio &
//   backalley record bab-online --server http://127.0.0.1:47126 --user watcher --password-file pw --all --out g.jsonl
//
// CHECKOUT is bab-online at the pinned commit (tests/fixtures/README.md). It starts bab-online's
// own server/socket/index.js on a real Socket.IO server, with its persistence stubbed (any user
// signs in with the password "pw"), its validation, rate limits and logger stubbed, and its delays
// 20 times shorter; 4 s later a scripted human (socket.io-client) opens a lobby with 3 of
// bab-online's bots and plays one game; the server exits 3 s after gameEnd, printing the score.
// The recorder should write that game whole, valid, with that final score.
'use strict';
process.env.NODE_ENV = 'production';
const path = require('path');
const http = require('http');
const Module = require('module');
const SRC = process.argv[2];
const PORT = parseInt(process.argv[3], 10);
const MODULES = path.resolve(process.argv[4] || '.', 'node_modules');
const server = path.join(SRC, 'server');
const users = new Map(); // username -> doc
const coll = {
    findOne: async (q) => {
        if (!users.has(q.username)) users.set(q.username, { username: q.username, password: 'pw' });
        return { ...users.get(q.username) };
    },
    updateOne: async (q, u) => {
        const doc = users.get(q.username) || { username: q.username, password: 'pw' };
        Object.assign(doc, u.$set || {});
        users.set(q.username, doc);
        return null;
    },
};
const anyColl = new Proxy(coll, { get: (t, p) => t[p] || (async () => null) });
const noop = () => {};
const logger = new Proxy({}, { get: () => noop });
const joi = new Proxy(function () {}, {
    get: (t, p) => (p === 'validate' ? (d) => ({ value: d }) : joi),
    apply: () => joi,
});
const STUBS = [
    [(r) => r === 'joi', () => joi],
    [(r) => r === './rateLimiter', () => ({ check: () => true, clearSocket: () => {} })],
    [(r) => r === 'dotenv', () => ({ config: noop })],
    [(r) => r === 'bcryptjs', () => ({ compare: async (a, b) => a === b, hash: async (a) => a })],
    [(r) => r === 'uuid', () => ({ v4: () => require('crypto').randomUUID() })],
    [(r) => r.endsWith('utils/logger'), () => new Proxy({}, { get: () => logger })],
    [(r) => r === '../database' || r === './database', () => ({
        connectDB: async () => {}, getDB: () => null,
        getUsersCollection: () => anyColl, getGameRecordsCollection: () => anyColl,
    })],
];
const orig = Module.prototype.require;
Module.prototype.require = function (request) {
    for (const [m, make] of STUBS) if (m(request)) return make();
    return orig.apply(this, arguments);
};
// bab-online's delays (bot thinking, trick pauses) 20 times shorter; Socket.IO's own timers untouched
STUBS.push([(r) => r.endsWith('utils/timing'), () => ({
    delay: (ms) => new Promise((resolve) => setTimeout(resolve, ms / 20)),
    schedule: (cb, ms) => setTimeout(cb, ms / 20), debounce: (fn) => fn,
})]);

const { Server } = require(path.join(MODULES, 'socket.io'));
const { setupSocketHandlers } = require(path.join(server, 'socket', 'index.js'));
const rules = require(path.join(server, 'game', 'rules'));
const BotPlayer = require(path.join(server, 'game', 'bot', 'BotPlayer'));
const slow = BotPlayer.prototype.getActionDelay;
BotPlayer.prototype.getActionDelay = function (kind) { return slow.call(this, kind) / 20; };
const httpServer = http.createServer();
const io = new Server(httpServer, { cors: { origin: '*' } });
setupSocketHandlers(io);
httpServer.listen(PORT, () => {
    process.stdout.write(`listening ${PORT}\n`);
    setTimeout(human, 4000); // (the recorder signs in first)
});

function human() {
    const { io: client } = require(path.join(MODULES, 'socket.io-client'));
    const s = client(`http://127.0.0.1:${PORT}`, { transports: ['websocket'] });
    let pos = null, hand = [], trump = null, lead = null, leadPos = null, broken = false, bidding = true;
    let signed = false;
    s.on('connect', () => { if (!signed) { signed = true; s.emit('signIn', { username: 'player1', password: 'pw' }); } else process.stdout.write('human reconnected\n'); });
    s.on('signInResponse', () => { s.emit('createLobby', {}); });
    s.on('lobbyCreated', () => { s.emit('addBot'); s.emit('addBot'); s.emit('addBot'); setTimeout(() => s.emit('playerReady'), 500); });
    s.on('startDraw', () => setTimeout(() => s.emit('draw', { num: 3 }), 50));
    s.on('gameStart', (d) => { pos = d.position; hand = d.hand; trump = d.trump; bidding = true; lead = null; broken = false; });
    s.on('doneBidding', () => { bidding = false; });
    s.on('cardPlayed', (d) => {
        if (!lead) { lead = d.card; leadPos = d.position; }
        broken = d.trump;
        if (d.position === pos) hand = hand.filter((c) => !(c.suit === d.card.suit && c.rank === d.card.rank));
    });
    s.on('trickComplete', () => { lead = null; });
    s.on('updateTurn', (d) => {
        if (d.currentTurn !== pos) return;
        setTimeout(() => {
            if (bidding) { s.emit('playerBid', { bid: '1', position: pos }); return; }
            const ok = (card) => {
                const rest = hand.filter((c) => c !== card);
                if (!lead) return rules.isLegalMove(card, rest, card, true, trump, broken, pos, pos) || rules.isTrumpTight(hand, trump);
                return rules.isLegalMove(card, rest, lead, false, trump, broken, pos, leadPos);
            };
            const order = [...hand.filter(ok), ...hand.filter((c) => !ok(c))];
            const count = hand.length;
            const tryCard = (k) => {
                if (k >= order.length || hand.length < count) return;
                s.emit('playCard', { card: order[k], position: pos });
                setTimeout(() => tryCard(k + 1), 150);
            };
            tryCard(0);
        }, 20);
    });
    s.on('gameEnd', (d) => {
        process.stdout.write(`gameEnd ${JSON.stringify(d.score)}\n`);
        setTimeout(() => process.exit(0), 3000);
    });
}
