/**
 * A realistic long agent session, generated from a seed, for the savings benchmark: a coding agent
 * (Claude Code-like: a long system prompt, eight tools with long descriptions) works through tasks
 * a user gives it. Each step is one model call: the model answers with a little text and one or two
 * tool calls, the client sends the tool results back; now and then a task is done and the user
 * gives the next one. Tool results run from 200 characters to 60 KB (most small, a few huge); every
 * 12-18 steps a screenshot tool returns a small PNG and a media reference. Between steps the clock
 * moves 3-40 s; at most task ends, and rarely mid-task, the user is away 6-50 minutes, longer than
 * the 5-minute prompt-cache TTL.
 */
import { makePng } from './png.ts';
import { rng, text } from './bodies.ts';

type Obj = Record<string, unknown>;

export interface SessionStep {
  /** Milliseconds the clock moves before this model call. */
  waitMs: number;
  /** True when the wait is an idle gap longer than the cache TTL. */
  idle: boolean;
  /** What the model answers this call with. */
  reply: Obj[];
  /** What the client appends after the answer: the tool results, or the user's next task. */
  next: Obj;
}

export interface AgentSession {
  system: Obj[];
  tools: Obj[];
  firstUser: Obj;
  steps: SessionStep[];
}

const TOOL_NAMES = ['Read', 'Bash', 'Grep', 'Edit', 'Write', 'Glob', 'WebFetch', 'Screenshot'] as const;

function logUniform(r: () => number, lo: number, hi: number): number {
  return Math.round(Math.exp(Math.log(lo) + r() * (Math.log(hi) - Math.log(lo))));
}

/** Tool-result size: 75% 200-1,200 chars, 22% 1,200-6,000, 3% 8,000-60,000 (log-uniform in each). */
function resultChars(r: () => number): number {
  const u = r();
  if (u < 0.75) return logUniform(r, 200, 1_200);
  if (u < 0.97) return logUniform(r, 1_200, 6_000);
  return logUniform(r, 8_000, 60_000);
}

/** Tokens of a 1280 x 800 screenshot as Anthropic counts images (width x height / 750). */
const SCREENSHOT_TOKENS = Math.ceil((1280 * 800) / 750);

/**
 * `maxTokens`: the whole session stays under this many tokens (chars / 4, screenshots as Anthropic
 * counts them), so that with no mechanism at all it still fits the model's window: near the budget
 * the tools return small results only, as an agent reading small files would.
 */
export function agentSession(opts: { steps: number; seed?: number; maxTokens?: number }): AgentSession {
  const budget = (opts.maxTokens ?? 190_000) * 4;
  const r = rng(opts.seed ?? 2026);
  const tools = TOOL_NAMES.map((name) => ({
    name,
    description: `${name}: ${text(logUniform(r, 600, 1_800), r)}`,
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, command: { type: 'string' }, pattern: { type: 'string' } },
    },
  }));
  const system = [
    { type: 'text', text: `You are an interactive CLI agent for software engineering. ${text(9_000, r)}` },
    {
      type: 'text',
      text: `Environment: working directory /repo, platform linux. ${text(1_200, r)}`,
      cache_control: { type: 'ephemeral' },
    },
  ];
  const steps: SessionStep[] = [];
  // Characters so far (system prompt, tools, first message; screenshots at their token cost x 4).
  let used = JSON.stringify(system).length + JSON.stringify(tools).length + 1_000;
  let callId = 0;
  let shot = 0;
  let nextScreenshot = 12 + Math.floor(r() * 7);
  let taskLeft = 20 + Math.floor(r() * 25);
  let pendingIdle = false;
  for (let i = 0; i < opts.steps; i++) {
    let waitMs = 3_000 + Math.floor(r() * 37_000);
    let idle = false;
    if (pendingIdle || (i > 0 && r() < 0.01)) {
      waitMs = (6 + Math.floor(r() * 44)) * 60_000;
      idle = true;
      pendingIdle = false;
    }
    taskLeft--;
    if (taskLeft <= 0 && i < opts.steps - 1) {
      // The task is done: a text answer, then the user's next task (often after a break).
      steps.push({
        waitMs,
        idle,
        reply: [{ type: 'text', text: `Done. ${text(logUniform(r, 200, 1_200), r)}` }],
        next: {
          role: 'user',
          content: [{ type: 'text', text: `Next task: ${text(logUniform(r, 150, 1_200), r)}` }],
        },
      });
      taskLeft = 20 + Math.floor(r() * 25);
      pendingIdle = r() < 0.7;
      continue;
    }
    const calls = r() < 0.1 ? 2 : 1;
    const reply: Obj[] = [{ type: 'text', text: text(logUniform(r, 40, 300), r) }];
    used += JSON.stringify(reply).length;
    const results: Obj[] = [];
    for (let c = 0; c < calls; c++) {
      const id = `toolu_${String(++callId).padStart(5, '0')}`;
      const screenshot = --nextScreenshot <= 0;
      const name = screenshot ? 'Screenshot' : TOOL_NAMES[Math.floor(r() * (TOOL_NAMES.length - 1))]!;
      reply.push({
        type: 'tool_use',
        id,
        name,
        input: { path: `src/${text(12, r).replace(/\W+/g, '-')}.ts` },
      });
      let content: Obj[];
      if (screenshot) {
        shot++;
        nextScreenshot = 12 + Math.floor(r() * 7);
        const png = makePng(1280, 800, shot).toString('base64');
        content = [
          { type: 'text', text: `Screenshot saved. [Image: source: /tmp/shots/shot-${shot}.png]` },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
        ];
        used += 100 + SCREENSHOT_TOKENS * 4;
      } else {
        // Room left for the remaining steps at ~700 chars each decides how large a result may be.
        const room = budget - used - (opts.steps - i) * 700;
        const chars = Math.max(200, Math.min(resultChars(r), room));
        content = [{ type: 'text', text: text(chars, r) }];
        used += chars + 100;
      }
      results.push({ type: 'tool_result', tool_use_id: id, content });
    }
    steps.push({ waitMs, idle, reply, next: { role: 'user', content: results } });
  }
  return {
    system,
    tools,
    firstUser: {
      role: 'user',
      content: [{ type: 'text', text: `Please work on this repository. ${text(800, r)}` }],
    },
    steps,
  };
}

/**
 * The messages as the client sends them, with Claude Code-like cache markers: the last block of the
 * last message and of the user message before it. The history itself is never changed.
 */
export function withMarkers(messages: readonly Obj[]): Obj[] {
  const out = [...messages];
  let marked = 0;
  for (let i = out.length - 1; i >= 0 && marked < 2; i--) {
    const m = out[i]!;
    if (marked === 1 && m.role !== 'user') continue;
    const content = m.content as Obj[];
    const last = content[content.length - 1]!;
    out[i] = { ...m, content: [...content.slice(0, -1), { ...last, cache_control: { type: 'ephemeral' } }] };
    marked++;
  }
  return out;
}
