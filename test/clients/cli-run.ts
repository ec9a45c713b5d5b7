/**
 * Runs the real agent CLIs installed in test/clients/node_modules (by `npm run test:clients`) with a
 * throwaway home, telemetry, auto-update and other extras off, and a time limit, so a hung CLI fails
 * its test instead of hanging CI.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The native Claude Code binary from its platform package (`@anthropic-ai/claude-code-<os>-<cpu>`),
 * or `bin/claude.exe` of the wrapper package, which its postinstall makes a copy of it.
 */
export const claudeBin = ((): string => {
  const musl = process.platform === 'linux' && !glibcRuntime() ? '-musl' : '';
  const native = join(
    here,
    'node_modules',
    '@anthropic-ai',
    `claude-code-${process.platform}-${process.arch}${musl}`,
    process.platform === 'win32' ? 'claude.exe' : 'claude',
  );
  return existsSync(native)
    ? native
    : join(here, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
})();

function glibcRuntime(): boolean {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime !== undefined;
}

/** Codex's launcher (`@openai/codex`), which execs the native binary of its platform package. */
export const codexBin = join(here, 'node_modules', '@openai', 'codex', 'bin', 'codex.js');

/** Both CLIs are installed (the tests skip with a reason when they are not). */
export const clisInstalled = existsSync(claudeBin) && existsSync(codexBin);

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The time limit ran out and the CLI was killed. */
  timedOut: boolean;
}

export interface CliSandbox {
  /** The throwaway HOME. */
  home: string;
  /** A working directory inside it (the project the agent works on). */
  cwd: string;
  cleanup(): void;
}

/** A fresh HOME with a project directory, removed by cleanup(). */
export function makeSandbox(prefix: string): CliSandbox {
  // realpath: the CLIs resolve symlinks in their cwd, so paths they print match ours.
  const home = realpathSync(mkdtempSync(join(tmpdir(), `oda-${prefix}-`)));
  const cwd = join(home, 'project');
  mkdirSync(cwd, { recursive: true });
  return { home, cwd, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/** The fake key the CLIs send; the gateway forwards it (pass-through), the fake provider ignores it. */
export const fakeAnthropicKey = 'sk-ant-api03-oda-client-test-key-0000000000000000';
export const fakeOpenaiKey = 'sk-oda-client-test-key-0000000000000000';

/** The environment every CLI run starts from: no inherited credentials, proxies or config. */
function baseEnv(home: string): NodeJS.ProcessEnv {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TERM', 'TZ', 'SHELL'];
  const env: NodeJS.ProcessEnv = {};
  for (const k of keep) if (process.env[k] !== undefined) env[k] = process.env[k];
  env.HOME = home;
  env.XDG_CONFIG_HOME = join(home, '.config');
  env.XDG_CACHE_HOME = join(home, '.cache');
  env.XDG_DATA_HOME = join(home, '.local', 'share');
  env.TMPDIR = join(home, 'tmp');
  mkdirSync(env.TMPDIR, { recursive: true });
  env.NO_PROXY = '127.0.0.1,localhost';
  return env;
}

/** Claude Code's environment: pointed at `baseUrl`, every non-essential call and update off. */
export function claudeEnv(
  sandbox: CliSandbox,
  baseUrl: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    ...baseEnv(sandbox.home),
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: fakeAnthropicKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
    // As root, --dangerously-skip-permissions is refused outside a sandbox.
    IS_SANDBOX: '1',
    ...extra,
  };
}

/**
 * Writes Claude Code's user settings and state into the sandbox: onboarding done, the fake key
 * approved and the project trusted (so interactive mode asks nothing), plus `settings`.
 */
export function writeClaudeConfig(sandbox: CliSandbox, settings: Record<string, unknown> = {}): void {
  const dir = join(sandbox.home, '.claude');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'settings.json'), JSON.stringify({ ...settings }, null, 2));
  writeFileSync(
    join(sandbox.home, '.claude.json'),
    JSON.stringify(
      {
        hasCompletedOnboarding: true,
        lastOnboardingVersion: '2.1.332',
        theme: 'dark',
        customApiKeyResponses: { approved: [fakeAnthropicKey.slice(-20)], rejected: [] },
        projects: {
          [sandbox.cwd]: {
            hasTrustDialogAccepted: true,
            hasCompletedProjectOnboarding: true,
            allowedTools: [],
          },
        },
      },
      null,
      2,
    ),
  );
}

