/**
 * The Grafana dashboard (deploy/grafana/dashboards/rendezvous.json) and the Prometheus alert
 * rules (deploy/prometheus/alerts.yml) query only what rendezvous exposes: every metric name in
 * their PromQL (`rendezvous_*`, `process_*`, `nodejs_*`; a histogram's `_bucket`, `_sum` and
 * `_count` series count as the histogram) is declared in the `/metrics` of a real
 * `rendezvous start` after a small workload (an event refused, a wait registered, an event
 * published and matched, the continuation dispatched, claimed and acknowledged). Names of the
 * exporters in the compose profile (`up`, `probe_*`, `redis_*`) are not rendezvous's and are not
 * checked here. Also: the dashboard's panels use the provisioned data source, and every alert is
 * explained in docs/operations.md.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bearer, client, producerKey, request, type Started, settled, startServer, until } from "./e2e-helpers.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, "utf8");

interface Panel {
  title?: string;
  type: string;
  datasource?: { type?: string; uid?: string };
  targets?: Array<{ expr?: string; datasource?: { uid?: string } }>;
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; query: string | { query?: string } }> };
}
interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const dashboard = JSON.parse(read("deploy/grafana/dashboards/rendezvous.json")) as Dashboard;
const alerts = parse(read("deploy/prometheus/alerts.yml")) as { groups: Array<{ name: string; rules: Rule[] }> };
const rules = alerts.groups.flatMap((g) => g.rules);
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== "row");

/** Every PromQL expression of the dashboard (panels, variables) and of the alert rules, with where it is. */
const expressions: Array<{ where: string; expr: string }> = [
  ...panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr ?? "" }))),
  ...dashboard.templating.list.map((v) => ({
    where: `variable $${v.name}`,
    expr: typeof v.query === "string" ? v.query : (v.query.query ?? ""),
  })),
  ...rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
];

/** The metric names an expression reads: identifiers of rendezvous and of Node's defaults, outside string literals. */
function metricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  return [...code.matchAll(/\b(?:rendezvous|process|nodejs)_\w+/g)].map((m) => m[0]);
}

/** name → type, from the `# TYPE` lines of an exposition. */
function declared(exposition: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1] as string, m[2] as string);
  return types;
}

/** Whether a series name is exposed: declared itself, or a `_bucket`/`_sum`/`_count` of a declared histogram or summary. */
function exposed(name: string, types: Map<string, string>): boolean {
  if (types.has(name)) return true;
  const m = name.match(/^(.+)_(bucket|sum|count)$/);
  const type = m ? types.get(m[1] as string) : undefined;
  return type === "histogram" || (type === "summary" && m?.[2] !== "bucket");
}

describe("the dashboard and the alert rules, as files", () => {
  it("queries something: every row of the issue has panels, every alert an expression", () => {
    expect(panels.length).toBeGreaterThanOrEqual(20);
    const rows = dashboard.panels.filter((p) => p.type === "row").map((p) => p.title);
    for (const row of ["Ingest", "Resolution", "Continuations", "Processes"]) expect(rows).toContain(row);
    expect(expressions.every((e) => e.expr.trim() !== "")).toBe(true);
    expect(metricNames('sum(rate(rendezvous_x_bucket{q="nodejs_y"}[5m])) / process_z')).toEqual([
      "rendezvous_x_bucket",
      "process_z",
    ]);
  });

  it("every panel reads the provisioned Prometheus data source", () => {
    const sources = parse(read("deploy/grafana/provisioning/datasources/prometheus.yml")) as {
      datasources: Array<{ uid: string; type: string }>;
    };
    const uid = sources.datasources.find((d) => d.type === "prometheus")?.uid;
    expect(uid).toBeTruthy();
    for (const p of panels) {
      expect(p.datasource?.uid, `panel "${p.title}"`).toBe(uid);
      for (const t of p.targets ?? []) expect(t.datasource?.uid, `panel "${p.title}"`).toBe(uid);
    }
  });

  it("every expression has balanced brackets and quotes", () => {
    for (const { where, expr } of expressions) {
      const code = expr.replace(/"(?:[^"\\]|\\.)*"/g, "");
      expect(code, `${where}: unbalanced quote`).not.toContain('"');
      const stack: string[] = [];
      for (const c of code) {
        if ("([{".includes(c)) stack.push(c);
        else if (")]}".includes(c)) expect(stack.pop(), `${where}: ${expr}`).toBe("([{"[")]}".indexOf(c)]);
      }
      expect(stack, `${where}: ${expr}`).toEqual([]);
    }
  });

  it("every alert has a severity and a summary, and is explained in docs/operations.md", () => {
    const ops = read("docs/operations.md");
    const start = ops.indexOf("## Dashboards and alerts");
    expect(start).toBeGreaterThanOrEqual(0);
    const section = ops.slice(start).split(/^## (?!Dashboards and alerts)/m)[0] as string;
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    for (const r of rules) {
      expect(["warning", "critical"], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(section, r.alert).toContain(`\`${r.alert}\``);
    }
  });
});

const HOST_KEY = "hk_acme_dash";
const PRODUCER_KEY = "pk_billing_dash";
const CONFIG = {
  partitions: 4,
  tenants: { acme: { hostKeys: [HOST_KEY], producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["*"] } } } },
};

describe("every metric the dashboard and the alerts query is in /metrics", () => {
  let server: Started;
  beforeAll(async () => {
    server = await startServer({ config: CONFIG });
  }, 40_000);
  afterAll(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
  });

  it("after a small workload, under `rendezvous start`", async () => {
    const host = client(server.url, bearer(HOST_KEY));
    const producer = client(server.url, producerKey("acme/billing", PRODUCER_KEY));
    // refused: not valid JSON
    expect(
      (await producer.call("POST", "/v1/events", { raw: "{", headers: { "content-type": "application/json" } })).status,
    ).toBe(400);
    const reg = await host.post("/v1/waits", {
      runId: "run-1",
      position: "p",
      eventType: "job.done",
      correlationId: "c-1",
    });
    expect(reg.status).toBe(201);
    const pub = await producer.post("/v1/events", { id: "evt-1", type: "job.done", correlationId: "c-1", payload: {} });
    expect(pub.status).toBe(202);
    expect((await settled(host, reg.body.wait.id)).state).toBe("resolved");
    const claimed = await until(async () => {
      const r = await host.post("/v1/continuations/claim", { worker: "dash", max: 1, waitMs: 1000 });
      return r.status === 200 && r.body.continuations.length > 0 ? r.body.continuations[0] : undefined;
    });
    expect((await host.post(`/v1/continuations/${claimed.leaseId}/ack`)).status).toBe(200);

    const metrics = await request(server.url, "GET", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^rendezvous_continuations_dispatched_total\{channel="queue"\} [1-9]/m);
    const types = declared(metrics.text);
    const used = new Map<string, Set<string>>();
    for (const { where, expr } of expressions)
      for (const name of metricNames(expr)) used.set(name, (used.get(name) ?? new Set()).add(where));
    expect(used.size).toBeGreaterThan(15);
    const missing = [...used]
      .filter(([name]) => !exposed(name, types))
      .map(([name, at]) => `${name} (${[...at].join("; ")})`);
    expect(missing, `queried by the dashboard or the alerts but not in /metrics:\n  ${missing.join("\n  ")}`).toEqual(
      [],
    );
  });
});
