// A forum's use of rollboard through a TypeScript client generated from /openapi.json by
// @hey-api/openapi-ts, type-checked with `strict` (scripts/contract). A windowed board
// ranks posts over 1 h and 24 h, a trending board by decayed score; then a counter, a
// stat and a rate check; then a like on several boards at once, a write answering its
// standing, member data, rate coverage, the bottom and reads by
// share, bulk removal, hiding a member and the moderation log, a review gate, a watched top's changes and movement, unique likers (per_contributor_member), what a user gave and who liked a post, a daily budget (per_contributor), a bot's likes taken back, a bot quarantined and released, and the dashboard. Every answer is compared with exact values:
// any difference throws, and node exits non-zero.
//
// Run by scripts/contract: ROLLBOARD_ADMIN_TOKEN=<token> node ts-out/forum.js BASE_URL
//
// The flow is typed through and through: no type assertions and no property-presence
// checks (scripts/contract greps this file for both). A reply that is one of two shapes
// is narrowed by its `kind`.

import { client } from './ts-client/client.gen.js';
import type { BoardPage, DecisionBody } from './ts-client/index.js';
import {
  boardsAround,
  boardsChanges,
  boardsDeleteMemberData,
  boardsGetMemberData,
  boardsHidden,
  boardsHideMember,
  boardsMember,
  boardsPostEvents,
  boardsPut,
  boardsPutMemberData,
  boardsRanks,
  boardsRemoveMembers,
  boardsReview,
  boardsReviewQueue,
  boardsScoreAt,
  boardsShowMember,
  boardsTop,
  boardsTrim,
  contributorsGet,
  contributorsOfMember,
  contributorsQuarantine,
  contributorsRelease,
  contributorsRetract,
  contributorsRetraction,
  countersIncr,
  countersSamples,
  dashboardBoards,
  dashboardGet,
  eventsPostMulti,
  membersAcross,
  moderationLog,
  ratesCheck,
  ratesCounts,
  statsGet,
  statsRecord,
} from './ts-client/index.js';

// The generated functions answer { data, error, response }: data for a documented
// success status, error for a documented error status (or what fetch threw, and no
// response).
type Reply<T> = { data: T | undefined; error: unknown; response: Response | undefined };

// The reply's body when its status is `status`; throws with the body otherwise.
function expectStatus<T>(what: string, reply: Reply<T>, status: number): T {
  const { data, error, response } = reply;
  if (response === undefined) {
    throw new Error(`${what}: no response: ${String(error)}`);
  }
  if (response.status !== status || data === undefined) {
    const body = JSON.stringify(error ?? data ?? null);
    throw new Error(`${what}: expected HTTP ${status}, got ${response.status} ${body}`);
  }
  return data;
}

// JSON with object keys sorted, so that comparing two values ignores field order only.
function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(canonical).join(',')}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const fields = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

// Throws unless `actual` is `expected`, every field and element (numbers exactly).
function same(what: string, actual: unknown, expected: unknown): void {
  const got = canonical(actual);
  const want = canonical(expected);
  if (got !== want) {
    throw new Error(`${what}:\n  expected ${want}\n  got      ${got}`);
  }
}

// Throws unless low <= actual <= high.
function between(what: string, actual: number, low: number, high: number): void {
  if (!(actual >= low && actual <= high)) {
    throw new Error(`${what}: expected a number from ${low} to ${high}, got ${actual}`);
  }
}

// An error's message is free text, but not empty.
function message(what: string, text: string): void {
  if (text.length === 0) {
    throw new Error(`${what}: an empty error message`);
  }
}

const HOUR = 3600;
const DAY = 86400;
const HALF_LIFE = 6 * HOUR;
// Client and service share this host's clock; allow for millisecond rounding.
const SLACK = 0.002;

const now = (): number => Date.now() / 1000;

// The end of the 1 h slot holding `t` (the board's slots are aligned to the hour).
const slotEnd = (t: number): number => Math.floor(t / HOUR) * HOUR + HOUR;

// The window (`length` seconds) of a windowed read made between `before` and `after`:
// `to` is the end of the current slot and `from` `length` earlier. Answers `[from, to]`
// once checked.
function span(
  what: string,
  read: { from: number; to: number },
  before: number,
  after: number,
  length: number,
): [number, number] {
  between(`${what}: to`, read.to, slotEnd(before), slotEnd(after));
  same(`${what}: from`, read.from, read.to - length);
  return [read.from, read.to];
}

// The 24 h window of a windowed read (see `span`).
function day(what: string, read: { from: number; to: number }, before: number, after: number): [number, number] {
  return span(what, read, before, after, DAY);
}

// A trending write: its delta, and the client's clock just before and after it.
type Write = { delta: number; sent: number; answered: number };

// Sends a write and records when, for the decayed scores read later.
async function timed<T>(send: () => Promise<T>): Promise<[T, number, number]> {
  const sent = now();
  const result = await send();
  return [result, sent, now()];
}

// Throws unless `score` is the writes decayed to `at`: each delta · 2^(−age/half-life),
// with the write's time somewhere from its sending to its answer. Answers the score.
function decayed(what: string, score: number, writes: Write[], at: number): number {
  let low = 0;
  let high = 0;
  for (const w of writes) {
    low += w.delta * 2 ** (-(at - (w.sent - SLACK)) / HALF_LIFE);
    high += w.delta * 2 ** (-(at - (w.answered + SLACK)) / HALF_LIFE);
  }
  between(what, score, low * (1 - 1e-12), high * (1 + 1e-12));
  return score;
}

