/**
 * The deployment files, checked without a Docker engine: docker-compose.yml parses,
 * its services are the documented shape (Redis with AOF and noeviction, api with a
 * published port, two matchers, scheduler, dispatcher, healthchecks on /readyz, one
 * image from one Dockerfile, an optional `cluster` profile, an optional `observability`
 * profile whose Prometheus scrapes every role and whose Grafana loads the dashboard), every
 * command a service runs is a command of the real CLI, and every variable it sets is one the
 * CLI reads.
 * When the `docker-compose` binary is installed, `docker-compose config` must accept
 * the file too.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
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
  volumes?: string[];
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

  it("profile observability: Prometheus scrapes and probes every role, Grafana loads the dashboard, mounts exist", () => {
    const obs = services.filter(([, s]) => inProfile(s, "observability"));
    const byImage = (image: string) => obs.find(([, s]) => s.image?.startsWith(`${image}:`));
    const [promName, prom] = byImage("prom/prometheus") as [string, Service];
    const [, grafana] = byImage("grafana/grafana") as [string, Service];
    const [blackboxName] = byImage("prom/blackbox-exporter") as [string, Service];
    const [exporterName, exporter] = byImage("oliver006/redis_exporter") as [string, Service];
    // every host path mounted exists; the mount targets, by host path
    const mounts = new Map<string, string>();
    for (const [name, s] of obs)
      for (const v of s.volumes ?? []) {
        const [from, to] = v.split(":") as [string, string];
        if (!from.startsWith("./")) continue;
        expect(existsSync(`${root}${from.slice(2)}`), `${name}: ${from}`).toBe(true);
        mounts.set(from, to);
      }

    const promDir = mounts.get("./deploy/prometheus") as string;
    expect(commandOf(prom)).toContain(`--config.file=${promDir}/prometheus.yml`);
    type Scrape = {
      job_name: string;
      static_configs?: Array<{ targets: string[] }>;
      dns_sd_configs?: Array<{ names: string[]; port: number }>;
      relabel_configs?: Array<{ target_label?: string; replacement?: string }>;
    };
    const config = parse(readFileSync(`${root}deploy/prometheus/prometheus.yml`, "utf8")) as {
      rule_files: string[];
      scrape_configs: Scrape[];
    };
    for (const f of config.rule_files) {
      expect(f.startsWith(`${promDir}/`), f).toBe(true);
      expect(existsSync(`${root}deploy/prometheus/${f.slice(promDir.length + 1)}`), f).toBe(true);
    }
    const job = (name: string) => config.scrape_configs.find((j) => j.job_name === name) as Scrape;
    const port = (s: Service) => s.environment?.PORT;
    // the default stack by name (a stopped container is up == 0), the cluster profile's roles by DNS
    const base = roles.filter(([, s]) => inProfile(s)).map(([n, s]) => `${n}:${port(s)}`);
    const scraped = job("rendezvous");
    expect(scraped.static_configs?.flatMap((c) => c.targets).sort()).toEqual(base.sort());
    const clusterRoles = roles.filter(([, s]) => inProfile(s, "cluster"));
    expect(scraped.dns_sd_configs?.flatMap((c) => c.names).sort()).toEqual(clusterRoles.map(([n]) => n).sort());
    for (const c of scraped.dns_sd_configs ?? []) expect(String(c.port)).toBe(port(clusterRoles[0]?.[1] as Service));
    const probed = job("rendezvous-readyz");
    expect(probed.static_configs?.flatMap((c) => c.targets).sort()).toEqual(
      base.map((t) => `http://${t}/readyz`).sort(),
    );
    expect(probed.relabel_configs?.find((r) => r.target_label === "__address__")?.replacement).toBe(
      `${blackboxName}:9115`,
    );
    expect(job("redis").static_configs?.[0]?.targets).toEqual([`${exporterName}:9121`]);
    expect(new URL(exporter.environment?.REDIS_ADDR ?? "").hostname).toBe("redis");

    // Grafana: the data source is this Prometheus, the dashboards' provider reads the mounted folder
    expect(mounts.get("./deploy/grafana/provisioning")).toBe("/etc/grafana/provisioning");
    const sources = parse(readFileSync(`${root}deploy/grafana/provisioning/datasources/prometheus.yml`, "utf8")) as {
      datasources: Array<{ url: string }>;
    };
    expect(sources.datasources.map((d) => new URL(d.url).host)).toEqual([`${promName}:9090`]);
    const providers = parse(readFileSync(`${root}deploy/grafana/provisioning/dashboards/rendezvous.yml`, "utf8")) as {
      providers: Array<{ options: { path: string } }>;
    };
    expect(providers.providers.map((p) => p.options.path)).toEqual([mounts.get("./deploy/grafana/dashboards")]);
    expect(grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      `${mounts.get("./deploy/grafana/dashboards")}/rendezvous.json`,
    );
  });

  // .ci/run installs docker-compose (Debian's package) when it is missing; no Docker engine is needed
  it("docker-compose config accepts the file, with and without the cluster and observability profiles", () => {
    for (const args of [
      ["config", "-q"],
      ["--profile", "cluster", "config", "-q"],
      ["--profile", "observability", "config", "-q"],
      ["--profile", "cluster", "--profile", "observability", "config", "-q"],
    ]) {
      const r = spawnSync("docker-compose", args, { cwd: root, encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
    }
  });
});
