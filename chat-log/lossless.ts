/**
 * Values are stored in the chat log exactly or refused (seed 002, "What a log refuses to store"):
 * a value passes only when `JSON.parse(JSON.stringify(value))` gives it back unchanged, so the log
 * never keeps an approximation of what the model saw.
 */
import { OdaError } from '../lib/errors.ts';

/** A value that would not survive a JSON round trip unchanged; `path` names where it sits. */
export class LosslessError extends Error {
  readonly path: string;
  readonly reason: string;

  constructor(path: string, reason: string) {
    super(path === '' ? `value ${reason}` : `value at ${path} ${reason}`);
    this.name = 'LosslessError';
    this.path = path;
    this.reason = reason;
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function memberPath(path: string, key: string): string {
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

function describeInstance(value: object): string {
  if (value instanceof Date) return 'is a Date (store it as a number or an ISO string)';
  const ctor: unknown = (Object.getPrototypeOf(value) as { constructor?: unknown } | null)?.constructor;
  if (typeof ctor !== 'function' || ctor === Object || ctor.name === '') {
    return 'has a custom prototype, not a plain object or array';
  }
  return `is an instance of ${ctor.name}, not a plain object or array`;
}

function checkNumber(value: number, path: string): void {
  if (Object.is(value, -0)) throw new LosslessError(path, 'is negative zero');
  if (Number.isNaN(value)) throw new LosslessError(path, 'is NaN');
  if (value === Infinity) throw new LosslessError(path, 'is Infinity');
  if (value === -Infinity) throw new LosslessError(path, 'is -Infinity');
}

/** Checks the own keys of an object or array: no symbols, no hidden or accessor members. */
function checkOwnKeys(value: object, path: string, isArray: boolean): string[] {
  const keys: string[] = [];
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'symbol') throw new LosslessError(path, `has a symbol-keyed member ${String(key)}`);
    if (isArray && key === 'length') continue;
    const desc = Object.getOwnPropertyDescriptor(value, key);
    if (desc === undefined) continue;
    const at = isArray && /^(0|[1-9][0-9]*)$/.test(key) ? `${path}[${key}]` : memberPath(path, key);
    if (!desc.enumerable) throw new LosslessError(at, 'is a non-enumerable member');
    if (!('value' in desc)) throw new LosslessError(at, 'is an accessor (getter/setter) member');
    keys.push(key);
  }
  return keys;
}

function walk(value: unknown, path: string, ancestors: Set<object>, member: boolean): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      return checkNumber(value, path);
    case 'undefined':
      throw new LosslessError(path, member ? 'is an undefined member' : 'is undefined');
    case 'bigint':
      throw new LosslessError(path, 'is a bigint');
    case 'symbol':
      throw new LosslessError(path, 'is a symbol');
    case 'function':
      throw new LosslessError(path, 'is a function');
  }
  if (value === null) return;
  const obj = value as object;
  if (ancestors.has(obj)) throw new LosslessError(path, 'is a cycle (the value contains itself)');
  const proto: unknown = Object.getPrototypeOf(obj);
  const isArray = Array.isArray(obj);
  if (isArray ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) {
    throw new LosslessError(path, describeInstance(obj));
  }
  ancestors.add(obj);
  const keys = checkOwnKeys(obj, path, isArray);
  if (isArray) {
    const arr = obj as unknown[];
    for (let i = 0; i < arr.length; i++) {
      if (!Object.hasOwn(arr, i))
        throw new LosslessError(`${path}[${i}]`, 'is an empty slot of a sparse array');
    }
    if (keys.length !== arr.length) {
      const extra = keys.find((k) => !/^(0|[1-9][0-9]*)$/.test(k)) ?? '';
      throw new LosslessError(memberPath(path, extra), 'is a named member of an array');
    }
    for (let i = 0; i < arr.length; i++) walk(arr[i], `${path}[${i}]`, ancestors, true);
  } else {
    const rec = obj as Record<string, unknown>;
    for (const key of keys) walk(rec[key], memberPath(path, key), ancestors, true);
  }
  ancestors.delete(obj);
}

/** Nesting past which the quick check leaves a value to the full one. */
const QUICK_DEPTH = 512;

/**
 * True when `value` is JSON data that a round trip gives back unchanged, checked the quick way: for
 * values built from parsed JSON and object literals (what the gateway builds its events from), it
 * looks at what such data can hold (negative zero, NaN, infinities, undefined members, holes,
 * non-plain objects, values that are not JSON) without building a path per member. Accessors,
 * symbol keys and hidden members, which such data cannot have, are not looked for. False means
 * "check it the full way": {@link assertLossless} says what and where.
 */
export function isPlainJson(value: unknown, depth = 0): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth > QUICK_DEPTH) return false;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return false;
    for (let i = 0; i < value.length; i++) {
      if (!(i in value) || !isPlainJson(value[i], depth + 1)) return false;
    }
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const rec = value as Record<string, unknown>;
  for (const key in rec) if (!isPlainJson(rec[key], depth + 1)) return false;
  return true;
}

/**
 * Throws a {@link LosslessError} unless `value` survives a JSON round trip unchanged. `what` names
 * the root in the message path (e.g. `events` gives `value at events[0].content[1].x is ...`).
 */
export function assertLossless(value: unknown, what = ''): void {
  walk(value, what, new Set(), false);
}

/** The session metadata (header) check, with the message of seed 002; the detail is the `cause`. */
export function assertLosslessMetadata(meta: unknown): void {
  try {
    assertLossless(meta, 'metadata');
  } catch (err) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      'session metadata must be losslessly JSON-serializable',
      {
        cause: err,
      },
    );
  }
}