// Creates a windowed board with 1 h slots and these windows (201).
async function createWindowed(board: string, windows: string[]): Promise<void> {
  const created = expectStatus(`PUT ${board}`, await boardsPut({ path: { board }, body: { slot: '1h', windows } }), 201);
  same(`PUT ${board}`, [created.kind, created.name], ['windowed', board]);
}

// Several boards at once: a like counted on two boards and a third not created yet
// (its error, the others written), the keyed retry once it exists (the two replayed,
// the third written), a batch naming its boards per event, then the post on all three.
async function severalBoards(run: string): Promise<void> {
  const [likes, rust, week] = [`likes-${run}`, `rust-${run}`, `week-${run}`];
  await createWindowed(likes, ['1h', '24h']);
  await createWindowed(rust, ['24h']);
  const like = { boards: [likes, rust, week], member: 'post:1' };
  const key = `like-${run}-post-1`;
  const written = (board: string, accepted: number, replayed: boolean) => ({ board, accepted, rejected: [], replayed });
  const first = expectStatus(
    'multi: a like',
    await eventsPostMulti({ headers: { 'Idempotency-Key': key }, body: like }),
    200,
  );
  same('multi: a like', first, {
    boards: [
      written(likes, 1, false),
      written(rust, 1, false),
      { board: week, error: { code: 'board_not_found', message: `board "${week}" does not exist` } },
    ],
  });
  await createWindowed(week, ['24h']);
  const retry = expectStatus(
    'multi: the retry',
    await eventsPostMulti({ headers: { 'Idempotency-Key': key }, body: like }),
    200,
  );
  same('multi: the retry', retry, {
    boards: [written(likes, 1, true), written(rust, 1, true), written(week, 1, false)],
  });
  const batch = expectStatus(
    'multi: a batch',
    await eventsPostMulti({
      body: {
        events: [
          { boards: [likes], member: 'post:1', delta: 2 },
          { boards: [week, likes], member: 'post:2', delta: 2 },
        ],
      },
    }),
    200,
  );
  same('multi: a batch', batch, { boards: [written(likes, 2, false), written(week, 1, false)] });

  // post:1 holds 3 of likes (post:2 below it: 2), 1 of rust (alone), 1 of week (post:2 ahead).
  const across = expectStatus(
    'post:1 across',
    await membersAcross({ path: { member: 'post:1' }, query: { boards: `${likes},${rust},${week}` } }),
    200,
  );
  const standing = (window: string, score: number, rank: number, percentile: number) => ({
    window,
    score,
    rank,
    percentile,
    behind: false,
  });
  same('post:1 across', across, {
    member: 'post:1',
    boards: [
      { kind: 'windowed', board: likes, windows: [standing('1h', 3, 1, 0.5), standing('1d', 3, 1, 0.5)] },
      { kind: 'windowed', board: rust, windows: [standing('1d', 1, 1, 0)] },
      { kind: 'windowed', board: week, windows: [standing('1d', 1, 2, 0)] },
    ],
  });
}

