/**
 * The client as a user installs it: `npm pack` (prepack builds it), the tarball
 * installed into an empty project outside the workspace (`npm install <tarball>`,
 * nothing else), a host program type-checked strictly against the installed types
 * and run with plain node against a real `rendezvous start`: register, publish,
 * receive the continuation, consume once. Then the same program under Node 22 and 24
 * (the npm registry's `node` package), when those binaries can be installed.
 */
import { execFile, execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type CliProcess, redisUrl, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const clientDir = fileURLToPath(new URL("..", import.meta.url));
const workspace = join(clientDir, "..", "..");
const tsc = join(workspace, "node_modules", ".bin", "tsc");

/** Upper bounds of what `npm install <tarball>` brings (without the optional peers). */
const MAX_PACKAGES = 5;
const MAX_INSTALLED_BYTES = 1024 * 1024;
/** Packages the client must not pull in: the engine, its logging/metrics, the Redis transport, zod. */
const FORBIDDEN = [
  "@rendezvous/core",
  "@rendezvous/engine",
  "@rendezvous/protocol",
  "@rendezvous/server",
  "pino",
  "prom-client",
  "zod",
  "bullmq",
  "ioredis",
  // an optional peer: the host program runs without it (no trace context sent)
  "@opentelemetry/api",
];

const HOST_KEY = "hk_pack";
const SECRET = "whsec_pack";
/** The dev config's shape (a `demo` tenant and producer), as the README's snippets expect. */
const CONFIG = {
  partitions: 2,
  tenants: {
    demo: {
      hostKeys: [HOST_KEY],
      producers: { demo: { secrets: [SECRET], eventTypes: ["*"] } },
    },
  },
};

/** The environment of a child npm/node: none of the `npm test` process's npm_* settings (its prefix, workspace). */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_/i.test(k) && k !== "NODE_OPTIONS" && !k.startsWith("VITEST")) env[k] = v;
  return { ...env, ...extra };
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, env = cleanEnv(), timeout = 60_000): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(cmd, args, cwd, env);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Installed packages: every directory of node_modules with a package.json (scoped ones too). */
function installedPackages(nodeModules: string): string[] {
  const names: string[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.name.startsWith("@")) walk(path, `${entry.name}/`);
      else if (existsSync(join(path, "package.json"))) {
        names.push(`${prefix}${entry.name}`);
        if (existsSync(join(path, "node_modules"))) walk(join(path, "node_modules"), "");
      }
    }
  };
  walk(nodeModules, "");
  return names.sort();
}

/** Bytes of every file under `dir` (what `du --apparent-size` counts). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

/** `du -sk` of a directory (what it takes on disk), or "?" where du is missing. */
function duKb(dir: string): string {
  try {
    return execFileSync("du", ["-sk", dir], { encoding: "utf8" }).split("\t")[0] ?? "?";
  } catch {
    return "?";
  }
}

/**
 * A Node binary of `major` from the npm registry's `node` package, installed once
 * into a cache under the temp dir (kept across runs). Null when it cannot be installed.
 */
