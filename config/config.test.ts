import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseConfig } from './config.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const refuses = (raw: unknown, pattern: RegExp) =>
  assert.throws(
    () => parseConfig(raw),
    (e: unknown) => e instanceof ConfigError && pattern.test(e.message),
  );

describe('config', () => {
  test('defaults: every section optional', () => {
    const c = parseConfig({});
    assert.equal(c.server.host, '127.0.0.1');
    assert.equal(c.server.port, 8080);
    assert.equal(c.server.bodyLimit, 50 * 1024 * 1024);
    assert.deepEqual(c.retries, { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000 });
    assert.deepEqual(c.toolResultTrimming, { thresholdChars: 8192, headChars: 4096, tailChars: 1024 });
    assert.equal(c.compaction.thresholdRatio, 0.8);
    assert.equal(c.pruning.mode, undefined);
    assert.equal(c.pruning.keepLastAssistants, 3);
    assert.equal(c.pruning.softTrimRatio, 0.3);
    assert.equal(c.pruning.hardClearRatio, 0.5);
    assert.equal(c.pruning.minPrunableToolChars, 50000);
    assert.deepEqual(c.pruning.softTrim, { maxChars: 4000, headChars: 1500, tailChars: 1500 });
    assert.deepEqual(c.pruning.hardClear, {
      enabled: true,
      placeholder: '[Old tool result content cleared]',
    });
    assert.deepEqual(c.pruning.imageReplay, { enabled: true, keepTurns: 3, chunkImages: 10 });
    assert.deepEqual(c.store, { kind: 'file', fsync: 'batch' });
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.pruning));
  });

  test('ttl parses 500ms, 30s, 5m, 1h, 1d, bare minutes and 0', () => {
    const ttl = (v: string | number) => parseConfig({ pruning: { ttl: v } }).pruning.ttl;
    assert.equal(ttl('500ms'), 500);
    assert.equal(ttl('30s'), 30_000);
    assert.equal(ttl('5m'), 300_000);
    assert.equal(ttl('1h'), 3_600_000);
    assert.equal(ttl('1d'), 86_400_000);
    assert.equal(ttl(10), 600_000);
    assert.equal(ttl('10'), 600_000);
    assert.equal(ttl(0), 0);
    refuses({ pruning: { ttl: 'soon' } }, /pruning\.ttl: expected a duration/);
  });

  test('unknown keys name the path and the allowed keys', () => {
    refuses({ servr: {} }, /\(root\): unknown key\(s\) "servr"; allowed keys are server, dataDir/);
    refuses(
      { toolResultTrimming: { maxChars: 5 } },
      /toolResultTrimming: unknown key\(s\) "maxChars"; allowed keys are thresholdChars, headChars, tailChars/,
    );
    refuses(
      { pruning: { softTrim: { max: 1 } } },
      /pruning\.softTrim: unknown key\(s\) "max"; allowed keys are maxChars, headChars, tailChars/,
    );
    // The store's kinds each have their keys.
    refuses(
      { store: { kind: 'file', fsnc: 'always' } },
      /store: unknown key\(s\) "fsnc"; allowed keys are kind, fsync \(kind: file\), kind, url, prefix.* \(kind: redis\)/,
    );
  });

  test('tool-result trimming limits are validated as the seed says', () => {
    refuses({ toolResultTrimming: { thresholdChars: 0 } }, /toolResultTrimming\.thresholdChars/);
    refuses({ toolResultTrimming: { thresholdChars: 1.5 } }, /toolResultTrimming\.thresholdChars/);
    refuses({ toolResultTrimming: { headChars: -1 } }, /toolResultTrimming\.headChars/);
    refuses(
      { toolResultTrimming: { thresholdChars: 100, headChars: 50, tailChars: 50 } },
      /headChars \(50\) \+ marker \(39\) \+ tailChars \(50\) = 139 must fit in thresholdChars \(100\)/,
    );
    assert.equal(
      parseConfig({ toolResultTrimming: { thresholdChars: 139, headChars: 50, tailChars: 50 } })
        .toolResultTrimming.thresholdChars,
      139,
    );
  });

  test('ratios outside [0, 1] and bad values are refused with the key path', () => {
    refuses({ pruning: { softTrimRatio: 1.5 } }, /pruning\.softTrimRatio/);
    refuses({ compaction: { thresholdRatio: -0.1 } }, /compaction\.thresholdRatio/);
    refuses({ providers: [{ name: 'x', format: 'grpc', baseUrl: 'http://a' }] }, /providers\.0\.format/);
    refuses(
      { providers: [{ name: 'x', format: 'openai', baseUrl: 'not a url' }] },
      /providers\.0\.baseUrl: expected an http\(s\) URL/,
    );
    refuses(
      { teams: [{ name: 't', keys: ['plain-key'] }] },
      /teams\.0\.keys\.0: expected sha256:<64 lowercase hex>/,
    );
    refuses({ server: { bodyLimit: 'huge' } }, /server\.bodyLimit/);
    // A size of no bytes would refuse every body: as text it is refused like the number 0.
    for (const bodyLimit of [0, '0', '0kb', '0.4b']) refuses({ server: { bodyLimit } }, /server\.bodyLimit/);
    refuses(
      {
        providers: [
          { name: 'a', format: 'openai', baseUrl: 'http://a' },
          { name: 'a', format: 'openai', baseUrl: 'http://b' },
        ],
      },
      /duplicate provider name "a"/,
    );
    // Names differing only in case are one name (as team names are).
    refuses(
      {
        providers: [
          { name: 'OpenAI', format: 'openai', baseUrl: 'http://a' },
          { name: 'local', format: 'openai', baseUrl: 'http://b' },
          { name: 'openai', format: 'openai', baseUrl: 'http://c' },
        ],
      },
      /providers\.2\.name: duplicate provider name "openai" \(providers\.0\.name; names are compared without case\)/,
    );
  });

  test('loadConfig reads YAML, expands ${VAR}, applies HOST/PORT/ODA_DATA_DIR', () => {
    const dir = tempDir('oda-config-');
    const file = join(dir, 'oda.yaml');
    writeFileSync(
      file,
      [
        'providers:',
        '  - name: local',
        '    format: openai',
        '    baseUrl: http://127.0.0.1:9001/v1',
        '    apiKey: ${LOCAL_KEY}',
        '    models: ["*"]',
      ].join('\n'),
    );
    const c = loadConfig({
      ODA_CONFIG: file,
      LOCAL_KEY: 'sk-local',
      PORT: '9999',
      HOST: '0.0.0.0',
      ODA_DATA_DIR: join(dir, 'd'),
    });
    assert.equal(c.providers[0]!.apiKey, 'sk-local');
    assert.equal(c.server.port, 9999);
    assert.equal(c.server.host, '0.0.0.0');
    assert.equal(c.dataDir, join(dir, 'd'));
    assert.equal(c.attachmentsDir, join(dir, 'd', 'attachments'));
    assert.throws(() => loadConfig({ ODA_CONFIG: file }), /environment variable LOCAL_KEY is not set/);
    // PORT is a port number, 0 for any free one; anything else names PORT.
    assert.equal(loadConfig({ ODA_CONFIG: file, LOCAL_KEY: 'k', PORT: '0' }).server.port, 0);
    for (const port of [' ', '0x1F90', '1e3', '99999', '-1', '80.5'])
      assert.throws(
        () => loadConfig({ ODA_CONFIG: file, LOCAL_KEY: 'k', PORT: port }),
        /^Error: PORT: expected a port number from 0 to 65535|PORT: expected a port number from 0 to 65535/,
        JSON.stringify(port),
      );
    const json = join(dir, 'oda.json');
    writeFileSync(json, '{"retries": {"maxRetries": 5}}');
    assert.equal(loadConfig({ ODA_CONFIG: json }).retries.maxRetries, 5);
    writeFileSync(json, '{"retries": ');
    assert.throws(() => loadConfig({ ODA_CONFIG: json }), /is not valid JSON/);
  });

  test('a config file that does not parse is named with where, never with its text (it holds keys)', () => {
    const dir = tempDir('oda-config-parse-');
    const yaml = join(dir, 'oda.yaml');
    writeFileSync(yaml, 'providers: []\napiKey: sk-live-SECRET\napiKey: sk-live-OTHER\n');
    const json = join(dir, 'oda.json');
    writeFileSync(json, '{\n  "apiKey": sk-live-SECRET\n}');
    for (const [path, where] of [
      [yaml, /is not valid YAML: Map keys must be unique at line 3, column 1$/],
      [json, /is not valid JSON: unexpected content( at line \d+, column \d+)?$/],
    ] as const) {
      assert.throws(
        () => loadConfig({ ODA_CONFIG: path }),
        (e: unknown) => e instanceof ConfigError && where.test(e.message) && !e.message.includes('sk-live'),
      );
    }
  });

  test('YAML problems whose parser message quotes the text at fault are named without it, warnings refused unprinted', async () => {
    const dir = tempDir('oda-config-yaml-');
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      for (const [text, where] of [
        [
          'apiKey: *sk-live-SECRET\n',
          /is not valid YAML: Unresolved alias \(the anchor must be set before the alias\)$/,
        ],
        [
          'apiKey: "sk-live-\\qSECRET"\n',
          /is not valid YAML: Invalid escape sequence at line 1, column \d+$/,
        ],
        // An unknown tag is only a warning to the parser, which printed the line; the value would
        // have been read as the text after the tag.
        ['logLevel: !sk-live-SECRET info\n', /is not valid YAML: Unresolved tag at line 1, column 11$/],
      ] as const) {
        const file = join(dir, 'oda.yaml');
        writeFileSync(file, text);
        assert.throws(
          () => loadConfig({ ODA_CONFIG: file }),
          (e: unknown) => e instanceof ConfigError && where.test(e.message) && !e.message.includes('SECRET'),
          text,
        );
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, []);
  });

  test('a bad base URL from the environment is named by its variable; an empty one is unset', () => {
    for (const [value, problem] of [
      ['localhost:9000', /^invalid configuration:\nOPENAI_BASE_URL: expected an http\(s\) URL$/],
      ['https://u:pw@example.com/v1', /^invalid configuration:\nOPENAI_BASE_URL: must not hold user info/],
    ] as const) {
      assert.throws(
        () => loadConfig({ OPENAI_BASE_URL: value }),
        (e: unknown) => e instanceof ConfigError && problem.test(e.message),
      );
    }
    assert.equal(loadConfig({ ANTHROPIC_BASE_URL: '' }).providers[1]?.baseUrl, 'https://api.anthropic.com');
    assert.throws(
      () => loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-123456\n' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        /^invalid configuration:\nANTHROPIC_API_KEY: expected printable ASCII/.test(e.message),
    );
  });

  test('a provider key that cannot be a header value is refused, without being printed', () => {
    for (const apiKey of ['sk-abc-123456\n', 'sk abc 123456', 'sk-ключ-123456']) {
      assert.throws(
        () =>
          parseConfig({
            providers: [{ name: 'p', format: 'openai', baseUrl: 'https://api.example.com/v1', apiKey }],
          }),
        (e: unknown) =>
          e instanceof ConfigError &&
          /providers\.0\.apiKey: expected printable ASCII without spaces or line breaks/.test(e.message) &&
          !e.message.includes(apiKey.trim()),
      );
    }
  });

  test('ODA_STORE: redis takes REDIS_URL; a value that cannot be used is named by its variable, the URL never shown', () => {
    const url = 'redis://:hunter2@127.0.0.1:6379/0';
    assert.deepEqual(loadConfig({ ODA_STORE: 'redis', REDIS_URL: url }).store, {
      kind: 'redis',
      url,
      prefix: 'oda:',
    });
    assert.deepEqual(loadConfig({ ODA_STORE: 'file', REDIS_URL: url }).store, {
      kind: 'file',
      fsync: 'batch',
    });
    // REDIS_URL alone (a test runner's, another tool's) does not move the store.
    assert.deepEqual(loadConfig({ REDIS_URL: url }).store, { kind: 'file', fsync: 'batch' });
    for (const [env, problem] of [
      // A gateway meant for a shared Redis ran on a file store of its own.
      [{ ODA_STORE: 'redis' }, /^invalid configuration:\nODA_STORE: redis needs REDIS_URL/],
      [
        { ODA_STORE: 'Redis', REDIS_URL: url },
        /^invalid configuration:\nODA_STORE: expected file or redis, got "Redis"$/,
      ],
      [
        { ODA_STORE: 'redis', REDIS_URL: 'http://:hunter2@127.0.0.1:6379' },
        /^invalid configuration:\nREDIS_URL: expected redis:\/\/host:port/,
      ],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && problem.test(e.message) && !e.message.includes('hunter2'),
        JSON.stringify(env),
      );
    }
  });

  test('zero-config providers come from the environment', () => {
    const c = loadConfig({ OPENAI_API_KEY: 'sk-o', ANTHROPIC_BASE_URL: 'http://127.0.0.1:5/' });
    assert.deepEqual(
      c.providers.map((p) => [p.name, p.format, p.baseUrl, p.apiKey]),
      [
        ['openai', 'openai', 'https://api.openai.com/v1', 'sk-o'],
        ['anthropic', 'anthropic', 'http://127.0.0.1:5/', undefined],
      ],
    );
  });
});