// Ties, the bottom and reads by share, then bulk removal (admin token) on a board of 8
// posts: 9, 7, 7, 5, 3 and three at 1. Leaves p1, p2 and p3 ranked.
async function bottomAndShares(run: string): Promise<string> {
  const mod = `mod-${run}`;
  await createWindowed(mod, ['1h']);
  const totals: Array<[string, number]> = [
    ['p1', 9],
    ['p2', 7],
    ['p3', 7],
    ['p4', 5],
    ['p5', 3],
    ['p6', 1],
    ['s1', 1],
    ['s2', 1],
  ];
  const events = totals.map(([member, delta]) => ({ member, delta }));
  same(
    `${mod}: events`,
    expectStatus(`${mod}: events`, await boardsPostEvents({ path: { board: mod }, body: { events } }), 200),
    { accepted: 8, rejected: [] },
  );
  // A windowed page of the 1 h window, its entries as [rank, member, score].
  const page = async (
    what: string,
    read: () => Promise<Reply<BoardPage>>,
    entries: Array<[number, string, number]>,
    board: string = mod,
  ) => {
    const before = now();
    const got = expectStatus(what, await read(), 200);
    const after = now();
    if (got.kind !== 'windowed') {
      throw new Error(`${what}: a ${got.kind} page`);
    }
    const [from, to] = span(what, got, before, after, HOUR);
    same(what, got, {
      kind: 'windowed',
      board,
      window: '1h',
      from,
      to,
      behind: false,
      lag_ms: 0,
      age_ms: 0,
      entries: entries.map(([rank, member, score]) => ({ rank, member, score })),
    });
  };
  // The bottom 3, lowest first: the three 1s, member descending, each with rank 6.
  await page('bottom 3', () => boardsTop({ path: { board: mod }, query: { order: 'asc', limit: 3 } }), [
    [6, 's2', 1],
    [6, 's1', 1],
    [6, 'p6', 1],
  ]);
  // The top 25 % of 8 ranked: 2 entries.
  await page('top 25 %', () => boardsTop({ path: { board: mod }, query: { percent: 25 } }), [
    [1, 'p1', 9],
    [2, 'p2', 7],
  ]);
  // Around the first with n=1: fill keeps 3 entries, from rank 1.
  await page('around p1, full', () => boardsAround({ path: { board: mod, member: 'p1' }, query: { n: 1, fill: true } }), [
    [1, 'p1', 9],
    [2, 'p2', 7],
    [2, 'p3', 7],
  ]);
  // The score that beats half of them: 1, 1, 1, 3 are below 4.
  same(
    'score at 0.5',
    expectStatus('score at 0.5', await boardsScoreAt({ path: { board: mod }, query: { percentile: 0.5 } }), 200),
    { percentile: 0.5, score: 4, ranked: 8, below: 4, window: '1h' },
  );
  // Removal by list (nobody holds nothing: not counted), then keep the top 3.
  same(
    'remove a list',
    expectStatus(
      'remove a list',
      await boardsRemoveMembers({ path: { board: mod }, body: { members: ['s1', 's2', 'nobody'] } }),
      200,
    ),
    { removed: 2, members: ['s1', 's2'], more: false },
  );
  same(
    'trim to 3',
    expectStatus('trim to 3', await boardsTrim({ path: { board: mod }, query: { window: '1h', top: 3 } }), 200),
    { removed: 3, members: ['p4', 'p5', 'p6'], more: false },
  );
  await page('top after the trim', () => boardsTop({ path: { board: mod } }), [
    [1, 'p1', 9],
    [2, 'p2', 7],
    [2, 'p3', 7],
  ]);
  // A moderator hides p1 (its likes kept, the ranks below close up), reviews what the
  // board hides, and shows it again; the log says who and why.
  const note = { reason: `spam report ${run}`, actor: 'mod:alice' };
  same(
    'hide p1',
    expectStatus('hide p1', await boardsHideMember({ path: { board: mod, member: 'p1' }, body: note }), 200),
    { board: mod, member: 'p1', hidden: true, changed: true },
  );
  await page('top with p1 hidden', () => boardsTop({ path: { board: mod } }), [
    [1, 'p2', 7],
    [1, 'p3', 7],
  ]);
  // Members hidden on every board (by a run before this one) are hidden here too.
  const hidden = expectStatus('hidden members', await boardsHidden({ path: { board: mod } }), 200);
  same(
    'hidden members',
    [hidden.board, hidden.window, hidden.members.filter((m) => m.member === 'p1')],
    [mod, '1h', [{ member: 'p1', score: 9 }]],
  );
  expectStatus('show p1', await boardsShowMember({ path: { board: mod, member: 'p1' } }), 200);
  await page('top with p1 shown', () => boardsTop({ path: { board: mod } }), [
    [1, 'p1', 9],
    [2, 'p2', 7],
    [2, 'p3', 7],
  ]);
  const log = expectStatus('moderation log', await moderationLog({ query: { limit: 2 } }), 200);
  same(
    'moderation log',
    log.entries.map((e) => [e.action, e.member, e.boards, e.reason, e.actor]),
    [
      ['show', 'p1', [mod], undefined, undefined],
      ['hide', 'p1', [mod], note.reason, note.actor],
    ],
  );
  // A board with a review gate holds the newcomer that would lead until a moderator
  // allows it (members of this run's own: schemathesis may have hidden short names on
  // every board).
  const gate = `gate-${run}`;
  const [regular, newcomer] = [`regular-${run}`, `newcomer-${run}`];
  const gated = { slot: '1h', windows: ['1h'], review: { above_rank: 1 } };
  expectStatus('gated board', await boardsPut({ path: { board: gate }, body: gated }), 201);
  const allowRegular: DecisionBody = { member: regular, decision: 'allow' };
  expectStatus('allow the regular', await boardsReview({ path: { board: gate }, body: allowRegular }), 200);
  const likes = { events: [{ member: regular, delta: 3 }, { member: newcomer, delta: 5 }] };
  expectStatus('gated likes', await boardsPostEvents({ path: { board: gate }, body: likes }), 200);
  await page('gated top', () => boardsTop({ path: { board: gate } }), [[1, regular, 3]], gate);
  const queue = expectStatus('review queue', await boardsReviewQueue({ path: { board: gate } }), 200);
  same('review queue', [queue.above_rank, queue.held], [1, [{ member: newcomer, score: 5, rank: 1 }]]);
  const allowNewcomer: DecisionBody = { member: newcomer, decision: 'allow', actor: note.actor };
  same(
    'allow the newcomer',
    expectStatus('allow the newcomer', await boardsReview({ path: { board: gate }, body: allowNewcomer }), 200),
    { board: gate, member: newcomer, decision: 'allow', changed: true },
  );
  const allowed: Array<[number, string, number]> = [
    [1, newcomer, 5],
    [2, regular, 3],
  ];
  await page('top with the newcomer allowed', () => boardsTop({ path: { board: gate } }), allowed, gate);
  // A watched top records who entered, and who passed whom, in order.
  const watched = `watched-${run}`;
  const watching = { slot: '1h', windows: ['1h'], watch: [{ window: '1h', top: 2 }] };
  expectStatus('watched board', await boardsPut({ path: { board: watched }, body: watching }), 201);
  const [first, second] = [`first-${run}`, `second-${run}`];
  const entering = { events: [{ member: first, delta: 2 }, { member: second, delta: 1 }] };
  expectStatus('watched likes', await boardsPostEvents({ path: { board: watched }, body: entering }), 200);
  const passing = { events: [{ member: second, delta: 2 }] };
  expectStatus('a like that passes', await boardsPostEvents({ path: { board: watched }, body: passing }), 200);
  const changes = expectStatus('changes', await boardsChanges({ path: { board: watched } }), 200);
  same(
    'changes',
    changes.changes.map((c) => [c.type, c.member, c.rank, c.score, c.from, c.to, c.passed, c.cause]),
    [
      ['entered', first, 1, 2, undefined, undefined, undefined, 'write'],
      ['entered', second, 2, 1, undefined, undefined, undefined, 'write'],
      ['moved', second, 1, 3, 2, 1, [first], 'write'],
      ['moved', first, 2, 2, 1, 2, [second], 'write'],
    ],
  );
  const after = changes.changes[1]?.id;
  const later = expectStatus('changes after', await boardsChanges({ path: { board: watched }, query: { after, limit: 1 } }), 200);
  same('changes after', later.changes.map((c) => c.member), [second]);
  // With movement since an hour ago, before the board was made: both posts are new.
  const moving = expectStatus('top with movement', await boardsTop({ path: { board: watched }, query: { with: 'movement', since: '1h' } }), 200);
  if (moving.kind !== 'windowed') {
    throw new Error(`top with movement: a ${moving.kind} page`);
  }
  same('top with movement', moving.entries.map((e) => [e.rank, e.member, e.movement]), [
    [1, second, { was: null }],
    [2, first, { was: null }],
  ]);
  return mod;
}

