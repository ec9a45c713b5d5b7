/**
 * Benchmark: many chats on the file store (SPEC section 13). 100,000 one-turn chats are written as
 * chat files (copies of a turn the gateway itself logged, ids and times changed), a 45 MB chat
 * beside them, and a gateway is started on that data dir with no chat index: it builds the index in
 * the background while it serves. Then it measures:
 * - how long the index build takes, and `GET /v1/sessions` and `/healthz` while it runs;
 * - a page of `GET /v1/sessions` (first page, deep pages by cursor, team, id substring, date range);
 * - RSS after more chats were created through the gateway (one turn each, as clients do);
 * - RSS while 10 clients read the 45 MB chat's whole log at once (`/events`, page by page);
 * - a page right after a clean restart and right after a hard kill (the index is then checked).
 * `npm run bench -- many-chats` runs it alone; `--chats=N` changes the number of chats.
 */
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { BenchContext } from './context.ts';
import { startChild, procStatusBytes, type ChildHandle, type ChildUsage } from './processes.ts';
import { gatewayConfig } from './stack.ts';
import type { SectionReport, TargetCheck } from './report.ts';
import { median, percentile, sig } from './stats.ts';

const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });

/** Milliseconds and body of one GET. */
async function get(url: string): Promise<{ ms: number; status: number; text: string }> {
  const t0 = performance.now();
  const res = await request(url, { dispatcher: agent });
  const text = await res.body.text();
  return { ms: performance.now() - t0, status: res.statusCode, text };
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<number> {
  const res = await request(url, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  await res.body.text();
  return res.statusCode;
}

interface ListBody {
  data: Array<{ id: string }>;
  next_cursor: string | null;
  indexing?: boolean;
}

const MB = 1024 * 1024;

async function metric(gw: ChildHandle, name: string): Promise<number | undefined> {
  const { text } = await get(`${gw.url}/metrics`);
  const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

async function startGw(
  fakeUrl: string,
  dir: string,
  name: string,
): Promise<{ gw: ChildHandle; listenMs: number }> {
  const t0 = performance.now();
  const gw = await startChild(
    name,
    './gateway-process.ts',
    { config: gatewayConfig(fakeUrl, join(dir, 'data'), { logLevel: 'info' }) },
    { stdoutFile: join(dir, 'gateway.log') },
  );
  return { gw, listenMs: performance.now() - t0 };
}

async function hardKill(gw: ChildHandle): Promise<void> {
  process.kill(gw.pid, 'SIGKILL');
  while (existsSync(`/proc/${gw.pid}`)) {
    const stat = readFileSync(`/proc/${gw.pid}/stat`, 'utf8').split(' ')[2];
    if (stat === 'Z') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await gw.stop(); // reaps it
}

/** One real turn through a scratch gateway: its log file is the template of every seeded chat. */
async function templateChat(fakeUrl: string, root: string): Promise<string[]> {
  const dir = mkdtempSync(join(root, 'template-'));
  const { gw } = await startGw(fakeUrl, dir, 'gateway (template)');
  try {
    const status = await post(
      `${gw.url}/v1/chat/completions`,
      { model: 'gpt-test', messages: [{ role: 'user', content: 'Summarise the build log, please.' }] },
      { 'x-session-id': 'template' },
    );
    if (status !== 200) throw new Error(`template turn answered ${status}`);
  } finally {
    await gw.stop();
  }
  const lines = readFileSync(join(dir, 'data', 'chats', 'template.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean);
  rmSync(dir, { recursive: true, force: true });
  return lines;
}

/**
 * Writes `n` chats (`chat-<i>`, every tenth in team `red`) last active one second apart, and one
 * 45 MB chat (`big`, 450 events of 100 KB) beside them; returns the seconds it took.
 */
function seedChats(chatsDir: string, template: string[], n: number, t0: number): number {
  const started = performance.now();
  mkdirSync(chatsDir, { recursive: true });
  const header = JSON.parse(template[0]!) as Record<string, unknown>;
  const events = template.slice(1).map((l) => JSON.parse(l) as Record<string, unknown>);
  // Each line as text with holes for the id and the time, so 100k files cost string joins only.
  const eventText = events.map((e) => JSON.stringify({ ...e, at: 0 }).replace('"at":0', '"at":@AT@'));
  for (let i = 0; i < n; i++) {
    const team = i % 10 === 0 ? 'red' : undefined;
    const id = team ? `t:red:chat-${i}` : `chat-${i}`;
    const at = t0 + i * 1000;
    const h = JSON.stringify({ ...header, id, createdAt: at, ...(team ? { team } : {}) });
    const body = eventText.map((t) => t.replace('@AT@', String(at))).join('\n');
    writeFileSync(join(chatsDir, `${id}.jsonl`), `${h}\n${body}\n`);
  }
  const user = events.find((e) => e.type === 'message');
  if (!user) throw new Error('the template turn has no message event');
  const big = [JSON.stringify({ ...header, id: 'big', createdAt: t0 - 1 })];
  const filler = 'x'.repeat(100 * 1024);
  for (let s = 0; s < 450; s++) {
    big.push(JSON.stringify({ ...user, seq: s, at: t0 - 1, content: [{ kind: 'text', text: filler }] }));
  }
  writeFileSync(join(chatsDir, 'big.jsonl'), `${big.join('\n')}\n`);
  return (performance.now() - started) / 1000;
}

/** Page latencies of the listing variants, `rounds` each (ms). */
async function pageLatencies(url: string, rounds: number, lastAt: number): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = { first: [], deep: [], team: [], idContains: [], range: [] };
  for (let r = 0; r < rounds; r++) {
    out.first!.push((await get(`${url}/v1/sessions?limit=50`)).ms);
    out.team!.push((await get(`${url}/v1/sessions?limit=50&team=red`)).ms);
    out.idContains!.push((await get(`${url}/v1/sessions?limit=50&id_contains=chat-4242`)).ms);
    out.range!.push(
      (await get(`${url}/v1/sessions?limit=50&from=${lastAt - 3_600_000}&to=${lastAt - 1_800_000}`)).ms,
    );
  }
  // Deep pages: walk 100 pages of 50 by cursor (5,000 chats down).
  let cursor: string | null = null;
  for (let p = 0; p < 100; p++) {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const res = await get(`${url}/v1/sessions?limit=50${q}`);
    out.deep!.push(res.ms);
    cursor = (JSON.parse(res.text) as ListBody).next_cursor;
    if (!cursor) break;
  }
  return out;
}

/** Ten clients reading the whole 45 MB chat at once, page by page; ms until all are done. */
async function concurrentReads(url: string): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  let bytes = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let offset: number | null = 0; offset !== null;) {
        const res = await get(`${url}/v1/sessions/big/events?offset=${offset}`);
        bytes += res.text.length;
        offset = (JSON.parse(res.text) as { next_offset: number | null }).next_offset;
      }
    }),
  );
  return { ms: performance.now() - t0, bytes };
}

