/**
 * The deployment files, checked without a Docker engine: docker-compose.yml parses,
 * its services are the documented shape (Redis with AOF and noeviction, api with a
 * published port, two matchers, scheduler, dispatcher, healthchecks on /readyz, one
 * image from one Dockerfile, an optional `cluster` profile), every command a service
 * runs is a command of the real CLI, and every variable it sets is one the CLI reads.
 * When the `docker-compose` binary is installed, `docker-compose config` must accept
 * the file too.
 */
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseRedisUrl } from "@rendezvous/engine";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Env } from "../src/env.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = fileURLToPath(new URL("../bin/rendezvous.js", import.meta.url));

interface Service {
  image?: string;
  build?: { context?: string; dockerfile?: string } | string;
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string>;
  ports?: string[];
  profiles?: string[];
  healthcheck?: { test?: string[] | string };
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
}

const compose = parse(readFileSync(`${root}docker-compose.yml`, "utf8"), { merge: true }) as {
  services: Record<string, Service>;
};
const dockerfile = readFileSync(`${root}Dockerfile`, "utf8");
const services = Object.entries(compose.services);
const roles = services.filter(([, s]) => s.image === "rendezvous:local" || s.build !== undefined);
const inProfile = (s: Service, profile?: string) =>
  profile === undefined ? (s.profiles ?? []).length === 0 : (s.profiles ?? []).includes(profile);
const commandOf = (s: Service) => (Array.isArray(s.command) ? s.command : String(s.command ?? "").split(" "));
const replicas = (list: Array<[string, Service]>, cmd: string) =>
  list.filter(([, s]) => commandOf(s)[0] === cmd).reduce((n, [, s]) => n + (s.deploy?.replicas ?? 1), 0);

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, RENDEZVOUS_FROM_SOURCE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d.toString();
    });
    child.stderr.on("data", (d) => {
      out += d.toString();
    });
    child.once("exit", (code) => resolve({ code, out }));
  });
}

describe("docker-compose.yml and Dockerfile", () => {
  it("default stack: Redis with AOF and noeviction, api published, two matchers, scheduler, dispatcher", () => {
    const base = services.filter(([, s]) => inProfile(s));
    const redis = compose.services.redis as Service;
    const redisCmd = commandOf(redis).join(" ");
    expect(redisCmd).toMatch(/--appendonly yes/);
    expect(redisCmd).toMatch(/--maxmemory-policy noeviction/);
    const api = base.find(([, s]) => commandOf(s)[0] === "api")?.[1];
    expect(api?.ports?.length).toBeGreaterThan(0);
    expect(replicas(base, "matcher")).toBeGreaterThanOrEqual(2);
    expect(replicas(base, "scheduler")).toBeGreaterThanOrEqual(1);
    expect(replicas(base, "dispatcher")).toBeGreaterThanOrEqual(1);
  });

  it("every role: one image from the one Dockerfile, HOST=0.0.0.0, a /readyz healthcheck, variables the CLI reads", () => {
    expect(roles.length).toBeGreaterThanOrEqual(5);
    const envKeys = new Set(Object.keys(Env.shape));
    for (const [name, s] of roles) {
      expect(s.image, name).toBe("rendezvous:local");
      expect(typeof s.build === "object" ? s.build.dockerfile : s.build, name).toMatch(/Dockerfile$/);
      expect(s.environment?.HOST, name).toBe("0.0.0.0");
      expect(String(s.healthcheck?.test), name).toContain("/readyz");
      for (const key of Object.keys(s.environment ?? {})) expect(envKeys, `${name}: ${key}`).toContain(key);
      expect(Env.safeParse(s.environment).success, name).toBe(true);
      const url = s.environment?.REDIS_URL ?? "";
      const target = parseRedisUrl(url);
      const hosts = target.kind === "cluster" ? target.nodes.map((n) => n.host) : [new URL(url).hostname];
      for (const host of hosts) expect(Object.keys(compose.services), `${name}: ${host}`).toContain(host);
    }
  });

  it("profile cluster: three cluster-enabled masters, joined once, and roles on redis+cluster://", () => {
    const cluster = services.filter(([, s]) => inProfile(s, "cluster"));
    const nodes = cluster.filter(([, s]) => commandOf(s).join(" ").includes("--cluster-enabled yes"));
    expect(nodes).toHaveLength(3);
    for (const [, s] of nodes) expect(commandOf(s).join(" ")).toMatch(/--maxmemory-policy noeviction/);
    expect(JSON.stringify(cluster.map(([, s]) => s.entrypoint))).toContain("--cluster create");
    const clusterRoles = cluster.filter(([n]) => roles.some(([r]) => r === n));
    expect(replicas(clusterRoles, "matcher")).toBeGreaterThanOrEqual(2);
    for (const [name, s] of clusterRoles) {
      const target = parseRedisUrl(s.environment?.REDIS_URL ?? "");
      expect(target.kind, name).toBe("cluster");
      expect(target.kind === "cluster" ? target.nodes.length : 0, name).toBe(3);
    }
  });

  it("the Dockerfile: multi-stage build (npm ci + build), runtime with production dependencies, non-root", () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).toHaveLength(2);
    const [build, runtime] = stages as [string, string];
    expect(build).toMatch(/RUN npm ci\b/);
    expect(build).toMatch(/RUN npm run build/);
    expect(runtime).toMatch(/npm ci --omit=dev/);
    expect(runtime).toMatch(/HOST=0\.0\.0\.0/);
    expect(runtime).toMatch(/^USER (?!root)\S+/m);
    // the launchers give the API a 64 MB young generation (docs/operations.md, "Node.js flags")
    expect(runtime).toMatch(
      /ENTRYPOINT \["node", "--max-semi-space-size=64", "packages\/server\/bin\/rendezvous\.js"\]/,
    );
  });

  it("every launcher runs node with the API's young generation: the CLI's shebang, npm start, the Dockerfile", () => {
    const flag = "--max-semi-space-size=64";
    expect(readFileSync(bin, "utf8").split("\n")[0]).toBe(`#!/usr/bin/env -S node ${flag}`);
    const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(`node ${flag} packages/server/bin/rendezvous.js start`);
    expect(readFileSync(`${root}Dockerfile`, "utf8")).toContain(`ENTRYPOINT ["node", "${flag}", `);
    // and the shebang runs: the CLI answers through it
    const r = spawnSync(bin, ["--help"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("Usage: rendezvous");
  });

  it("every command a service runs exists in the CLI (`rendezvous <cmd> --help` exits 0)", async () => {
    const commands = [...new Set(roles.map(([, s]) => commandOf(s)[0] as string))];
    expect(commands.sort()).toEqual(["api", "dispatcher", "matcher", "scheduler"]);
    const helps = await Promise.all(commands.map((c) => cli([c, "--help"])));
    helps.forEach((h, i) => {
      expect(h.code, `${commands[i]} --help:\n${h.out}`).toBe(0);
      expect(h.out).toContain("--redis-url");
    });
    expect((await cli(["no-such-command"])).code).not.toBe(0);
  });

  // .ci/run installs docker-compose (Debian's package) when it is missing; no Docker engine is needed
  it("docker-compose config accepts the file, with and without the cluster profile", () => {
    for (const args of [
      ["config", "-q"],
      ["--profile", "cluster", "config", "-q"],
    ]) {
      const r = spawnSync("docker-compose", args, { cwd: root, encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
    }
  });
});