// Unique likers: a board counting each user once per post; what each like counted, the
// top, what one user gave and who gave to one post; then a budget per user.
async function uniqueLikers(run: string): Promise<void> {
  const likers = `likers-${run}`;
  const config = { slot: '1h', windows: ['1h', '24h'], per_contributor_member: 1 };
  expectStatus('likers board', await boardsPut({ path: { board: likers }, body: config }), 201);
  const counted: Array<number | undefined> = [];
  for (const by of ['u1', 'u1', 'u2']) {
    const like = { member: 'post:1', by };
    const reply = expectStatus(`like by ${by}`, await boardsPostEvents({ path: { board: likers }, body: like }), 200);
    counted.push(typeof reply.counted === 'number' ? reply.counted : undefined);
  }
  same('counted', counted, [1, 0, 1]);
  const batch = { events: [{ member: 'post:2', by: 'u1' }, { member: 'post:2', by: 'u1' }, { member: 'post:2' }] };
  const written = expectStatus('a batch with by', await boardsPostEvents({ path: { board: likers }, body: batch }), 200);
  same('batch counted', written.counted, [
    { index: 0, counted: 1 },
    { index: 1, counted: 0 },
  ]);
  const ranked = expectStatus('unique likers', await boardsTop({ path: { board: likers }, query: { window: '24h' } }), 200);
  if (ranked.kind !== 'windowed') {
    throw new Error(`unique likers: a ${ranked.kind} page`);
  }
  same('unique likers', ranked.entries.map((e) => [e.rank, e.member, e.score]), [
    [1, 'post:1', 2],
    [1, 'post:2', 2],
  ]);
  const view = expectStatus('contributor u1', await contributorsGet({ path: { by: 'u1' }, query: { boards: likers } }), 200);
  const members = [
    { member: 'post:1', contributed: 2, counted: 1 },
    { member: 'post:2', contributed: 2, counted: 1 },
  ];
  same('contributor u1', view, {
    by: 'u1',
    boards: [
      {
        board: likers,
        windows: [
          { window: '1h', contributed: 4, counted: 2, members },
          { window: '1d', contributed: 4, counted: 2, members },
        ],
      },
    ],
  });
  // Who liked post:1: u1 (twice, counted once) and u2; the first of them only.
  const post = expectStatus(
    'contributors of post:1',
    await contributorsOfMember({ path: { board: likers, member: 'post:1' }, query: { limit: 1 } }),
    200,
  );
  const top = [{ by: 'u1', contributed: 2, counted: 1 }];
  same('contributors of post:1', post, {
    board: likers,
    member: 'post:1',
    windows: [
      { window: '1h', contributors: 2, contributed: 3, counted: 2, top },
      { window: '1d', contributors: 2, contributed: 3, counted: 2, top },
    ],
  });
  // A budget of 2 likes a day per user: u3's third like counts nothing.
  const daily = `daily-${run}`;
  const budget = { slot: '1h', windows: ['1h', '24h'], per_contributor: 2 };
  expectStatus('daily board', await boardsPut({ path: { board: daily }, body: budget }), 201);
  const likes = { events: ['post:1', 'post:2', 'post:3'].map((member) => ({ member, by: 'u3' })) };
  const spent = expectStatus('likes over the budget', await boardsPostEvents({ path: { board: daily }, body: likes }), 200);
  same('budget counted', spent.counted, [
    { index: 0, counted: 1 },
    { index: 1, counted: 1 },
    { index: 2, counted: 0 },
  ]);
  // u3 was a bot: its likes are taken back as if never given, and its budget is free.
  const retracted = expectStatus(
    'retract u3',
    await contributorsRetract({ path: { by: 'u3' }, body: { boards: [daily] } }),
    200,
  );
  const done = { by: 'u3', state: 'done', boards: 1, boards_left: 0, contributions: 3, events: 3 };
  same('retract u3', retracted, done);
  same('retraction of u3', expectStatus('retraction of u3', await contributorsRetraction({ path: { by: 'u3' } }), 200), done);
  const emptied = expectStatus('daily after retract', await boardsTop({ path: { board: daily }, query: { window: '24h' } }), 200);
  same('daily after retract', emptied.entries.length, 0);
  const again = expectStatus('a like after retract', await boardsPostEvents({ path: { board: daily }, body: { member: 'post:4', by: 'u3' } }), 200);
  same('a like after retract', again.counted, 1);
  // A bot, quarantined: its likes count nowhere but answer as ever; then released.
  const bot = `bot-${run}`;
  const botLike = { member: 'post:1', by: bot };
  expectStatus('a bot like', await boardsPostEvents({ path: { board: likers }, body: botLike }), 200);
  const held = expectStatus('quarantine', await contributorsQuarantine({ path: { by: bot } }), 200);
  same('quarantine', [held.quarantined, held.changed, held.sums], [true, true, 2]);
  const heldLike = expectStatus('a held like', await boardsPostEvents({ path: { board: likers }, body: { member: 'post:3', by: bot } }), 200);
  same('a held like', heldLike.counted, 1);
  const heldTop = expectStatus('top while held', await boardsTop({ path: { board: likers }, query: { window: '24h' } }), 200);
  same('top while held', heldTop.entries.map((e) => [e.member, e.score]), [
    ['post:1', 2],
    ['post:2', 2],
  ]);
  const released = expectStatus('release', await contributorsRelease({ path: { by: bot } }), 200);
  same('release', [released.quarantined, released.changed, released.sums], [false, true, 4]);
  const freed = expectStatus('top after release', await boardsTop({ path: { board: likers }, query: { window: '24h' } }), 200);
  same('top after release', freed.entries.map((e) => [e.member, e.score]), [
    ['post:1', 3],
    ['post:2', 2],
    ['post:3', 1],
  ]);
}

