// The Node service a forum team would otherwise write in an afternoon: the benchmark's
// peer (phase `peer`, benches/rollboard/peer.rs). redis-rank's LeaderboardMatrix (an
// hourly and a daily dimension, one `likes` feature added to on every like) behind
// fastify with ioredis, one worker per core through node:cluster, on rollboard's routes
// and bodies. Its windows are calendar hours and days, not rolling ones: it does less
// than rollboard, and is timed as it is.
//
// PEER_PORT (default 8090), REDIS_URL (default redis://127.0.0.1:6379/), PEER_WORKERS
// (default: one per core).
'use strict';
const cluster = require('node:cluster');
const os = require('node:os');

const port = Number(process.env.PEER_PORT || 8090);
if (cluster.isPrimary) {
  const workers = Number(process.env.PEER_WORKERS || os.availableParallelism());
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', (_, code) => process.exit(code || 1));
} else {
  const Fastify = require('fastify');
  const { Redis } = require('ioredis');
  const { LeaderboardMatrix } = require('redis-rank');

  const client = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379/');
  const matrices = new Map();
  // The board's matrix: window 1h is the hourly dimension, 24h the daily one.
  const matrix = (board) => {
    let m = matrices.get(board);
    if (!m) {
      m = new LeaderboardMatrix(client, `peer:${board}`, {
        dimensions: [{ name: '1h', cycle: 'hourly' }, { name: '24h', cycle: 'daily' }],
        features: [{ name: 'likes', options: { sortPolicy: 'high-to-low', updatePolicy: 'aggregate' } }],
      });
      matrices.set(board, m);
    }
    return m;
  };
  const ranking = (req) => matrix(req.params.board).getLeaderboard(req.query.window || '24h', 'likes');
  const entry = (e) => ({ member: e.id, score: e.score, rank: e.rank });

  const app = Fastify({ logger: false });
  app.put('/v1/boards/:board', async (req, reply) => {
    matrix(req.params.board);
    return reply.code(201).send({ board: req.params.board });
  });
  // One like ({"member"}, delta 1 unless given), or a batch ({"events": [...]}).
  app.post('/v1/boards/:board/events', async (req) => {
    const events = req.body.events || [req.body];
    const entries = events.map((e) => ({ id: e.member, values: { likes: e.delta ?? 1 } }));
    await matrix(req.params.board).update(entries);
    return { accepted: entries.length, rejected: [] };
  });
  app.get('/v1/boards/:board/top', async (req) => {
    const entries = await ranking(req).top(Number(req.query.limit || 10));
    return { board: req.params.board, window: req.query.window || '24h', entries: entries.map(entry) };
  });
  app.get('/v1/boards/:board/members/:member', async (req, reply) => {
    const found = await ranking(req).find(req.params.member);
    if (!found) return reply.code(404).send({ error: { code: 'member_not_found', message: 'no such member' } });
    return entry(found);
  });
  app.get('/v1/boards/:board/members/:member/around', async (req) => {
    const entries = await ranking(req).around(req.params.member, Number(req.query.n || 5));
    return { board: req.params.board, entries: entries.map(entry) };
  });
  app.listen({ port, host: '127.0.0.1' }).catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
