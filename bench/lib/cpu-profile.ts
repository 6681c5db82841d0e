/**
 * Self time of a V8 CPU profile (`node --cpu-prof`, a .cpuprofile file) over one phase,
 * by category of code (`--profile` of bench:blackbox).
 *
 * The profile samples the main thread's stack every interval; each sample's time (its
 * `timeDeltas` entry) goes to the function on top of the stack. The phase is a window of
 * CLOCK_MONOTONIC µs: V8's profile timestamps and `process.hrtime` of the driver read the
 * same clock on Linux, so the driver's start and end of an event phase select its samples.
 * A native or builtin frame (no script URL) is charged to the nearest caller that has one
 * (a socket write to node:net, a Map lookup to whoever looked up), except JSON.parse and
 * JSON.stringify when they appear as frames (V8 mostly charges them to their caller:
 * bench/breakdown-check.ts); V8's own nodes stay apart: `(garbage collector)`, `(program)`
 * (V8 and native code outside any JS frame) and `(idle)`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** ms of samples in the window, idle included */
  sampledMs: number;
  samples: number;
  /** self time by category, ms, most first */
  categories: Array<{ category: string; ms: number }>;
  /** the functions with the most self time, ms */
  top: Array<{ fn: string; where: string; category: string; ms: number }>;
}

const packageCategory: Array<[RegExp, string]> = [
  [
    /^(fastify|@fastify\/.*|find-my-way|avvio|light-my-request|fast-json-stringify|fast-querystring|secure-json-parse|ajv.*|toad-cache|abstract-logging|process-warning|rfdc|fast-uri|json-schema-ref-resolver)$/,
    "fastify",
  ],
  [/^(redis-parser)$/, "ioredis: reply parsing"],
  [/^(ioredis|denque|cluster-key-slot|standard-as-callback|redis-errors)$/, "ioredis: commands"],
  [/^(bullmq|msgpackr|cron-parser|luxon|node-abort-controller|semver|uuid)$/, "bullmq"],
  [
    /^(pino|pino-.*|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|on-exit-leak-free|atomic-sleep|safe-stable-stringify|real-require)$/,
    "pino (logs)",
  ],
  [/^zod$/, "zod (validation)"],
  [/^@opentelemetry\//, "OpenTelemetry"],
  [/^(prom-client|tdigest|bintrees)$/, "metrics (prom-client)"],
  [/^(tsx|esbuild|get-tsconfig)$/, "tsx (loader)"],
];

/** The category of a frame with a script URL. */
export function categoryOf(url: string, functionName: string): string {
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    const pkg = rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? "?");
    // ioredis's reply handling (DataHandler: the parser's callbacks resolve the commands)
    if (pkg === "ioredis" && (rest.includes("DataHandler.js") || rest.includes("resp")))
      return "ioredis: reply parsing";
    for (const [re, category] of packageCategory) if (re.test(pkg)) return category;
    return `deps: ${pkg}`;
  }
  const ours = /\/packages\/([^/]+)\/(?:src|dist)\/(.*)$/.exec(url);
  if (ours) {
    const [, pkg, file] = ours as unknown as [string, string, string];
    if (pkg === "workers") {
      const base = file.replace(/\.(ts|js)$/, "");
      return `rendezvous: ${base === "matcher" || base === "dispatcher" || base === "scheduler" ? base : `workers/${base}`}`;
    }
    if (pkg === "engine" && file.startsWith("streams/")) return "rendezvous: engine/streams";
    return `rendezvous: ${pkg}`;
  }
  if (url.startsWith("node:")) {
    const m = url.slice(5);
    if (/^(_http_|http$|internal\/http)/.test(m)) return "node: http";
    if (/^(net$|stream$|internal\/streams|internal\/stream_base|dns|internal\/net)/.test(m))
      return "node: net & streams";
    if (/timers/.test(m)) return "node: timers";
    if (/crypto/.test(m)) return "node: crypto";
    if (/^(events$|internal\/process\/task_queues|internal\/async_hooks|internal\/process\/promises)/.test(m)) {
      return "node: events & microtasks";
    }
    if (/buffer/.test(m)) return "node: buffer";
    return "node: other";
  }
  if (/\/bench\//.test(url)) return "bench";
  return url ? "other" : `native ${functionName}`;
}

/** The .cpuprofile `dir` holds for process `pid` (written when it exited), or undefined. */
export function profileFile(dir: string, pid: number): string | undefined {
  const f = readdirSync(dir).find((n) => n.endsWith(".cpuprofile") && n.split(".").includes(String(pid)));
  return f && join(dir, f);
}

/** Self time by category of the samples between `fromUs` and `toUs` (CLOCK_MONOTONIC µs). */
export function summarizeProfile(file: string, fromUs: number, toUs: number, topN = 15): ProfileSummary {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const special = new Map([
    ["(garbage collector)", "GC"],
    ["(program)", "V8 / native (program)"],
    ["(idle)", "idle"],
    ["(root)", "V8 / native (program)"],
  ]);
  // each node's category: its own URL's, a native frame's nearest caller's with a URL
  const cache = new Map<number, string>();
  const category = (id: number): string => {
    const hit = cache.get(id);
    if (hit) return hit;
    const n = byId.get(id) as ProfileNode;
    const { url, functionName } = n.callFrame;
    let c: string;
    if (special.has(functionName)) c = special.get(functionName) as string;
    else if (!url && (functionName === "parse" || functionName === "stringify")) c = "JSON";
    else if (url) c = categoryOf(url, functionName);
    else {
      const up = parent.get(id);
      c =
        up === undefined || byId.get(up)?.callFrame.functionName === "(root)" ? "V8 / native (program)" : category(up);
    }
    cache.set(id, c);
    return c;
  };
  const byCategory = new Map<string, number>();
  const byNode = new Map<number, number>();
  let t = p.startTime;
  let sampled = 0;
  let count = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    // a sample stands for the time until the next one
    const dt = p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0;
    const id = p.samples[i] as number;
    byCategory.set(category(id), (byCategory.get(category(id)) ?? 0) + dt);
    byNode.set(id, (byNode.get(id) ?? 0) + dt);
    sampled += dt;
    count++;
  }
  // the same function may have many nodes (one per call path): sum them by name and place
  const byFn = new Map<string, { fn: string; where: string; category: string; us: number }>();
  for (const [id, us] of byNode) {
    const n = byId.get(id) as ProfileNode;
    const where = n.callFrame.url
      ? `${n.callFrame.url.replace(/^.*\/(node_modules|packages)\//, "")}:${n.callFrame.lineNumber + 1}`
      : "";
    const key = `${n.callFrame.functionName}\u0000${where}`;
    const f = byFn.get(key) ?? { fn: n.callFrame.functionName || "(anonymous)", where, category: category(id), us: 0 };
    f.us += us;
    byFn.set(key, f);
  }
  return {
    sampledMs: sampled / 1000,
    samples: count,
    categories: [...byCategory].map(([c, us]) => ({ category: c, ms: us / 1000 })).sort((a, b) => b.ms - a.ms),
    top: [...byFn.values()]
      .filter((f) => f.category !== "idle")
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map(({ us, ...f }) => ({ ...f, ms: us / 1000 })),
  };
}