// The dashboard's refresh with the trimmed board and one that does not exist (its
// error), without leaders (no histories) or counters; then the board picker's search.
async function dashboard(run: string, mod: string, boards: Array<[string, string]>): Promise<void> {
  const missing = `gone-${run}`;
  const before = Math.floor(now());
  const view = expectStatus(
    'dashboard',
    await dashboardGet({ query: { boards: `${mod},${missing}`, top: 3, leaders: 0, counters: '' } }),
    200,
  );
  between('dashboard: now', view.now, before, now());
  const to = slotEnd(view.now);
  same('dashboard: boards', view.boards, [
    {
      name: mod,
      kind: 'windowed',
      config: { slot: '1h', windows: ['1h'], offset: 0, ties: 'competition' },
      windows: [
        {
          window: '1h',
          members: 3,
          ranked: 3,
          lag_seconds: 0,
          from: to - HOUR,
          to,
          entries: [
            { rank: 1, member: 'p1', score: 9, data: null },
            { rank: 2, member: 'p2', score: 7, data: null },
            { rank: 2, member: 'p3', score: 7, data: null },
          ],
          snapshot: null,
          leaders: [],
        },
      ],
      histories: [],
    },
    { name: missing, error: { code: 'board_not_found', message: `board "${missing}" does not exist` } },
  ]);
  same('dashboard: counters shown', view.counters.shown, []);
  same('dashboard: stats', [view.stats.kind, view.stats.kinds.includes('AccessTime')], ['AccessTime', true]);
  // Every board of this run (name and kind), sorted by name, found by a part of the name.
  const found = expectStatus(
    'dashboard search',
    await dashboardBoards({ query: { search: `-${run}` } }),
    200,
  );
  const sorted = [...boards].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  same('dashboard search', [found.matched, found.boards], [sorted.length, sorted.map(([name, kind]) => ({ name, kind }))]);
}

// The standing a write produced, then member data: a like answered with where it took
// the post, a batch limited to one window, then titles kept beside the posts and read
// with the ranking, read alone, and deleted.
async function standingAndData(run: string): Promise<void> {
  const board = `titles-${run}`;
  await createWindowed(board, ['1h', '24h']);
  same(
    `${board}: events`,
    expectStatus(
      `${board}: events`,
      await boardsPostEvents({
        path: { board },
        body: {
          events: [
            { member: 'post:1', delta: 6, data: { title: 'Lifetimes' } },
            { member: 'post:2', delta: 4 },
            { member: 'post:3', delta: 2, data: { title: 'Pinning' } },
          ],
        },
      }),
      200,
    ),
    { accepted: 3, rejected: [] },
  );
  const moved = (window: string, score: number, rank: number | null, score_before: number, rank_before: number | null) => ({
    window,
    score,
    rank,
    score_before,
    rank_before,
  });
  same(
    'a like with its standing',
    expectStatus(
      'a like with its standing',
      await boardsPostEvents({ path: { board }, query: { return: 'standing' }, body: { member: 'post:3', delta: 3 } }),
      200,
    ),
    { accepted: 1, standings: [{ member: 'post:3', windows: [moved('1h', 5, 2, 2, 3), moved('1d', 5, 2, 2, 3)] }] },
  );
  same(
    'a batch with its 1h standing',
    expectStatus(
      'a batch with its 1h standing',
      await boardsPostEvents({
        path: { board },
        query: { return: 'standing', windows: '1h' },
        body: { events: [{ member: 'post:4', delta: 1 }, { member: 'post:2', delta: -4 }] },
      }),
      200,
    ),
    {
      accepted: 2,
      rejected: [],
      standings: [
        { member: 'post:4', windows: [moved('1h', 1, 3, 0, null)] },
        { member: 'post:2', windows: [moved('1h', 0, null, 4, 3)] },
      ],
    },
  );
  const put = await boardsPutMemberData({ path: { board, member: 'post:4' }, body: { title: 'Traits' } });
  same('PUT post:4 data', put.response?.status, 204);
  const before = now();
  const top = expectStatus('top with data', await boardsTop({ path: { board }, query: { with: 'data' } }), 200);
  const after = now();
  if (top.kind !== 'windowed') {
    throw new Error(`top with data: a ${top.kind} page`);
  }
  const [from, to] = span('top with data', top, before, after, HOUR);
  same('top with data', top, {
    kind: 'windowed',
    board,
    window: '1h',
    from,
    to,
    behind: false,
    lag_ms: 0,
    age_ms: 0,
    entries: [
      { rank: 1, member: 'post:1', score: 6, data: { title: 'Lifetimes' } },
      { rank: 2, member: 'post:3', score: 5, data: { title: 'Pinning' } },
      { rank: 3, member: 'post:4', score: 1, data: { title: 'Traits' } },
    ],
  });
  same(
    'GET post:1 data',
    expectStatus('GET post:1 data', await boardsGetMemberData({ path: { board, member: 'post:1' } }), 200),
    { title: 'Lifetimes' },
  );
  const deleted = await boardsDeleteMemberData({ path: { board, member: 'post:1' } });
  same('DELETE post:1 data', deleted.response?.status, 204);
  const gone = await boardsGetMemberData({ path: { board, member: 'post:1' } });
  same('GET post:1 data once deleted', gone.response?.status, 404);
}

