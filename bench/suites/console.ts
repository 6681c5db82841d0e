/**
 * The console at scale: N waits (default 100,000) registered into a private
 * redis-server across three tenants (a few percent of them cancelled, so both indexes
 * hold waits), then the console's JSON endpoints answered by the real app
 * (`buildApp`, fastify `inject`), each timed by the `Server-Timing: app;dur=` header
 * the console sets (request in → reply serialized). The waits page walks the
 * per-partition indexes with a cursor; nothing loads the whole set.
 */
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { pino } from "pino";
import { buildApp } from "../../packages/http/src/app.js";
import { parseArgs } from "../lib/args.js";
import { runPool } from "../lib/pool.js";
import { startBenchRedis } from "../lib/redis.js";
import { correlationIds, machine, runId } from "../lib/setup.js";
import { summarize } from "../lib/stats.js";
import { printTable, progress } from "../lib/table.js";

const TARGET_MS = 300;
const ADMIN = "adm_bench_console";
const TENANTS = ["acme", "globex", "initech"];

async function seed(res: Resources, count: number): Promise<{ sample: { runId: string; correlationId: string } }> {
  const ids = correlationIds(count);
  const runs = Array.from({ length: Math.ceil(count / 4) }, () => runId());
  let done = 0;
  const t0 = performance.now();
  const tick = setInterval(() => progress(`  registered ${done}/${count}`), 5000);
  try {
    await runPool(count, 500, async (i) => {
      const { wait } = await res.store.register(TENANTS[i % TENANTS.length] as string, {
        runId: runs[Math.floor(i / 4)] as string,
        position: `step-${i % 4}`,
        eventType: i % 2 === 0 ? "order.paid" : "invoice.settled",
        correlationId: ids[i] as string,
        timeoutMs: 3_600_000,
      });
      if (i % 25 === 0) await res.store.cancel(null, wait.id);
      done++;
    });
  } finally {
    clearInterval(tick);
  }
  progress(`  registered ${count} waits in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { sample: { runId: runs[7] as string, correlationId: ids[30] as string } };
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const count = args.number("waits", 100_000);
  const samples = args.number("samples", 30);
  const partitions = args.number("partitions", 16);
  const server = await startBenchRedis(20 * 60_000);
  const res = createResources({
    redisUrl: server.url,
    prefix: "cb",
    config: parseConfig({
      partitions,
      adminToken: ADMIN,
      tenants: Object.fromEntries(TENANTS.map((t) => [t, { hostKeys: [`hk_${t}_bench`] }])),
    }),
    logger: pino({ level: "warn" }, pino.destination(2)),
  });
  const app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [] });
  try {
    progress(`registering ${count} waits over ${TENANTS.length} tenants, ${partitions} partitions`);
    const { sample } = await seed(res, count);
    const cases: Array<[string, string, string]> = [
      ["waits, first page (admin, all tenants)", "/console/api/waits?limit=50", ADMIN],
      ["waits, first page (one tenant)", "/console/api/waits?tenant=acme&limit=50", ADMIN],
      ["waits, first page (host key)", "/console/api/waits?limit=50", "hk_globex_bench"],
      ["waits, state=waiting", "/console/api/waits?tenant=acme&state=waiting&limit=50", ADMIN],
      ["waits, state=cancelled (4 %)", "/console/api/waits?tenant=acme&state=cancelled&limit=50", ADMIN],
      ["waits, event type", "/console/api/waits?tenant=acme&eventType=order.paid&limit=50", ADMIN],
      [
        "waits, type + correlation id",
        `/console/api/waits?tenant=acme&eventType=order.paid&correlationId=${sample.correlationId}`,
        ADMIN,
      ],
      ["waits, run id", `/console/api/waits?tenant=${TENANTS[7 % 3]}&runId=${sample.runId}`, ADMIN],
      ["overview (counts, lag, rates)", "/console/api/overview", ADMIN],
    ];
    const rows: Array<Array<string | number>> = [];
    let firstPage: ReturnType<typeof summarize> | undefined;
    for (const [label, url, token] of cases) {
      const times: number[] = [];
      let found = 0;
      for (let i = 0; i < samples + 3; i++) {
        const r = await app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}` } });
        if (r.statusCode !== 200) throw new Error(`${url} answered ${r.statusCode}: ${r.body}`);
        const dur = /app;dur=([\d.]+)/.exec(String(r.headers["server-timing"] ?? ""));
        if (!dur) throw new Error(`${url}: no Server-Timing header`);
        if (i >= 3) times.push(Number(dur[1])); // 3 warm-up requests
        found = (JSON.parse(r.body) as { waits?: unknown[] }).waits?.length ?? 0;
      }
      const s = summarize(times);
      if (!firstPage) firstPage = s;
      rows.push([label, url.includes("/waits") ? found : "—", s.p50, s.p90, s.max]);
    }
    console.log(`\nconsole bench: ${count} waits, ${partitions} partitions, ${samples} samples each; ${machine()}`);
    printTable("server time (Server-Timing app;dur, ms)", ["request", "rows", "p50", "p90", "max"], rows);
    const ok = (firstPage?.max ?? Number.POSITIVE_INFINITY) < TARGET_MS;
    console.log(
      `\nfirst waits page: p50 ${firstPage?.p50.toFixed(2)} ms, max ${firstPage?.max.toFixed(2)} ms — target < ${TARGET_MS} ms: ${ok ? "met" : "MISSED"}`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    await app.close();
    await res.close();
    await server.stop();
  }
}
