/**
 * The OpenAPI document (docs/api.md, OpenAPI) is one a generator can use:
 * - it validates as OpenAPI 3.1 (@seriousme/openapi-schema-validator, the specification's
 *   own JSON Schemas), every route fastify has carries an operationId and is in it, its
 *   bodies and answers are named components, and each operation lists its error statuses
 *   with the error body;
 * - a client generated from the document a real `rendezvous start` serves (openapi-typescript
 *   types, openapi-fetch calls) compiles under strict `tsc` (the workspace's) and makes real
 *   calls: a producer flow (bearer key, HMAC signature) and a host flow.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import fastifySwagger from "@fastify/swagger";
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { buildApp, openapiOptions, registeredRoutes } from "@rendezvous/http";
import { errorResponses, Wait } from "@rendezvous/protocol";
import { redisUrl, uniquePrefix } from "@rendezvous/testkit";
import { Validator } from "@seriousme/openapi-schema-validator";
import Fastify, { type FastifyInstance } from "fastify";
import { type FastifyPluginAsyncZod, serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type Json, request, type Started, startServer } from "./e2e-helpers.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = (path: string) => join(root, path);
/** The generator (its own package: it needs the TypeScript 5 compiler API) and the workspace's tsc, tsx. */
const OPENAPI_TYPESCRIPT = bin("packages/openapi-codegen/node_modules/.bin/openapi-typescript");
const TSC = bin("node_modules/.bin/tsc");
const TSX = bin("node_modules/.bin/tsx");
const FLOWS = fileURLToPath(new URL("./openapi-client/flows.ts", import.meta.url));

const CONFIG = {
  partitions: 4,
  adminToken: "adm_openapi",
  tenants: {
    acme: {
      hostKeys: ["hk_acme_openapi"],
      producers: { billing: { secrets: ["whsec_openapi"], keys: ["pk_billing_openapi"], eventTypes: ["order.*"] } },
    },
  },
};

/** The error statuses each operation of docs/api.md answers with the error body. */
const ERRORS: Record<string, number[]> = {
  publishEvent: [400, 401, 403, 409, 413, 429, 503],
  publishEvents: [400, 401, 413, 429, 503],
  getEvent: [400, 401, 404, 503],
  registerWait: [400, 401, 404, 409, 413, 503],
  listWaits: [400, 401, 503],
  getWait: [401, 404, 503],
  attachJob: [400, 401, 404, 413, 503],
  cancelWait: [401, 404, 409, 503],
  explainWait: [401, 404, 503],
  consumeWait: [400, 401, 404, 409, 413, 503],
  deliver: [400, 401, 409, 413, 503],
  getReadiness: [503],
};
/** ... and their success statuses. */
const SUCCESS: Record<string, number[]> = {
  publishEvent: [200, 202],
  publishEvents: [200],
  registerWait: [200, 201],
};
const NAMED = ["Wait", "WaitSpec", "EventInput", "EventRecord", "EventBatch", "Error", "WaitState", "Resolution"];
const METHODS = ["get", "put", "post", "delete", "patch"];

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function operationsOf(doc: Json): Operation[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, path, op: item[method] })),
  );
}

const schemaOf = (part: Json): Json => part?.content?.["application/json"]?.schema;