export async function manyChatsBench(ctx: BenchContext): Promise<SectionReport> {
  const started = performance.now();
  const n = ctx.chats ?? (ctx.quick ? 20_000 : 100_000);
  const driven = ctx.quick ? 1_000 : 5_000;
  const root = mkdtempSync(join(tmpdir(), 'oda-bench-many-'));
  const fake = await startChild('fake provider', './fake-provider-process.ts', {});
  const notes: string[] = [];
  const data: Record<string, unknown> = { chats: n, driven };
  try {
    ctx.progress('many-chats: logging a template turn');
    const template = await templateChat(fake.url, root);
    const dir = join(root, 'run');
    const chatsDir = join(dir, 'data', 'chats');
    const t0 = Date.UTC(2026, 0, 1);
    const lastAt = t0 + (n - 1) * 1000;
    ctx.progress(`many-chats: writing ${n} chat files and a 45 MB chat`);
    const seedSeconds = seedChats(chatsDir, template, n, t0);
    data.seedSeconds = seedSeconds;

    // 1. First start: no index. It is built in the background; serving starts at once.
    ctx.progress('many-chats: first start, index built in the background');
    let { gw, listenMs } = await startGw(fake.url, dir, 'gateway');
    const buildStarted = performance.now();
    const duringPages: number[] = [];
    const duringHealth: number[] = [];
    let sawIndexing = false;
    for (;;) {
      const page = await get(`${gw.url}/v1/sessions?limit=50`);
      duringPages.push(page.ms);
      sawIndexing ||= (JSON.parse(page.text) as ListBody).indexing === true;
      duringHealth.push((await get(`${gw.url}/healthz`)).ms);
      if ((await metric(gw, 'oda_chat_index_rebuilding')) === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const buildSeconds = (performance.now() - buildStarted) / 1000;
    const indexed = await metric(gw, 'oda_chat_index_chats');
    data.firstStart = { listenMs, buildSeconds, indexed, duringPages, duringHealth, sawIndexing };

    const rssIndexed = procStatusBytes(gw.pid, 'VmRSS') ?? 0;
    const heapIndexed = await gw.usage();
    ctx.progress('many-chats: page latencies');
    const pages = await pageLatencies(gw.url, ctx.quick ? 5 : 15, lastAt);
    data.pages = pages;

    // 2. More chats through the gateway, one turn each, 16 at a time.
    ctx.progress(`many-chats: ${driven} new chats through the gateway`);
    const driveStarted = performance.now();
    let next = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < driven) {
          const i = next++;
          const status = await post(
            `${gw.url}/v1/chat/completions`,
            { model: 'gpt-test', messages: [{ role: 'user', content: `New chat ${i}: what changed?` }] },
            { 'x-session-id': `driven-${i}` },
          );
          if (status !== 200) failed++;
        }
      }),
    );
    const driveSeconds = (performance.now() - driveStarted) / 1000;
    const rssAfterDrive = procStatusBytes(gw.pid, 'VmRSS') ?? 0;
    // What the RSS holds: V8's heap (used of reserved) and memory outside it (buffers, native code).
    const heapAfterDrive = await gw.usage();
    const openChats = await get(`${gw.url}/metrics`).then((r) =>
      r.text.split('\n').filter((l) => l.startsWith('oda_open_chats{')),
    );
    data.drive = { driveSeconds, failed, rssAfterDrive, heapAfterDrive, openChats };
    const pagesAfterDrive = await pageLatencies(gw.url, 3, lastAt);

    // 3. Ten clients read the 45 MB chat's log at once.
    ctx.progress('many-chats: 10 concurrent reads of a 45 MB chat');
    const rssBeforeReads = procStatusBytes(gw.pid, 'VmRSS') ?? 0;
    const reads = await concurrentReads(gw.url);
    const peakAfterReads = gw.peakRss() ?? 0;
    const rssAfterReads = procStatusBytes(gw.pid, 'VmRSS') ?? 0;
    data.reads = { ...reads, rssBeforeReads, peakAfterReads, rssAfterReads };

    // 4. Clean restart: the index is trusted as it is; the first page is the first request.
    ctx.progress('many-chats: clean restart');
    await gw.stop();
    ({ gw, listenMs } = await startGw(fake.url, dir, 'gateway (restarted)'));
    const afterRestart = await get(`${gw.url}/v1/sessions?limit=50`);
    const restartPages = await pageLatencies(gw.url, 3, lastAt);
    const rssRestart = procStatusBytes(gw.pid, 'VmRSS') ?? 0;
    data.cleanRestart = { listenMs, firstPageMs: afterRestart.ms, restartPages, rssRestart };

    // 5. Hard kill: the index was not closed cleanly, so it is checked against the files.
    ctx.progress('many-chats: restart after a hard kill');
    await hardKill(gw);
    ({ gw, listenMs } = await startGw(fake.url, dir, 'gateway (after kill)'));
    const afterKill = await get(`${gw.url}/v1/sessions?limit=50`);
    const checkStarted = performance.now();
    const checkPages: number[] = [afterKill.ms];
    while ((await metric(gw, 'oda_chat_index_rebuilding')) !== 0) {
      checkPages.push((await get(`${gw.url}/v1/sessions?limit=50`)).ms);
      await new Promise((r) => setTimeout(r, 200));
    }
    const checkSeconds = (performance.now() - checkStarted) / 1000;
    data.killRestart = { listenMs, firstPageMs: afterKill.ms, checkSeconds, checkPages };
    const peakOverall = Math.max(peakAfterReads, gw.peakRss() ?? 0);
    await gw.stop();
    const files = readdirSync(chatsDir).length;
    data.files = files;

    const mb = (b: number) => sig(b / MB, 3);
    const heapOf = (u: ChildUsage) =>
      `V8 heap ${mb(u.heapUsed)} MB used of ${mb(u.heapTotal)}, external ${mb(u.external)} MB`;
    const p50 = (xs: number[]) => sig(median(xs), 3);
    const p95 = (xs: number[]) => sig(percentile(xs, 95), 3);
    const allPages = [...Object.values(pages).flat(), ...Object.values(pagesAfterDrive).flat()];
    const restartAll = [afterRestart.ms, ...Object.values(restartPages).flat()];
    const rssWithChats = Math.max(rssIndexed, rssAfterDrive, rssRestart);
    const targets: TargetCheck[] = [
      {
        name: `RSS with ${n + driven} chats (after paging and ${driven} new chats)`,
        target: '< 250 MB',
        measured: `${mb(rssWithChats)} MB`,
        met: rssWithChats < 250 * MB,
        missedBy: `+${mb(rssWithChats - 250 * MB)} MB`,
      },
      {
        name: 'GET /v1/sessions page (every variant, max)',
        target: '< 100 ms',
        measured: `${sig(Math.max(...allPages), 3)} ms (median ${p50(allPages)} ms)`,
        met: Math.max(...allPages) < 100,
      },
      {
        name: 'GET /v1/sessions page right after a clean restart (first request, then max)',
        target: '< 100 ms',
        measured: `${sig(afterRestart.ms, 3)} ms, max ${sig(Math.max(...restartAll), 3)} ms`,
        met: Math.max(...restartAll) < 100,
      },
      {
        name: '10 concurrent reads of a 45 MB chat: peak RSS',
        target: '< 1 GB (not gigabytes)',
        measured: `${mb(peakAfterReads)} MB`,
        met: peakAfterReads < 1024 * MB,
      },
    ];
    if (failed > 0) notes.push(`${failed} of the ${driven} driven calls did not answer 200`);
    if (!sawIndexing) notes.push('the index build finished before a page could be seen during it');
    notes.push(`peak RSS over the whole run (last gateway process): ${mb(peakOverall)} MB`);
    notes.push(`chats held in memory after the new chats: ${openChats.join(', ')}`);
    return {
      name: 'many chats (file store)',
      seconds: (performance.now() - started) / 1000,
      tables: [
        {
          title: `Many chats: ${n} one-turn chats + a 45 MB chat written as files (${sig(seedSeconds, 3)} s), then ${driven} new chats through the gateway`,
          headers: ['what', 'figure'],
          rows: [
            [
              'first start: time to listen (no index yet)',
              `${sig(data.firstStart ? listenMsOf(data) : 0, 3)} ms`,
            ],
            ['first start: index built from the files in', `${sig(buildSeconds, 3)} s (${indexed} chats)`],
            [
              '  page during the build, median / max',
              `${p50(duringPages)} / ${sig(Math.max(...duringPages), 3)} ms`,
            ],
            ['  /healthz during the build, max', `${sig(Math.max(...duringHealth), 3)} ms`],
            ['RSS once indexed', `${mb(rssIndexed)} MB (${heapOf(heapIndexed)})`],
            ['page: first (limit 50), median / p95', `${p50(pages.first!)} / ${p95(pages.first!)} ms`],
            [
              'page: 100 pages deep by cursor, median / max',
              `${p50(pages.deep!)} / ${sig(Math.max(...pages.deep!), 3)} ms`,
            ],
            ['page: team filter, median / p95', `${p50(pages.team!)} / ${p95(pages.team!)} ms`],
            [
              'page: id substring (scans), median / p95',
              `${p50(pages.idContains!)} / ${p95(pages.idContains!)} ms`,
            ],
            ['page: last-activity range, median / p95', `${p50(pages.range!)} / ${p95(pages.range!)} ms`],
            [
              `${driven} new chats through the gateway`,
              `${sig(driveSeconds, 3)} s (${sig(driven / driveSeconds, 3)} chats/s)`,
            ],
            ['RSS after them', `${mb(rssAfterDrive)} MB (${heapOf(heapAfterDrive)})`],
            [
              '10 concurrent reads of the 45 MB chat',
              `${sig(reads.ms / 1000, 3)} s, ${mb(reads.bytes)} MB sent`,
            ],
            [
              '  RSS before / peak (VmHWM) / after',
              `${mb(rssBeforeReads)} / ${mb(peakAfterReads)} / ${mb(rssAfterReads)} MB`,
            ],
            ['clean restart: time to listen', `${sig(listenMsOfClean(data), 3)} ms`],
            ['  first page right after', `${sig(afterRestart.ms, 3)} ms`],
            ['  RSS after restart and a few pages', `${mb(rssRestart)} MB`],
            ['after a hard kill: first page', `${sig(afterKill.ms, 3)} ms`],
            [
              '  index checked against the files in',
              `${sig(checkSeconds, 3)} s (pages meanwhile max ${sig(Math.max(...checkPages), 3)} ms)`,
            ],
          ],
        },
      ],
      targets,
      notes,
      data,
    };
  } finally {
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

function listenMsOf(data: Record<string, unknown>): number {
  return (data.firstStart as { listenMs: number }).listenMs;
}

function listenMsOfClean(data: Record<string, unknown>): number {
  return (data.cleanRestart as { listenMs: number }).listenMs;
}