/** Runs a command to its end or until `timeoutMs`, then kills its whole process group. */
export function runCli(
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; stdin?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
    child.stdin.end(opts.stdin ?? '');
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A readable summary of a CLI run for assertion messages. */
export function describeRun(r: CliResult): string {
  const cut = (s: string) => (s.length > 3000 ? `${s.slice(0, 1500)}\n...\n${s.slice(-1500)}` : s);
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}${r.timedOut ? ' TIMED OUT' : ''}\n--- stdout\n${cut(r.stdout)}\n--- stderr\n${cut(r.stderr)}`;
}

/** Codex's environment: its home in the sandbox and the provider key in ODA_TEST_OPENAI_KEY. */
export function codexEnv(sandbox: CliSandbox, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...baseEnv(sandbox.home),
    CODEX_HOME: join(sandbox.home, '.codex'),
    ODA_TEST_OPENAI_KEY: fakeOpenaiKey,
    RUST_LOG: 'error',
    ...extra,
  };
}

/**
 * Writes Codex's config.toml: a custom model provider whose base URL is `baseUrl` (ending in /v1)
 * on the Responses wire, no approvals, full access (the sandbox is the throwaway home), no update
 * check, no analytics or feedback, no OpenTelemetry export.
 */
export function writeCodexConfig(sandbox: CliSandbox, baseUrl: string, model = 'gpt-5.1-codex'): void {
  const dir = join(sandbox.home, '.codex');
  mkdirSync(dir, { recursive: true });
  const toml = [
    `model = "${model}"`,
    'model_provider = "oda"',
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    'hide_agent_reasoning = true',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[otel]',
    'exporter = "none"',
    'log_user_prompt = false',
    '',
    '[model_providers.oda]',
    'name = "Oda gateway"',
    `base_url = "${baseUrl}"`,
    'env_key = "ODA_TEST_OPENAI_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 2',
    'stream_max_retries = 2',
    'stream_idle_timeout_ms = 30000',
    '',
    `[projects."${sandbox.cwd}"]`,
    'trust_level = "trusted"',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'config.toml'), toml);
}

/** A CLI kept running with its stdin open, read line by line (Claude Code's stream-json mode). */
export interface LiveCli {
  /** Every stdout line so far, parsed when JSON. */
  readonly lines: unknown[];
  send(line: unknown): void;
  /** Resolves with the first line (already seen or coming) that `match` accepts. */
  waitFor(match: (line: unknown) => boolean, what: string): Promise<unknown>;
  /** Closes stdin and waits for the exit (killed at the time limit). */
  finish(): Promise<CliResult>;
}

/** Starts a CLI whose whole run must end within `timeoutMs`. */
export function startLiveCli(
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): LiveCli {
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: unknown[] = [];
  const waiters: Array<{ match: (l: unknown) => boolean; resolve: (l: unknown) => void }> = [];
  let stdout = '';
  let stderr = '';
  let pending = '';
  let timedOut = false;
  let exited: CliResult | undefined;
  const failWaiters: Array<(err: Error) => void> = [];
  child.stdout.on('data', (c: Buffer) => {
    const s = c.toString('utf8');
    stdout += s;
    pending += s;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const raw = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (!raw) continue;
      let line: unknown = raw;
      try {
        line = JSON.parse(raw);
      } catch {
        // keep the text
      }
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, opts.timeoutMs);
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      exited = { code, signal, stdout, stderr, timedOut };
      for (const f of failWaiters) f(new Error(`CLI ended first:\n${describeRun(exited)}`));
      resolve(exited);
    });
  });
  return {
    lines,
    send(line) {
      child.stdin.write(`${JSON.stringify(line)}\n`);
    },
    waitFor(match, what) {
      const seen = lines.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      if (exited) return Promise.reject(new Error(`CLI ended before ${what}:\n${describeRun(exited)}`));
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        failWaiters.push((err) => reject(new Error(`waiting for ${what}: ${err.message}`)));
      });
    },
    finish() {
      child.stdin.end();
      return done;
    },
  };
}