describe("the OpenAPI document", () => {
  let res: Resources;
  let app: FastifyInstance;
  let doc: Json;

  beforeAll(async () => {
    res = createResources({
      redisUrl: redisUrl(),
      prefix: uniquePrefix("oa"),
      config: parseConfig(CONFIG),
      logger: pino({ level: "silent" }),
    });
    app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [] });
    await app.ready();
    doc = app.swagger();
  });
  afterAll(async () => {
    await app?.close();
    await res?.close();
  });

  it("validates as OpenAPI 3.1 with a relative server", async () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
  });

  it("every route fastify has carries a camelCase operationId and is in the document, once", () => {
    const routes = registeredRoutes(app).filter((r) => r.method !== "HEAD" && !r.hidden);
    expect(routes.length).toBeGreaterThanOrEqual(15);
    const inDoc = new Map(operationsOf(doc).map((o) => [o.op.operationId as string, o]));
    for (const route of routes) {
      expect(route.operationId, `${route.method} ${route.url} has no operationId`).toMatch(/^[a-z][A-Za-z0-9]*$/);
      const found = inDoc.get(route.operationId as string);
      expect(found?.method, `${route.method} ${route.url}`).toBe(route.method.toLowerCase());
    }
    const ids = operationsOf(doc).map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(routes.length);
    expect(ids).toEqual(expect.arrayContaining([...Object.keys(ERRORS), "getHealth", "getMetrics"]));
    // the hidden ones are the operator UIs only
    const hidden = registeredRoutes(app).filter((r) => r.hidden);
    for (const r of hidden) expect(r.url).toMatch(/^\/(admin\/queues|console)(\/|$)/);
  });

  it("bodies and answers are named components", () => {
    const schemas = doc.components.schemas as Record<string, Json>;
    for (const name of NAMED) expect(schemas[name], name).toBeTypeOf("object");
    // no twin left over from the read/written forms
    for (const name of Object.keys(schemas)) expect(schemas[`${name}Input`], name).toBeUndefined();
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[A-Za-z0-9]+/g) ?? [];
    for (const ref of refs) expect(schemas[ref.split("/").pop() as string], ref).toBeDefined();
    for (const { method, path, op } of operationsOf(doc)) {
      if (op.requestBody) expect(schemaOf(op.requestBody)?.$ref, `${method} ${path} body`).toMatch(/^#\/components/);
      for (const [status, r] of Object.entries(op.responses as Record<string, Json>)) {
        const schema = schemaOf(r);
        if (schema) expect(schema.$ref, `${method} ${path} ${status}`).toMatch(/^#\/components/);
      }
    }
    const paths = doc.paths;
    expect(schemaOf(paths["/v1/events"].post.requestBody).$ref).toBe("#/components/schemas/EventInput");
    expect(schemaOf(paths["/v1/events/batch"].post.requestBody).$ref).toBe("#/components/schemas/EventBatch");
    expect(schemaOf(paths["/v1/waits"].post.requestBody).$ref).toBe("#/components/schemas/WaitSpec");
    expect(schemas.WaitResponse.properties.wait.$ref).toBe("#/components/schemas/Wait");
    expect(schemas.EventResponse.properties.event.$ref).toBe("#/components/schemas/EventRecord");
    // answers may gain fields (docs/api.md); request bodies refuse unknown ones
    expect(schemas.Wait.additionalProperties).toBeUndefined();
    expect(schemas.WaitSpec.additionalProperties).toBe(false);
  });

  it("each operation lists its statuses, errors with the error body", () => {
    const ops = new Map(operationsOf(doc).map((o) => [o.op.operationId as string, o]));
    for (const [id, statuses] of Object.entries(ERRORS)) {
      const responses = ops.get(id)?.op.responses ?? {};
      for (const s of statuses) {
        expect(schemaOf(responses[s])?.$ref, `${id} ${s}`).toBe("#/components/schemas/Error");
        expect(responses[s].description, `${id} ${s}`).not.toBe("Default Response");
      }
    }
    for (const [id, statuses] of Object.entries(SUCCESS)) {
      expect(Object.keys(ops.get(id)?.op.responses ?? {}), id).toEqual(expect.arrayContaining(statuses.map(String)));
    }
    // every /v1 operation (those added later too): credentials, Redis trouble, and for a body, its checks
    for (const { method, path, op } of operationsOf(doc)) {
      const statuses = Object.keys(op.responses);
      for (const s of statuses.filter((x) => Number(x) >= 400)) {
        expect(schemaOf(op.responses[s])?.$ref, `${method} ${path} ${s}`).toBe("#/components/schemas/Error");
      }
      if (!path.startsWith("/v1/")) continue;
      // (an operation that takes no credential, `security: []` such as the token routes, answers no 401)
      const open = Array.isArray(op.security) && op.security.length === 0;
      expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(open ? ["503"] : ["401", "503"]));
      if (op.requestBody) expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(["400", "413"]));
      expect(statuses.filter((s) => s.startsWith("2")).length, `${method} ${path}`).toBeGreaterThan(0);
    }
  });

  it("the producer routes take a bearer key or the HMAC signature, with Rendezvous-Producer", () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.producerKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(schemes.producerSignature).toMatchObject({ type: "apiKey", in: "header", name: "Rendezvous-Signature" });
    expect(schemes.hostKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ hostKey: [] }]);
    for (const path of ["/v1/events", "/v1/events/batch"]) {
      const op = doc.paths[path].post;
      expect(op.security).toEqual([{ producerKey: [] }, { producerSignature: [] }]);
      expect(op.parameters).toContainEqual(
        expect.objectContaining({ in: "header", name: "Rendezvous-Producer", required: true }),
      );
    }
    for (const path of ["/healthz", "/readyz", "/metrics"]) expect(doc.paths[path].get.security).toEqual([]);
    expect(doc.paths["/metrics"].get.responses["200"].content["text/plain"]).toBeDefined();
  });
});

