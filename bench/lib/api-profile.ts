/**
 * Reads a V8 `.cpuprofile` (node --cpu-prof): self time by frame (function, file, line)
 * and by area (Node's HTTP, fastify, ioredis, the product's packages, GC, …), as shares
 * of the sampled time, the idle time left out.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  /** µs of the monotonic clock (CLOCK_MONOTONIC on Linux, as `process.hrtime` of any process) */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface FrameShare {
  frame: string;
  area: string;
  /** share of the busy (non-idle) time */
  share: number;
}

/** Where a frame's code lives, coarsely. */
export function areaOf(url: string, name: string): string {
  if (name === "(garbage collector)") return "gc";
  if (name === "(program)") return "V8/native (program)";
  if (url.startsWith("node:_http") || url.startsWith("node:http")) return "node http";
  if (url.startsWith("node:net") || url.startsWith("node:internal/stream") || url.includes("stream_base"))
    return "node net/streams";
  if (url.startsWith("node:")) return "node other";
  for (const pkg of ["fastify", "find-my-way", "avvio", "light-my-request", "@fastify", "fast-json-stringify"]) {
    if (url.includes(`/node_modules/${pkg}/`)) return "fastify";
  }
  if (url.includes("/node_modules/ioredis/") || url.includes("/node_modules/redis-parser/")) return "ioredis";
  if (url.includes("/node_modules/pino")) return "pino";
  if (url.includes("/node_modules/prom-client/")) return "prom-client";
  if (url.includes("/node_modules/zod/")) return "zod";
  if (url.includes("/node_modules/")) return "other modules";
  const pkg = /\/packages\/([^/]+)\//.exec(url);
  if (pkg) return `rendezvous ${pkg[1]}`;
  return url === "" ? "native" : "other";
}

/**
 * Self time per frame and per area of one profile, busy time only; with `window`, only the
 * samples taken in it (µs of the monotonic clock: `process.hrtime.bigint() / 1000n` of the driver).
 */
export function summarizeProfile(
  file: string,
  window?: { fromUs: number; toUs: number },
): { frames: FrameShare[]; areas: Array<[string, number]>; samples: number } {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = profile.startTime;
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    const id = profile.samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + delta);
    samples++;
  }
  const frames = new Map<string, { area: string; us: number }>();
  let busy = 0;
  for (const [id, us] of self) {
    const n = byId.get(id);
    if (!n || n.callFrame.functionName === "(idle)") continue;
    busy += us;
    const { functionName, url, lineNumber } = n.callFrame;
    const where = url ? `${url.replace(/^.*\/(node_modules|packages)\//, "$1/")}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"} ${where}`.trim();
    const f = frames.get(key) ?? { area: areaOf(url, functionName), us: 0 };
    f.us += us;
    frames.set(key, f);
  }
  const areas = new Map<string, number>();
  for (const f of frames.values()) areas.set(f.area, (areas.get(f.area) ?? 0) + f.us);
  return {
    frames: [...frames.entries()]
      .map(([frame, f]) => ({ frame, area: f.area, share: f.us / busy }))
      .sort((a, b) => b.share - a.share),
    areas: [...areas.entries()].map(([a, us]): [string, number] => [a, us / busy]).sort((a, b) => b[1] - a[1]),
    samples,
  };
}