async function nodeBinary(major: number): Promise<{ bin: string; installMs: number; du: string } | null> {
  const root = join(tmpdir(), "rendezvous-node-bins");
  const dir = join(root, `node${major}`);
  const bin = join(dir, "node_modules", "node", "bin", "node");
  const started = Date.now();
  if (!existsSync(bin)) {
    mkdirSync(root, { recursive: true });
    const staging = mkdtempSync(join(root, `node${major}-`));
    writeFileSync(join(staging, "package.json"), '{"private":true}');
    const r = await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", `node@${major}`], staging);
    const staged = join(staging, "node_modules", "node", "bin", "node");
    if (r.code !== 0 || !existsSync(staged)) {
      rmSync(staging, { recursive: true, force: true });
      console.log(`node@${major} not installable here (npm exited ${r.code}): ${r.stderr.slice(-300)}`);
      return null;
    }
    try {
      renameSync(staging, dir); // atomic: a concurrent run either wins or finds it there
    } catch {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const version = await run(bin, ["--version"], root);
  if (version.code !== 0 || !version.stdout.startsWith(`v${major}.`)) return null;
  return { bin, installMs: Date.now() - started, du: duKb(join(dir, "node_modules")) };
}

describe("the packed client", () => {
  let project: string;
  let server: CliProcess;
  let url: string;
  let hostJs: string;

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "rdv-pack-"));
    const packed = JSON.parse(await ok("npm", ["pack", "--json", "--pack-destination", project], clientDir)) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      files: Array<{ path: string }>;
    }>;
    const tarball = join(project, (packed[0] as { filename: string }).filename);
    console.log(
      `packed ${packed[0]?.filename}: ${packed[0]?.size} bytes (${packed[0]?.unpackedSize} unpacked, ${packed[0]?.files.length} files)`,
    );
    const app = join(project, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "pack-host", private: true, type: "module" }));
    await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], app);
    copyFileSync(join(clientDir, "test", "pack-host", "host.ts"), join(app, "host.ts"));
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: false,
          // Node's own types only (a host project has @types/node); the client itself resolves from ./node_modules
          typeRoots: [join(workspace, "node_modules", "@types")],
          types: ["node"],
          outDir: "out",
        },
        files: ["host.ts"],
      }),
    );
    hostJs = join(app, "out", "host.js");
    const prefix = uniquePrefix("pack");
    const dir = mkdtempSync(join(tmpdir(), "rdv-pack-server-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify(CONFIG));
    server = spawnCli(["start", "--config", join(dir, "config.json"), "--redis-url", redisUrl(), "--port", "0"], {
      RENDEZVOUS_PREFIX: prefix,
    });
    url = (await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 25_000))[1] as string;
  }, 60_000);

  afterAll(async () => {
    await server?.terminate();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  const app = () => join(project, "app");

  it("installs with only its own dependencies: no engine, no pino/prom-client/zod, no bullmq/ioredis", () => {
    const nodeModules = join(app(), "node_modules");
    const packages = installedPackages(nodeModules);
    const bytes = sizeOf(nodeModules);
    console.log(
      `installed: ${packages.length} package(s) [${packages.join(", ")}], ${bytes} bytes in node_modules (du: ${duKb(nodeModules)} KB)`,
    );
    expect(packages).toContain("@rendezvous/client");
    for (const name of FORBIDDEN) expect(packages).not.toContain(name);
    expect(packages.length).toBeLessThanOrEqual(MAX_PACKAGES);
    expect(bytes).toBeLessThanOrEqual(MAX_INSTALLED_BYTES);
    const shipped = readdirSync(join(nodeModules, "@rendezvous", "client"), { recursive: true }).map(String);
    expect(shipped.filter((f) => f.startsWith("src") || f.startsWith("test") || f.endsWith(".map"))).toEqual([]);
  });

  it("type-checks a strict host program against the installed types, and refuses a wrong one", async () => {
    const checked = await run(tsc, ["-p", "tsconfig.json"], app());
    expect(checked.stdout + checked.stderr).toBe("");
    expect(checked.code).toBe(0);
    expect(existsSync(hostJs)).toBe(true);
    // the types are real (not `any` from an unresolved module): a wrong field type is an error
    writeFileSync(
      join(app(), "wrong.ts"),
      'import { HostClient } from "@rendezvous/client";\n' +
        'await new HostClient({ baseUrl: "x", token: "y" }).registerWait({ runId: "r", position: "p", eventType: 7, correlationId: "c" });\n',
    );
    writeFileSync(
      join(app(), "tsconfig.wrong.json"),
      JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { noEmit: true }, files: ["wrong.ts"] }),
    );
    const wrong = await run(tsc, ["-p", "tsconfig.wrong.json"], app());
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.ts\(2,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
  });

  it("type-checks and runs the README's snippets: the README shipped in the package", async () => {
    const readme = readFileSync(join(app(), "node_modules", "@rendezvous", "client", "README.md"), "utf8");
    const blocks = [...readme.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
      tag: (m[1] ?? "").trim(),
      code: m[2] ?? "",
    }));
    // `bullmq` blocks need the optional peers, which this install leaves out on purpose
    const checked = blocks.filter((b) => b.tag === "" || b.tag === "http-worker");
    console.log(
      `README: ${blocks.length} TypeScript snippets, ${checked.length} type-checked (${blocks.length - checked.length} left: ${blocks
        .filter((b) => !checked.includes(b))
        .map((b) => b.tag)
        .join(", ")})`,
    );
    expect(checked.length).toBeGreaterThanOrEqual(4);
    const files = checked.map((b, i) => {
      writeFileSync(join(app(), `readme-${i}.ts`), b.code);
      return `readme-${i}.ts`;
    });
    writeFileSync(
      join(app(), "tsconfig.readme.json"),
      JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { outDir: "readme-out" }, files }),
    );
    const r = await run(tsc, ["-p", "tsconfig.readme.json"], app());
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
    // and they run, in order, against the server (the producer's events are there for the waits after it)
    const env = cleanEnv({ RDV_URL: url, RDV_HOST_KEY: HOST_KEY, RDV_SECRET: SECRET });
    const outputs: string[] = [];
    for (const file of files) {
      const ran = await run(process.execPath, [join("readme-out", file.replace(/\.ts$/, ".js"))], app(), env, 20_000);
      expect(ran.stderr, file).toBe("");
      expect(ran.code, file).toBe(0);
      outputs.push(ran.stdout);
    }
    const all = outputs.join("\n");
    for (const said of ["accepted", "invalid_event", "409 event_id_conflict", "not_waiting"])
      expect(all).toContain(said);
  });

  it("runs the host program with plain node: register, publish, the continuation, consumed once", async () => {
    const result = await hostRun(process.execPath, "n20");
    console.log(`host program on ${result.node}: transport ${result.transport}`);
  });

  it("the optional peers stay optional: the ./bullmq entry names what to install", async () => {
    const r = await run(
      process.execPath,
      ["--input-type=module", "-e", 'await import("@rendezvous/client/bullmq")'],
      app(),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Cannot find package 'bullmq'/);
  });

  it("with the peers installed, ./bullmq type-checks (the README's BullMQ snippet) and loads", async () => {
    const peer = join(project, "with-bullmq");
    mkdirSync(peer);
    writeFileSync(join(peer, "package.json"), JSON.stringify({ name: "bullmq-host", private: true, type: "module" }));
    const tarball = readdirSync(project).find((f) => f.endsWith(".tgz")) as string;
    // the workspace's versions (the lockfile's majors, as the README says)
    const version = (name: string): string =>
      JSON.parse(readFileSync(join(workspace, "node_modules", name, "package.json"), "utf8")).version;
    const peers = [`bullmq@${version("bullmq")}`, `ioredis@${version("ioredis")}`];
    await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(project, tarball), ...peers], peer);
    const packages = installedPackages(join(peer, "node_modules"));
    console.log(`with ${peers.join(" ")}: ${packages.length} packages, du ${duKb(join(peer, "node_modules"))} KB`);
    expect(packages).toEqual(expect.arrayContaining(["@rendezvous/client", "bullmq", "ioredis"]));
    expect(packages).not.toContain("@rendezvous/engine");
    const readme = readFileSync(join(peer, "node_modules", "@rendezvous", "client", "README.md"), "utf8");
    const block = /^```ts bullmq\n([\s\S]*?)^```$/m.exec(readme)?.[1];
    expect(block).toBeDefined();
    writeFileSync(join(peer, "worker.ts"), block as string);
    writeFileSync(
      join(peer, "tsconfig.json"),
      readFileSync(join(app(), "tsconfig.json"), "utf8").replace('"host.ts"', '"worker.ts"'),
    );
    const checked = await run(tsc, ["-p", "tsconfig.json", "--noEmit"], peer);
    expect(checked.stdout + checked.stderr).toBe("");
    expect(checked.code).toBe(0);
    const loaded = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'const m = await import("@rendezvous/client/bullmq"); console.log(m.continuationQueue("demo"), typeof m.ContinuationWorker)',
      ],
      peer,
    );
    expect(loaded.stdout.trim()).toBe("continuations.demo function");
  }, 60_000);

  it("with @opentelemetry/api installed, the packed client sends the active span's traceparent", async () => {
    const traced = join(project, "with-otel");
    mkdirSync(traced);
    writeFileSync(join(traced, "package.json"), JSON.stringify({ name: "otel-host", private: true, type: "module" }));
    const tarball = readdirSync(project).find((f) => f.endsWith(".tgz")) as string;
    const manifest = (name: string) =>
      JSON.parse(readFileSync(join(workspace, "node_modules", name, "package.json"), "utf8")) as {
        version: string;
        peerDependencies?: Record<string, string>;
      };
    // the SDK packages at the workspace's versions, and the API in the range the SDK accepts (as a
    // host's npm would resolve it; the workspace pins a newer API for its own test runner)
    const sdk = ["sdk-trace-base", "core", "context-async-hooks"].map(
      (p) => `@opentelemetry/${p}@${manifest(`@opentelemetry/${p}`).version}`,
    );
    const apiRange = manifest("@opentelemetry/sdk-trace-base").peerDependencies?.["@opentelemetry/api"] ?? "^1";
    const otel = [`@opentelemetry/api@${apiRange}`, ...sdk];
    await ok(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefer-offline", join(project, tarball), ...otel],
      traced,
    );
    // plain node, the installed packages: a span made active, one registerWait against a
    // node:http stand-in that prints the traceparent it received and the span's ids
    const program = `
      import { createServer } from "node:http";
      import { context, propagation, trace } from "@opentelemetry/api";
      import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
      import { W3CTraceContextPropagator } from "@opentelemetry/core";
      import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
      import { HostClient } from "@rendezvous/client";
      trace.setGlobalTracerProvider(new BasicTracerProvider());
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      const seen = [];
      const server = createServer((req, res) => {
        seen.push(req.headers.traceparent ?? null);
        res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ wait: { id: "w" } }));
      });
      await new Promise((r) => server.listen(0, "127.0.0.1", r));
      const host = new HostClient({ baseUrl: "http://127.0.0.1:" + server.address().port, token: "hk" });
      const spec = { runId: "r", position: "p", eventType: "t", correlationId: "c" };
      const span = trace.getTracer("pack").startSpan("host");
      await context.with(trace.setSpan(context.active(), span), () => host.registerWait(spec));
      await host.registerWait(spec); // outside any span: none
      span.end();
      server.close();
      console.log(JSON.stringify({ seen, traceId: span.spanContext().traceId, spanId: span.spanContext().spanId }));
    `;
    writeFileSync(join(traced, "program.mjs"), program);
    const r = await run(process.execPath, ["program.mjs"], traced);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { seen: Array<string | null>; traceId: string; spanId: string };
    expect(out.seen).toEqual([`00-${out.traceId}-${out.spanId}-01`, null]);
  }, 60_000);

  for (const major of [22, 24]) {
    it(`runs the same program under Node ${major}`, async () => {
      const node = await nodeBinary(major);
      // the npm registry's `node` package provides the binary; without it this claim is unproven
      if (!node) throw new Error(`node@${major} could not be installed from the npm registry (package "node")`);
      console.log(`node@${major}: ready in ${node.installMs} ms, ${node.du} KB on disk (du)`);
      const result = await hostRun(node.bin, `n${major}`);
      expect(result.node).toMatch(new RegExp(`^v${major}\\.`));
    }, 90_000);
  }

  /** Runs the compiled host program with `node`; asserts what it printed and answers it. */
  async function hostRun(node: string, tag: string): Promise<Record<string, unknown>> {
    const env = cleanEnv({ RDV_URL: url, RDV_HOST_KEY: HOST_KEY, RDV_SECRET: SECRET, RDV_RUN: `${tag}-${Date.now()}` });
    const r = await run(node, [hostJs], app(), env, 30_000);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout.trim()) as Record<string, unknown>;
    expect(result).toMatchObject({
      created: true,
      published: "accepted",
      state: "resolved",
      payload: { amount: 4200 },
      consumedBy: "pack-host",
      again: { first: false, by: "pack-host" },
      verdict: "resolved",
      missing: "not_found",
    });
    expect(result.transport).toBe("http");
    return result;
  }
});
