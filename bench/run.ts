/**
 * `npm run bench` runs every benchmark and prints a table per benchmark, then writes the whole
 * report to .bench-out/report.json. `npm run bench -- --quick` is a short pass;
 * `--only=overhead,streaming,large,long-chat,savings` picks benchmarks (or name them: `npm run bench
 * -- many-chats`); `--only=profile` profiles the gateway's CPU under load; `peers` measures another
 * gateway from npm beside it; `instructions` counts each request's CPU instructions under valgrind
 * (repeatable on a busy machine); `side-by-side` measures this tree's gateway against another
 * revision's (`BENCH_BASE`, default HEAD) taking turns; `--chats=N` sets the number of chats of
 * many-chats.
 */
import { closeClient } from './http-client.ts';
import type { BenchContext } from './context.ts';
import { machineInfo } from './machine.ts';
import { printSection, writeJson, type SectionReport } from './report.ts';
import { overheadBench } from './overhead.ts';
import { streamingBench } from './streaming.ts';
import { largeRequestsBench } from './large-requests.ts';
import { longChatBench } from './long-chat.ts';
import { savingsBench } from './savings.ts';
import { profileBench } from './profile.ts';
import { manyChatsBench } from './many-chats.ts';
import { peersBench } from './peers.ts';
import { instructionsBench } from './instructions.ts';
import { sideBySideBench } from './side-by-side.ts';

const BENCHES: Record<string, (ctx: BenchContext) => Promise<SectionReport>> = {
  overhead: overheadBench,
  streaming: streamingBench,
  large: largeRequestsBench,
  'long-chat': longChatBench,
  savings: savingsBench,
  profile: profileBench,
  'many-chats': manyChatsBench,
  peers: peersBench,
  instructions: instructionsBench,
  'side-by-side': sideBySideBench,
};
/** What `npm run bench` runs without --only (the profile, the peers, the instruction counts and side by side are on request). */
const DEFAULT = ['overhead', 'streaming', 'large', 'long-chat', 'savings', 'many-chats'];

function parseArgs(argv: string[]): { quick: boolean; only: string[]; chats?: number } {
  let quick = false;
  let only = DEFAULT;
  let chats: number | undefined;
  const named = argv.filter((a) => a in BENCHES);
  if (named.length) only = named;
  for (const a of argv) {
    if (a === '--quick') quick = true;
    else if (a in BENCHES) continue;
    else if (/^--chats=[1-9][0-9]*$/.test(a)) chats = Number(a.slice('--chats='.length));
    else if (a.startsWith('--only=')) {
      only = a
        .slice('--only='.length)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = only.filter((n) => !(n in BENCHES));
      if (unknown.length) {
        throw new Error(
          `unknown benchmark(s) ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`,
        );
      }
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(
        `usage: npm run bench -- [--quick] [--chats=N] [--only=${Object.keys(BENCHES).join(',')} | <name>...]\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return { quick, only, ...(chats ? { chats } : {}) };
}

async function main(): Promise<void> {
  const { quick, only, chats } = parseArgs(process.argv.slice(2));
  const machine = machineInfo();
  const started = Date.now();
  process.stdout.write(
    `Oda Gateway benchmarks${quick ? ' (quick pass)' : ''}\n` +
      `machine: ${machine.cpuModel}, ${machine.cores} cores (${machine.availableParallelism} available), ` +
      `${machine.memoryGB} GB, ${machine.platform}, Node.js ${machine.node}\n`,
  );
  const ctx: BenchContext = {
    quick,
    ...(chats ? { chats } : {}),
    progress: (m) => process.stderr.write(`  [${((Date.now() - started) / 1000).toFixed(0)}s] ${m}\n`),
  };
  const sections: SectionReport[] = [];
  for (const name of only) {
    ctx.progress(`starting ${name}`);
    const section = await BENCHES[name]!(ctx);
    sections.push(section);
    printSection(section);
  }
  await closeClient();
  const totalSeconds = (Date.now() - started) / 1000;
  const missed = sections.flatMap((s) => s.targets.filter((t) => !t.met));
  process.stdout.write(
    `\ntotal ${totalSeconds.toFixed(0)} s; targets met ${sections.flatMap((s) => s.targets).length - missed.length}` +
      `/${sections.flatMap((s) => s.targets).length}\n`,
  );
  writeJson('.bench-out/report.json', {
    generatedAt: new Date().toISOString(),
    command: `npm run bench --${quick ? ' --quick' : ''} --only=${only.join(',')}`,
    quick,
    machine,
    totalSeconds,
    sections,
  });
  process.stdout.write('report written to .bench-out/report.json\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
