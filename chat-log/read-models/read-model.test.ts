import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fold, type ReadModel } from './read-model.ts';
import { chatReadModels } from './chat-read-models.ts';
import { events } from './test-events.ts';

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

for (const model of Object.values(chatReadModels) as ReadModel<unknown>[]) {
  test(`${model.name}: pure, checkpointable, and folding in pieces equals folding at once`, () => {
    fc.assert(
      fc.property(events, fc.nat(40), (log, cut) => {
        const whole = fold(model, model.initial(), log);
        // A state checkpointed at any point and reloaded, then caught up, gives the same state.
        const head = fold(model, deepFreeze(model.initial()), log.slice(0, cut).map(deepFreeze));
        const saved = JSON.parse(JSON.stringify(head)) as unknown;
        const reloaded = model.schema.parse(saved);
        assert.deepEqual(reloaded, head, 'the state survives JSON and its schema');
        const resumed = fold(model, deepFreeze(reloaded), log.slice(cut).map(deepFreeze));
        assert.deepEqual(resumed, whole);
      }),
      { numRuns: 150 },
    );
  });
}
