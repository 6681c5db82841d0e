/**
 * Tidies the components of the generated OpenAPI document, so that a generator gets one
 * well-named type per schema:
 * - fastify-type-provider-zod emits every named zod schema twice, as read (`WaitSpecInput`)
 *   and as written (`WaitSpec`): where both forms are the same, the `…Input` one goes;
 *   where only the `…Input` one is used, it takes the plain name;
 * - a request body or success answer given inline becomes a component named after its
 *   operation (`claimContinuations` → `ClaimContinuationsRequest`, `…Response`);
 * - components no operation reaches go, the rest are sorted by name;
 * - a schema only answers use is open to more fields (docs/api.md: additions are made
 *   freely), where zod writes `additionalProperties: false` for every object it emits;
 * - each answer gets a description of its status.
 */
import { isDeepStrictEqual } from "node:util";
import type { OpenAPIV3_1 } from "openapi-types";

type Doc = OpenAPIV3_1.Document;
type Schemas = Record<string, unknown>;

const PREFIX = "#/components/schemas/";
const INPUT = "Input";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

const STATUS_TEXT: Record<string, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  400: "invalid_request / invalid_event: the input breaks its schema (see issues); nothing is stored",
  401: "unauthorized: a missing or wrong credential",
  403: "forbidden_event_type: the producer may not send this event type",
  404: "not_found: no such resource in the caller's tenant (or a malformed id)",
  409: "a conflict with what is stored (the code says which)",
  413: "payload_too_large: the body is over its bound",
  429: "rate_limited: over the producer's rate; retry after Retry-After seconds",
  503: "unavailable: Redis cannot serve the request, the body budget is spent, or the server is stopping; retry after Retry-After seconds",
};

/** Every `$ref` in `value` rewritten by `rename` (a name to a name). */
function renameRefs<T>(value: T, rename: (name: string) => string): T {
  return JSON.parse(JSON.stringify(value), (key, v) =>
    key === "$ref" && typeof v === "string" && v.startsWith(PREFIX) ? PREFIX + rename(v.slice(PREFIX.length)) : v,
  ) as T;
}

/** The component names `value` refers to. */
function refsIn(value: unknown, into: Set<string>): Set<string> {
  JSON.stringify(value, (key, v) => {
    if (key === "$ref" && typeof v === "string" && v.startsWith(PREFIX)) into.add(v.slice(PREFIX.length));
    return v;
  });
  return into;
}

/** `…Input` names whose schema is the same as the plain one's (given the names already merged). */
function sameAsWritten(schemas: Schemas): Map<string, string> {
  const alias = new Map<string, string>();
  const resolve = (name: string) => alias.get(name) ?? name;
  for (let changed = true; changed; ) {
    changed = false;
    for (const name of Object.keys(schemas)) {
      const base = name.slice(0, -INPUT.length);
      if (!name.endsWith(INPUT) || alias.has(name) || !(base in schemas)) continue;
      if (isDeepStrictEqual(renameRefs(schemas[name], resolve), renameRefs(schemas[base], resolve))) {
        alias.set(name, base);
        changed = true;
      }
    }
  }
  return alias;
}

function pascal(operationId: string): string {
  return operationId.charAt(0).toUpperCase() + operationId.slice(1);
}

/** Puts an inline JSON schema of `content` under `name` in `schemas` (when the name is free). */
function hoist(content: Record<string, { schema?: unknown }> | undefined, name: string, schemas: Schemas): void {
  const media = content?.["application/json"];
  const schema = media?.schema as { $ref?: string; type?: unknown } | undefined;
  if (!media || !schema || schema.$ref !== undefined || name in schemas) return;
  schemas[name] = schema;
  media.schema = { $ref: PREFIX + name };
}

function operations(doc: Doc): OpenAPIV3_1.OperationObject[] {
  const ops: OpenAPIV3_1.OperationObject[] = [];
  for (const item of Object.values(doc.paths ?? {})) {
    for (const m of METHODS) {
      const op = item?.[m];
      if (op) ops.push(op);
    }
  }
  return ops;
}

/** The components `value` refers to, transitively. */
function reachedFrom(value: unknown, schemas: Schemas): Set<string> {
  const reached = refsIn(value, new Set());
  for (const pending = [...reached]; pending.length > 0; ) {
    for (const name of refsIn(schemas[pending.pop() as string], new Set())) {
      if (!reached.has(name)) {
        reached.add(name);
        pending.push(name);
      }
    }
  }
  return reached;
}

/** `schema` without `additionalProperties: false` anywhere in it. */
function open(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema), (key, v) =>
    key === "additionalProperties" && v === false ? undefined : v,
  );
}

export function tidyComponents(input: Doc): Doc {
  const alias = sameAsWritten({ ...input.components?.schemas });
  let doc = renameRefs(input, (name) => alias.get(name) ?? name);
  const schemas: Schemas = { ...doc.components?.schemas };
  for (const name of alias.keys()) delete schemas[name];

  for (const op of operations(doc)) {
    if (!op.operationId) continue;
    const body = op.requestBody as OpenAPIV3_1.RequestBodyObject | undefined;
    hoist(body?.content, `${pascal(op.operationId)}Request`, schemas);
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const r = response as OpenAPIV3_1.ResponseObject;
      if (r.description === "Default Response" && STATUS_TEXT[status]) r.description = STATUS_TEXT[status];
      if (status.startsWith("2")) hoist(r.content, `${pascal(op.operationId)}Response`, schemas);
    }
  }

  const { components: _components, ...outside } = doc;
  const reached = reachedFrom(outside, schemas);
  const inRequests = reachedFrom(
    operations(doc).map((op) => [op.requestBody, op.parameters]),
    schemas,
  );
  for (const name of reached) {
    if (!inRequests.has(name) && name in schemas) schemas[name] = open(schemas[name]);
  }
  // the read form of a named schema takes the plain name where the written form is not used
  const plain = (name: string) => {
    const base = name.slice(0, -INPUT.length);
    return name.endsWith(INPUT) && base in schemas && !reached.has(base) ? base : name;
  };
  const kept: Schemas = {};
  for (const name of [...reached].sort((a, b) => plain(a).localeCompare(plain(b)))) {
    if (name in schemas) kept[plain(name)] = schemas[name];
  }
  doc = renameRefs({ ...doc, components: { ...doc.components, schemas: kept } }, plain) as Doc;
  return doc;
}