describe("a route added later", () => {
  it("is documented the same way: inline bodies and answers become components named after its operation", async () => {
    // a route as a new plugin writes one: zod schemas, an operationId, nothing named
    const added: FastifyPluginAsyncZod = async (api) => {
      api.post(
        "/v1/things/:thingId/claim",
        {
          schema: {
            operationId: "claimThings",
            tags: ["things"],
            params: z.object({ thingId: z.string() }),
            body: z.strictObject({ worker: z.string(), max: z.int().min(1).max(100).optional() }),
            response: {
              200: z.object({ things: z.array(z.object({ leaseId: z.string(), wait: Wait })) }),
              ...errorResponses(400, 401, 409, 413, 503),
            },
          },
        },
        async () => ({ things: [] }),
      );
    };
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    await app.register(fastifySwagger, openapiOptions("0.0.0"));
    await app.register(added);
    await app.ready();
    const doc: Json = app.swagger();
    await app.close();
    const op = doc.paths["/v1/things/{thingId}/claim"].post;
    expect(op.operationId).toBe("claimThings");
    expect(schemaOf(op.requestBody).$ref).toBe("#/components/schemas/ClaimThingsRequest");
    expect(schemaOf(op.responses["200"]).$ref).toBe("#/components/schemas/ClaimThingsResponse");
    expect(schemaOf(op.responses["409"]).$ref).toBe("#/components/schemas/Error");
    const schemas = doc.components.schemas;
    expect(schemas.ClaimThingsRequest).toMatchObject({ type: "object", required: ["worker"] });
    expect(schemas.ClaimThingsResponse.properties.things.items.properties.wait.$ref).toBe("#/components/schemas/Wait");
    expect(Object.keys(schemas)).toEqual(expect.arrayContaining(["Wait", "WaitState", "Error", "Issue"]));
    expect((await new Validator().validate(structuredClone(doc))).valid).toBe(true);
  });
});

describe("a client generated from /openapi.json", () => {
  let server: Started;
  let dir: string;
  let elapsedMs = 0;

  beforeAll(async () => {
    server = await startServer({ config: CONFIG });
    const served = await request(server.url, "GET", "/openapi.json");
    expect(served.status).toBe(200);
    dir = mkdtempSync(join(tmpdir(), "rdv-openapi-"));
    writeFileSync(join(dir, "openapi.json"), served.text);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noUncheckedIndexedAccess: true,
          noEmit: true,
          target: "ES2022",
          lib: ["ES2023"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          types: ["node"],
        },
        include: ["flows.ts", "api.d.ts"],
      }),
    );
    cpSync(FLOWS, join(dir, "flows.ts"));
    // openapi-fetch and @types/node as the workspace has them
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  }, 60_000);
  afterAll(async () => {
    await server?.proc.terminate();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("generates types and compiles a program against them under strict tsc, within 60 s", async () => {
    const started = Date.now();
    await run(OPENAPI_TYPESCRIPT, ["openapi.json", "-o", "api.d.ts"], { cwd: dir, timeout: 60_000 });
    const compiled = await run(TSC, ["-p", "tsconfig.json"], { cwd: dir, timeout: 60_000 }).catch(
      (err: { stdout?: string; message: string }) => ({ stdout: err.stdout ?? err.message, failed: true }),
    );
    elapsedMs = Date.now() - started;
    expect(compiled.stdout).toBe("");
    expect("failed" in compiled).toBe(false);
    expect(elapsedMs).toBeLessThan(60_000);
  }, 70_000);

  it("makes real calls: a producer flow (key, signature) and a host flow", async () => {
    expect(elapsedMs).toBeGreaterThan(0); // compiled first
    const { stdout } = await run(TSX, ["flows.ts"], {
      cwd: dir,
      timeout: 30_000,
      env: {
        ...process.env,
        RDV_URL: server.url,
        RDV_PRODUCER: "acme/billing",
        RDV_PRODUCER_KEY: "pk_billing_openapi",
        RDV_PRODUCER_SECRET: "whsec_openapi",
        RDV_HOST_KEY: "hk_acme_openapi",
        RDV_RUN: `run-${Date.now()}`,
      },
    });
    const out = JSON.parse(stdout.trim().split("\n").pop() as string);
    expect(out.producer).toEqual({
      byKey: { status: 202, result: "accepted", id: expect.stringMatching(/-a$/), tenant: "acme" },
      again: { status: 200, result: "duplicate" },
      bySignature: { status: 202, result: "accepted", streamId: expect.any(String) },
      refused: { status: 401, code: "unauthorized" },
      batch: { status: 200, results: ["accepted", "rejected"] },
      read: { status: 200, id: expect.stringMatching(/-b$/), eventStatus: expect.any(String) },
    });
    const { host } = out;
    expect(host.registered).toEqual({ status: 201, state: "waiting", id: expect.any(String) });
    expect(host.fetched).toEqual({ status: 200, runId: expect.stringMatching(/^run-/) });
    expect(host.listed).toEqual({ status: 200, ids: [host.registered.id] });
    expect(host.explained).toEqual({ status: 200, verdict: "no_signal" });
    expect(host.attached).toEqual({ status: 200, externalJobId: "job-1" });
    expect(host.delivered).toEqual({ status: 200, ids: [host.registered.id], matched: 1 });
    expect(host.consumed).toEqual({ status: 200, first: true, by: "w1", kind: "deliver" });
    expect(host.consumedAgain).toEqual({ status: 200, first: false });
    expect(host.cancelled).toEqual({ status: 409, code: "not_waiting" });
    expect(host.missing).toEqual({ status: 404, code: "not_found" });
    expect(host.health).toEqual({ status: 200, body: "ok" });
  }, 40_000);
});