// Rate counts by both coverages: two hits now count in the last minute either way.
async function rateCoverage(run: string): Promise<void> {
  const key = `reader-${run}`;
  for (const attempt of ['first', 'second']) {
    expectStatus(`rate check (${attempt}, full)`, await ratesCheck({ path: { key }, body: { limit: 5, last: '1m', coverage: 'full' } }), 200);
  }
  const partial = expectStatus('rate counts (partial)', await ratesCounts({ path: { key }, query: { last: '1m', coverage: 'partial' } }), 200);
  same('rate counts (partial)', partial.counts, { '1m': 2 });
  const full = expectStatus('rate counts (full)', await ratesCounts({ path: { key }, query: { last: '1m', coverage: 'full' } }), 200);
  same('rate counts (full)', full.counts, { '1m': 2 });
}

async function main(): Promise<void> {
  const baseUrl = process.argv[2];
  const token = process.env.ROLLBOARD_ADMIN_TOKEN;
  if (baseUrl === undefined || token === undefined || token === '') {
    throw new Error('usage: ROLLBOARD_ADMIN_TOKEN=<token> node forum.js BASE_URL');
  }
  // The token goes only where the document asks for one (its security requirements).
  client.setConfig({ baseUrl, auth: () => token });

  // Reads expect the totals to be exactly the window (`behind` false). At an hour's end
  // the oldest slot leaves the 24 h window and is retired at once; a run starting just
  // before that waits until just after it rather than race it.
  const left = HOUR - (now() % HOUR);
  if (left < 20) {
    await new Promise((resolve) => setTimeout(resolve, (left + 5) * 1000));
  }

  const run = `${Date.now()}-${process.pid}`;
  const forum = `forum-${run}`;
  const hot = `hot-${run}`;

  // Boards: a windowed one (1 h slots; 1 h and 24 h windows) and a trending one.
  const windowed = expectStatus(
    `PUT ${forum}`,
    await boardsPut({ path: { board: forum }, body: { slot: '1h', windows: ['1h', '24h'] } }),
    201,
  );
  if (windowed.kind === 'windowed') {
    same(`PUT ${forum}`, [windowed.name, windowed.config, windowed.live_slots], [
      forum,
      { slot: '1h', windows: ['1h', '1d'], offset: 0, ties: 'competition' },
      0,
    ]);
    same(
      `PUT ${forum}: windows`,
      windowed.windows.map((w) => [w.window, w.members, w.ranked, w.lag_seconds, w.building]),
      [
        ['1h', 0, 0, 0, false],
        ['1d', 0, 0, 0, false],
      ],
    );
  } else {
    throw new Error(`PUT ${forum}: a ${windowed.kind} board`);
  }
  const trending = expectStatus(
    `PUT ${hot}`,
    await boardsPut({ path: { board: hot }, body: { kind: 'trending', half_life: '6h' } }),
    201,
  );
  if (trending.kind === 'trending') {
    same(
      `PUT ${hot}`,
      [trending.name, trending.config, trending.members, trending.ranked, trending.rescaling],
      [hot, { half_life: '6h', floor: 0.001, max_age: '60h' }, 0, 0, false],
    );
  } else {
    throw new Error(`PUT ${hot}: a ${trending.kind} board`);
  }

  // Events on the windowed board: one, then a batch whose third event is older than
  // every window (too_late), then a keyed write sent twice (applied once).
  const one = expectStatus(
    'one event',
    await boardsPostEvents({ path: { board: forum }, body: { member: 'post:1', delta: 2 } }),
    200,
  );
  same('one event', one, { accepted: 1 });
  const batch = expectStatus(
    'a batch',
    await boardsPostEvents({
      path: { board: forum },
      body: { events: [{ member: 'post:2', delta: 5 }, { member: 'post:1' }, { member: 'post:3', at: 1000 }] },
    }),
    200,
  );
  const late = batch.rejected?.[0]?.error.message ?? '';
  same('a batch', batch, { accepted: 2, rejected: [{ index: 2, error: { code: 'too_late', message: late } }] });
  message('a batch: too_late', late);
  const key = `forum-${run}-post-4`;
  for (const attempt of ['first', 'retry']) {
    const keyed = expectStatus(
      `a keyed write (${attempt})`,
      await boardsPostEvents({
        path: { board: forum },
        headers: { 'Idempotency-Key': key },
        body: { member: 'post:4', delta: 7 },
      }),
      200,
    );
    same(`a keyed write (${attempt})`, keyed, { accepted: 1 });
  }

  // The same single event and batch on the trending board: there the old event is
  // older than the max age (60 h), too_old.
  const [trendOne, sent1, answered1] = await timed(() =>
    boardsPostEvents({ path: { board: hot }, body: { member: 'post:1', delta: 2 } }),
  );
  same('trending: one event', expectStatus('trending: one event', trendOne, 200), { accepted: 1 });
  const [trendBatch, sent2, answered2] = await timed(() =>
    boardsPostEvents({
      path: { board: hot },
      body: { events: [{ member: 'post:2', delta: 5 }, { member: 'post:1' }, { member: 'post:3', at: 1000 }] },
    }),
  );
  const trendBatchBody = expectStatus('trending: a batch', trendBatch, 200);
  const old = trendBatchBody.rejected?.[0]?.error.message ?? '';
  same('trending: a batch', trendBatchBody, {
    accepted: 2,
    rejected: [{ index: 2, error: { code: 'too_old', message: old } }],
  });
  message('trending: too_old', old);
  // What each trending member was written, and when.
  const post1: Write[] = [
    { delta: 2, sent: sent1, answered: answered1 },
    { delta: 1, sent: sent2, answered: answered2 },
  ];
  const post2: Write[] = [{ delta: 5, sent: sent2, answered: answered2 }];

  // The top of each board.
  let before = now();
  const top = expectStatus(
    'windowed top',
    await boardsTop({ path: { board: forum }, query: { window: '24h', limit: 10 } }),
    200,
  );
  let after = now();
  if (top.kind === 'windowed') {
    const [from, to] = day('windowed top', top, before, after);
    same('windowed top', top, {
      kind: 'windowed',
      board: forum,
      window: '1d',
      from,
      to,
      behind: false,
      lag_ms: 0,
      age_ms: 0,
      entries: [
        { rank: 1, member: 'post:4', score: 7 },
        { rank: 2, member: 'post:2', score: 5 },
        { rank: 3, member: 'post:1', score: 3 },
      ],
    });
  } else {
    throw new Error(`windowed top: a ${top.kind} page`);
  }
  // The same page allowed to be a minute old: the first read fills this process's cache,
  // the second is answered from it, with the same entries and its age.
  const cachedQuery = { window: '24h', limit: 10, max_staleness_ms: 60000 };
  before = now();
  const filled = expectStatus('cached top', await boardsTop({ path: { board: forum }, query: cachedQuery }), 200);
  const cached = expectStatus('cached top again', await boardsTop({ path: { board: forum }, query: cachedQuery }), 200);
  after = now();
  if (top.kind === 'windowed' && filled.kind === 'windowed' && cached.kind === 'windowed') {
    same('cached top: entries', cached.entries, top.entries);
    same('cached top: first read', filled.age_ms, 0);
    between('cached top: age_ms', cached.age_ms, 0, Math.ceil((after - before) * 1000));
  } else {
    throw new Error('cached top: not a windowed page');
  }
  before = now();
  const hotTop = expectStatus('trending top', await boardsTop({ path: { board: hot }, query: { limit: 10 } }), 200);
  after = now();
  if (hotTop.kind === 'trending') {
    between('trending top: at', hotTop.at, before - SLACK, after + SLACK);
    const at = hotTop.at;
    const scores = hotTop.entries.map((e) => e.score);
    same('trending top', hotTop, {
      kind: 'trending',
      board: hot,
      at,
      age_ms: 0,
      entries: [
        { rank: 1, member: 'post:2', score: decayed('trending top: post:2', scores[0] ?? NaN, post2, at) },
        { rank: 2, member: 'post:1', score: decayed('trending top: post:1', scores[1] ?? NaN, post1, at) },
      ],
    });
  } else {
    throw new Error(`trending top: a ${hotTop.kind} page`);
  }

  // A member's standing and percentile: the share of ranked members strictly below.
  // post:4 holds 7, not 14: the keyed write was applied once.
  for (const [member, score, rank, percentile] of [
    ['post:4', 7, 1, 2 / 3],
    ['post:2', 5, 2, 1 / 3],
  ] satisfies Array<[string, number, number, number]>) {
    before = now();
    const standing = expectStatus(
      `${member} on ${forum}`,
      await boardsMember({ path: { board: forum, member }, query: { window: '24h' } }),
      200,
    );
    after = now();
    if (standing.kind === 'windowed') {
      const [from, to] = day(`${member} on ${forum}`, standing, before, after);
      same(`${member} on ${forum}`, standing, {
        kind: 'windowed',
        member,
        score,
        rank,
        percentile,
        window: '1d',
        from,
        to,
        behind: false,
        lag_ms: 0,
        age_ms: 0,
      });
    } else {
      throw new Error(`${member} on ${forum}: a ${standing.kind} standing`);
    }
  }
  before = now();
  const hotStanding = expectStatus('post:2 trending', await boardsMember({ path: { board: hot, member: 'post:2' } }), 200);
  after = now();
  if (hotStanding.kind === 'trending') {
    between('post:2 trending: at', hotStanding.at, before - SLACK, after + SLACK);
    same('post:2 trending', hotStanding, {
      kind: 'trending',
      member: 'post:2',
      score: decayed('post:2 trending', hotStanding.score, post2, hotStanding.at),
      rank: 1,
      percentile: 0.5,
      at: hotStanding.at,
      age_ms: 0,
    });
  } else {
    throw new Error(`post:2 trending: a ${hotStanding.kind} standing`);
  }

  // The ranks of a list of members, in the order asked; an unknown one has rank null.
  const members = 'post:2,post:9,post:1';
  before = now();
  const ranks = expectStatus('windowed ranks', await boardsRanks({ path: { board: forum }, query: { members, window: '24h' } }), 200);
  after = now();
  if (ranks.kind === 'windowed') {
    const [from, to] = day('windowed ranks', ranks, before, after);
    same('windowed ranks', ranks, {
      kind: 'windowed',
      board: forum,
      window: '1d',
      from,
      to,
      behind: false,
      lag_ms: 0,
      age_ms: 0,
      entries: [
        { member: 'post:2', score: 5, rank: 2 },
        { member: 'post:9', score: 0, rank: null },
        { member: 'post:1', score: 3, rank: 3 },
      ],
    });
  } else {
    throw new Error(`windowed ranks: ${ranks.kind} ranks`);
  }
  before = now();
  const hotRanks = expectStatus('trending ranks', await boardsRanks({ path: { board: hot }, query: { members } }), 200);
  after = now();
  if (hotRanks.kind === 'trending') {
    between('trending ranks: at', hotRanks.at, before - SLACK, after + SLACK);
    const at = hotRanks.at;
    const scores = hotRanks.entries.map((e) => e.score);
    same('trending ranks', hotRanks, {
      kind: 'trending',
      board: hot,
      at,
      age_ms: 0,
      entries: [
        { member: 'post:2', score: decayed('trending ranks: post:2', scores[0] ?? NaN, post2, at), rank: 1 },
        { member: 'post:9', score: 0, rank: null },
        { member: 'post:1', score: decayed('trending ranks: post:1', scores[2] ?? NaN, post1, at), rank: 2 },
      ],
    });
  } else {
    throw new Error(`trending ranks: ${hotRanks.kind} ranks`);
  }

  // Around post:1: it and one neighbour on each side (it is last on both boards).
  before = now();
  const around = expectStatus(
    'windowed around',
    await boardsAround({ path: { board: forum, member: 'post:1' }, query: { n: 1, window: '24h' } }),
    200,
  );
  after = now();
  if (around.kind === 'windowed') {
    const [from, to] = day('windowed around', around, before, after);
    same('windowed around', around, {
      kind: 'windowed',
      board: forum,
      window: '1d',
      from,
      to,
      behind: false,
      lag_ms: 0,
      age_ms: 0,
      entries: [
        { rank: 2, member: 'post:2', score: 5 },
        { rank: 3, member: 'post:1', score: 3 },
      ],
    });
  } else {
    throw new Error(`windowed around: a ${around.kind} page`);
  }
  before = now();
  const hotAround = expectStatus(
    'trending around',
    await boardsAround({ path: { board: hot, member: 'post:1' }, query: { n: 1 } }),
    200,
  );
  after = now();
  if (hotAround.kind === 'trending') {
    between('trending around: at', hotAround.at, before - SLACK, after + SLACK);
    const at = hotAround.at;
    const scores = hotAround.entries.map((e) => e.score);
    same('trending around', hotAround, {
      kind: 'trending',
      board: hot,
      at,
      age_ms: 0,
      entries: [
        { rank: 1, member: 'post:2', score: decayed('trending around: post:2', scores[0] ?? NaN, post2, at) },
        { rank: 2, member: 'post:1', score: decayed('trending around: post:1', scores[1] ?? NaN, post1, at) },
      ],
    });
  } else {
    throw new Error(`trending around: a ${hotAround.kind} page`);
  }

  // A counter of page views: 3, then an empty body (1); its samples add up to 4.
  const views = `views-${run}`;
  same('counter +3', expectStatus('counter +3', await countersIncr({ path: { name: views }, body: { count: 3 } }), 200), {
    name: views,
    count: 3,
  });
  same('counter +1', expectStatus('counter +1', await countersIncr({ path: { name: views } }), 200), {
    name: views,
    count: 1,
  });
  const samples = expectStatus('counter samples', await countersSamples({ path: { name: views } }), 200);
  same(
    'counter samples',
    [samples.name, samples.samples.reduce((sum, [, count]) => sum + (count ?? 0), 0)],
    [views, 4],
  );

  // A stat: one read time of a thread page (a context holding `/`, percent-encoded).
  const context = `forum/thread/${run}`;
  const recorded = expectStatus(
    'stat',
    await statsRecord({ path: { context, kind: 'ReadTime' }, body: { value: 0.25 } }),
    200,
  );
  same('stat', recorded, { context, kind: 'ReadTime', value: 0.25 });
  const stats = expectStatus('stat read', await statsGet({ path: { context, kind: 'ReadTime' } }), 200);
  // The current hour holds it, or the previous one when an hour began since.
  const hour = stats.current ?? stats.previous;
  same(
    'stat read',
    [stats.context, stats.kind, hour?.count, hour?.sum, hour?.min, hour?.max, hour?.mean, hour?.stddev],
    [context, 'ReadTime', 1, 0.25, 0.25, 0.25, 0.25, 0],
  );

  // A rate window: at most 2 posts a minute per user; the third is refused.
  const user = `user:${run}`;
  for (const [attempt, allowed, count] of [
    ['first', true, 1],
    ['second', true, 2],
    ['third', false, 2],
  ] satisfies Array<[string, boolean, number]>) {
    const verdict = expectStatus(
      `rate check (${attempt})`,
      await ratesCheck({ path: { key: user }, body: { limit: 2, last: '1m' } }),
      200,
    );
    const retryAfter = verdict.retry_after ?? NaN;
    if (!allowed) {
      between(`rate check (${attempt}): retry_after`, retryAfter, Number.MIN_VALUE, 60);
    }
    same(`rate check (${attempt})`, verdict, { allowed, count, limit: 2, retry_after: allowed ? 0 : retryAfter });
  }

  await severalBoards(run);
  await standingAndData(run);
  await rateCoverage(run);
  await uniqueLikers(run);
  const mod = await bottomAndShares(run);
  await dashboard(run, mod, [
    [forum, 'windowed'],
    [hot, 'trending'],
    [`likes-${run}`, 'windowed'],
    [`rust-${run}`, 'windowed'],
    [`titles-${run}`, 'windowed'],
    [`week-${run}`, 'windowed'],
    [mod, 'windowed'],
    [`gate-${run}`, 'windowed'],
    [`watched-${run}`, 'windowed'],
    [`likers-${run}`, 'windowed'],
    [`daily-${run}`, 'windowed'],
  ]);

  console.log(
    `typescript client: boards ${forum} and ${hot}: events, a batch, a keyed retry, top, standing, ranks, around; a counter, a stat, a rate check; several boards at once, the standing of a write, member data, rate coverage, the bottom, shares, bulk removal, hiding a member and the moderation log, a review gate, a watched top's changes, unique likers, who liked a post, a daily budget, a bot's likes taken back, a bot quarantined and released, the dashboard`,
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
