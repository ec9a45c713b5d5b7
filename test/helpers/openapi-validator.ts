/**
 * Checks real responses against `openapi.yaml`: finds the documented response for a method, a
 * concrete path (templates such as `/v1/sessions/{id}` match) and a status (exact, then `4XX`,
 * then `default`), resolves `$ref`s, and validates the body with Ajv's JSON Schema 2020-12 dialect,
 * the dialect of OpenAPI 3.1. An undocumented path, method, status or content type is an error too.
 */
import { readFileSync } from 'node:fs';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';

export type OpenApiDoc = Record<string, unknown>;

/** Base URI under which `components.schemas` are registered as `$defs`. */
const SCHEMAS_ID = 'https://oda-gateway.invalid/openapi.json';
const COMPONENT_SCHEMA_REF = '#/components/schemas/';
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Parses `openapi.yaml` at the repository root (or at `url`). */
export function loadOpenApi(url: URL = new URL('../../openapi.yaml', import.meta.url)): OpenApiDoc {
  const doc: unknown = parseYaml(readFileSync(url, 'utf8'));
  if (!isRecord(doc)) throw new Error('openapi.yaml is not a YAML mapping');
  return doc;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Follows one JSON pointer (`#/a/b`) inside the document. */
function pointer(doc: OpenApiDoc, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got ${ref}`);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isRecord(node) || !(key in node)) throw new Error(`unresolved $ref ${ref}`);
    node = node[key];
  }
  return node;
}

/** Resolves an object that may be a `$ref` (to a response, header, ...), following chains. */
function deref(doc: OpenApiDoc, node: unknown): unknown {
  const seen = new Set<string>();
  while (isRecord(node) && typeof node.$ref === 'string') {
    if (seen.has(node.$ref)) throw new Error(`$ref cycle at ${node.$ref}`);
    seen.add(node.$ref);
    node = pointer(doc, node.$ref);
  }
  return node;
}

/** Copies a schema, pointing `#/components/schemas/X` refs at the registered `$defs`. */
function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (!isRecord(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string') {
      if (!v.startsWith(COMPONENT_SCHEMA_REF))
        throw new Error(`schema $ref must point into ${COMPONENT_SCHEMA_REF}: ${v}`);
      out[k] = `${SCHEMAS_ID}#/$defs/${v.slice(COMPONENT_SCHEMA_REF.length)}`;
    } else {
      out[k] = rewriteRefs(v);
    }
  }
  return out;
}

interface Compiled {
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

const compiledDocs = new WeakMap<OpenApiDoc, Compiled>();

function compiled(doc: OpenApiDoc): Compiled {
  let c = compiledDocs.get(doc);
  if (c) return c;
  // strict: an unknown keyword (a typo such as `nulable`) in the document fails loudly.
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true });
  // OpenAPI's own annotation keywords inside Schema Objects.
  for (const keyword of ['example', 'xml', 'externalDocs', 'discriminator']) ajv.addKeyword({ keyword });
  const components = isRecord(doc.components) ? doc.components : {};
  const schemas = isRecord(components.schemas) ? components.schemas : {};
  ajv.addSchema({ $id: SCHEMAS_ID, $defs: rewriteRefs(schemas) });
  c = { ajv, validators: new Map() };
  compiledDocs.set(doc, c);
  return c;
}

function validatorFor(doc: OpenApiDoc, key: string, schema: unknown): ValidateFunction {
  const c = compiled(doc);
  let v = c.validators.get(key);
  if (!v) {
    v = c.ajv.compile(rewriteRefs(schema) as Record<string, unknown>);
    c.validators.set(key, v);
  }
  return v;
}

function describe(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
    return `${e.instancePath || '(root)'} ${e.message ?? e.keyword}${extra}`;
  });
}

/** Finds the path template of the document that a concrete path (query ignored) falls under. */
export function matchPath(doc: OpenApiDoc, concretePath: string): string | undefined {
  const path = concretePath.split('?')[0]!;
  const paths = isRecord(doc.paths) ? doc.paths : {};
  if (path in paths) return path;
  for (const template of Object.keys(paths)) {
    if (!template.includes('{')) continue;
    const re = new RegExp(
      `^${template
        .split(/\{[^}]+\}/)
        .map((s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
        .join('[^/]+')}$`,
    );
    if (re.test(path)) return template;
  }
  return undefined;
}

/**
 * Validates a response body against the schema documented for method + path + status (+ content
 * type, default `application/json`; parameters such as `; charset=utf-8` are ignored). Returns
 * the problems found, empty when the response matches.
 */
export function validateResponse(
  doc: OpenApiDoc,
  method: string,
  path: string,
  status: number,
  body: unknown,
  contentType = 'application/json',
): string[] {
  const m = method.toLowerCase();
  if (!METHODS.has(m)) return [`unknown method ${method}`];
  const template = matchPath(doc, path);
  if (!template) return [`path ${path} is not documented`];
  const item = deref(doc, (doc.paths as Record<string, unknown>)[template]);
  const op = isRecord(item) ? item[m] : undefined;
  if (!isRecord(op)) return [`${method.toUpperCase()} ${template} is not documented`];
  const responses = isRecord(op.responses) ? op.responses : {};
  const statusKey = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in responses);
  if (!statusKey) return [`status ${status} is not documented for ${method.toUpperCase()} ${template}`];
  const response = deref(doc, responses[statusKey]);
  if (!isRecord(response))
    return [`response ${statusKey} of ${method.toUpperCase()} ${template} is not an object`];
  const content = isRecord(response.content) ? response.content : undefined;
  const where = `${method.toUpperCase()} ${template} ${statusKey}`;
  if (!content) return body === undefined || body === '' ? [] : [`${where} documents no body`];
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  const media = deref(doc, content[mediaType]);
  if (!isRecord(media)) return [`${where} does not document content type ${mediaType}`];
  if (media.schema === undefined) return [];
  const validate = validatorFor(doc, `${where} ${mediaType}`, media.schema);
  return validate(body) ? [] : describe(validate.errors).map((e) => `${where}: ${e}`);
}

/** Validates a value against one component schema, e.g. `#/components/schemas/OpenAIError`. */
export function validateSchema(doc: OpenApiDoc, ref: string, value: unknown): string[] {
  pointer(doc, ref); // an unknown component is an error of the caller, not a silent pass
  const validate = validatorFor(doc, ref, { $ref: ref });
  return validate(value) ? [] : describe(validate.errors).map((e) => `${ref}: ${e}`);
}

/**
 * Compiles every schema the document holds (components, request bodies, responses, parameters,
 * headers) in Ajv's strict mode and returns what fails, so a typo in a keyword cannot hide.
 */
export function checkDocument(doc: OpenApiDoc): string[] {
  const problems: string[] = [];
  const tryCompile = (where: string, schema: unknown) => {
    try {
      validatorFor(doc, `check ${where}`, schema);
    } catch (e) {
      problems.push(`${where}: ${(e as Error).message}`);
    }
  };
  const components = isRecord(doc.components) ? doc.components : {};
  for (const name of Object.keys(isRecord(components.schemas) ? components.schemas : {})) {
    tryCompile(`#/components/schemas/${name}`, { $ref: `${COMPONENT_SCHEMA_REF}${name}` });
  }
  const visitSchemas = (where: string, node: unknown) => {
    const n = deref(doc, node);
    if (!isRecord(n)) return;
    if (n.schema !== undefined) tryCompile(where, n.schema);
    for (const [mt, media] of Object.entries(isRecord(n.content) ? n.content : {}))
      visitSchemas(`${where} ${mt}`, media);
    for (const [h, header] of Object.entries(isRecord(n.headers) ? n.headers : {}))
      visitSchemas(`${where} header ${h}`, header);
  };
  for (const [template, rawItem] of Object.entries(isRecord(doc.paths) ? doc.paths : {})) {
    const item = deref(doc, rawItem);
    if (!isRecord(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method) || !isRecord(op)) continue;
      const where = `${method.toUpperCase()} ${template}`;
      if (typeof op.operationId !== 'string') problems.push(`${where}: no operationId`);
      for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
        const param = deref(doc, p);
        visitSchemas(`${where} parameter ${isRecord(param) ? String(param.name) : '?'}`, param);
      }
      if (op.requestBody !== undefined) visitSchemas(`${where} requestBody`, op.requestBody);
      for (const [status, res] of Object.entries(isRecord(op.responses) ? op.responses : {})) {
        visitSchemas(`${where} ${status}`, res);
      }
    }
  }
  return problems;
}
